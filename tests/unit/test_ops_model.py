"""The pure models of the operations commands pinned to the letter (their messages are what an
operator reads at 3 a.m.): slots' verdicts and sizes, DLQ replay targets, the waves' topic
prefixes. Written against the survivors of their first mutation run."""

from __future__ import annotations

import pytest

from hephaestus.dlq.model import ERROR_HEADER, replay_of
from hephaestus.fleet.slots import DEFAULT_IDLE_MAX_RETAINED, DEFAULT_MAX_RETAINED, Limits, Slot, judge, size
from hephaestus.kafka import Record
from hephaestus.reconciler.waves import topic_prefix
from hephaestus.settings import PolicySettings, of

MiB = 1 << 20
LIMITS = Limits(100 * MiB, 10 * MiB)


def slot(retained: int | None, active: bool = True, wal: str | None = "reserved") -> Slot:
    return Slot("bob", "s", "pgoutput", active, retained, 0, wal)


@pytest.mark.parametrize(
    ("s", "owners", "verdict", "reason"),
    [
        (
            slot(5, wal="lost"),
            ["c/a"],
            "lost",
            "PostgreSQL removed WAL this slot needs: its connector cannot resume (recreate it with a new snapshot)",
        ),
        (slot(101 * MiB), ["c/a"], "over_limit", "retains 101.0 MiB (limit 100.0 MiB)"),
        (slot(100 * MiB), ["c/a"], "ok", ""),  # at the limit is not over it
        (slot(11 * MiB), [], "orphan", "no connector could use it and it retains 11.0 MiB"),
        (slot(10 * MiB), [], "ok", ""),
        (
            slot(11 * MiB, active=False),
            ["c/a", "d/b"],
            "inactive",
            "nothing reads it and it retains 11.0 MiB (limit when idle 10.0 MiB)",
        ),
        (slot(10 * MiB, active=False), ["c/a"], "ok", ""),
        (slot(None, active=False), [], "ok", ""),
    ],
)
def test_a_slot_is_judged_with_a_reason_an_operator_can_act_on(
    s: Slot, owners: list[str], verdict: str, reason: str
) -> None:
    judged = judge(s, owners, LIMITS)
    assert (judged.slot, judged.owner, judged.verdict, judged.reason) == (s, ", ".join(owners) or None, verdict, reason)


def test_limits_come_from_the_policy_or_their_defaults() -> None:
    assert Limits.of(PolicySettings()) == Limits(DEFAULT_MAX_RETAINED, DEFAULT_IDLE_MAX_RETAINED)
    assert Limits(DEFAULT_MAX_RETAINED, DEFAULT_IDLE_MAX_RETAINED) == Limits(1 << 30, 64 * MiB)
    chosen = of(PolicySettings, {"slot_max_retained_bytes": 7, "slot_idle_max_retained_bytes": 3})
    assert Limits.of(chosen) == Limits(7, 3)


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1025, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (MiB - 1, "1024.0 KiB"),
        (MiB, "1.0 MiB"),
        (1 << 30, "1.0 GiB"),
        (1 << 40, "1.0 TiB"),
        (1 << 50, "1024.0 TiB"),
    ],
)
def test_sizes_read_as_people_read_them(n: int, shown: str) -> None:
    assert size(n) == shown


def record(*headers: tuple[str, bytes | None]) -> Record:
    return Record("dlq", 0, 7, None, b"k", b"v", headers)


def test_a_dlq_record_goes_back_where_its_headers_say() -> None:
    r = record((ERROR_HEADER + "topic", b"orders"), (ERROR_HEADER + "partition", b"3"), ("trace", b"x"))
    assert (replay_of(r).topic, replay_of(r).partition, replay_of(r).problem) == ("orders", 3, "")


@pytest.mark.parametrize(
    "headers",
    [
        (),
        ((ERROR_HEADER + "topic", b"orders"),),
        ((ERROR_HEADER + "partition", b"3"),),
        ((ERROR_HEADER + "topic", b""), (ERROR_HEADER + "partition", b"3")),
        ((ERROR_HEADER + "topic", b"orders"), (ERROR_HEADER + "partition", b"x")),
        (("topic", b"orders"), ("partition", b"3")),  # not Connect's headers
    ],
)
def test_a_dlq_record_without_both_headers_cannot_go_back(headers: tuple[tuple[str, bytes], ...]) -> None:
    found = replay_of(record(*headers))
    assert (found.topic, found.partition) == ("", -1)
    assert found.problem == (
        "no __connect.errors.topic/partition header: the sink's "
        "errors.deadletterqueue.context.headers.enable was off when it was parked"
    )


@pytest.mark.parametrize(
    ("config", "prefix"),
    [
        ({"topic.prefix": "bob"}, "bob."),
        ({}, ""),
        (
            {
                "topic.prefix": "bob",
                "transforms": "unwrap,route",
                "transforms.route.replacement": "local.manabie.$1.$2.$3",
            },
            "local.manabie.bob.",
        ),
        ({"topic.prefix": "bob", "transforms": "unwrap", "transforms.route.replacement": "x.$1"}, "bob."),
        ({"topic.prefix": "bob", "transforms": "route", "transforms.route.replacement": "fixed_topic"}, "bob."),
    ],
)
def test_a_sources_topics_start_with_its_routed_prefix(config: dict[str, str], prefix: str) -> None:
    assert topic_prefix(config) == prefix
