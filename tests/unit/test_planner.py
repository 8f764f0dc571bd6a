"""Issue 44, read once and plan purely: the planner builds a cluster's plan from a `Seen` alone
(no client, no database, no Kafka exist here: a request would fail the test), and names what
the reader must read besides the listing (`needs`). The run's behaviour over doubles is
tests/unit/test_core_run.py's; that the module cannot import an edge is pyproject's contract."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from hephaestus.fleet.model import Desired, Live
from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler import planner
from hephaestus.reconciler.outcome import Basis
from hephaestus.reconciler.plan import Plan, Policy, Step, Unhealthy
from hephaestus.reconciler.planner import KafkaTopics, Publications, Seen, Wanted

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
NOTHING_PUBLISHED = Publications()


def sink(topics: str, **more: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": topics, "connection.url": "jdbc:postgresql://db/auth", **more}


def wanted(*desired: Desired, dry_run: bool = False) -> Wanted:
    return Wanted({d.name: d for d in desired}, frozenset(), (), False, dry_run, 60.0)


def seen(
    live: Mapping[str, Live],
    health: tuple[Unhealthy, ...] = (),
    publications: Publications = NOTHING_PUBLISHED,
    topics: KafkaTopics | None = None,
) -> Seen:
    basis = Basis("http://connect:8083", "kafka-1", live, frozenset(live))
    return Seen(
        cluster="c",
        url="http://connect:8083",
        shared=False,
        every=live,
        basis=basis,
        health=health,
        publications=publications,
        topics=topics,
    )


def test_a_plan_is_built_from_what_was_read_alone() -> None:
    live = {"a": Live("a", sink("t1"), "sink", "RUNNING"), "b": Live("b", sink("t2"), "sink", "RUNNING")}
    read = Publications(warnings=("publication p of database x not checked (s): …",), problems={"s": {"k": ("m",)}})
    health = (Unhealthy("b", "FAILED"),)
    out = planner.planned(
        seen(live, health=health, publications=read, topics=KafkaTopics(frozenset({"t1", "t3"}))),
        wanted(Desired("a", sink("t3")), Desired("b", sink("t2"))),
        Policy(),
        None,
    )
    assert out.plan is not None and [(s.name, s.action) for s in out.plan.steps if s.changes] == [("a", "update")]
    assert out.plan.health == health and out.invalid == {"s": {"k": ("m",)}}
    assert "publication p of database x not checked (s): …" in out.plan.warnings
    assert out.basis is not None and out.basis.kafka == "kafka-1" and out.error == ""


def test_the_reader_is_told_whose_health_to_read_and_whether_kafka_is_needed() -> None:
    live = {"a": Live("a", sink("t1"), "sink", "RUNNING"), "b": Live("b", sink("t2"), "sink", "RUNNING")}
    apply = planner.needs(seen(live), wanted(Desired("a", sink("t3")), Desired("b", sink("t2"))), Policy(), None)
    assert apply == planner.Needs(frozenset({"b"}), topics=True), "a is written: judged by readiness, not here"
    same = wanted(Desired("a", sink("t1")), Desired("b", sink("t2")), dry_run=True)
    assert planner.needs(seen(live), same, Policy(), None) == planner.Needs(frozenset({"a", "b"}), topics=False)


def test_topics_that_were_not_listed_are_said_in_the_plan() -> None:
    live = {"a": Live("a", sink("t1"), "sink", "RUNNING")}
    want = wanted(Desired("a", sink("t2")))
    failed = planner.planned(seen(live, topics=KafkaTopics(error="broker down")), want, Policy(), None)
    assert failed.plan is not None and "topics not checked: broker down" in failed.plan.warnings


class OtherCluster:
    """A sealed plan made against another Connect: the planner asks nothing else of it."""

    def identity(self, url: str, kafka: str | None) -> str:
        return f"plan made for another cluster, not {url}"

    def steps(self, desired: Mapping[str, Desired], live: Mapping[str, Live]) -> tuple[Step, ...]:
        raise AssertionError("not asked")

    def publications(self) -> tuple[PublicationChange, ...]:
        raise AssertionError("not asked")

    def adopt(self) -> tuple[str, ...]:
        raise AssertionError("not asked")

    def stale(self, p: Plan, basis: Basis) -> str:
        raise AssertionError("not asked")


def test_a_sealed_plan_for_another_cluster_reads_and_plans_nothing() -> None:
    live = {"a": Live("a", sink("t1"), "sink", "RUNNING")}
    want = wanted(Desired("a", sink("t2")))
    assert planner.needs(seen(live), want, Policy(), OtherCluster()) is None
    out = planner.planned(seen(live), want, Policy(), OtherCluster())
    assert out.plan is None and out.error == "plan made for another cluster, not http://connect:8083"


def test_the_steps_are_drafted_once_for_what_to_read_and_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 47: `needs` drafts the steps, `planned` takes that draft from the Seen; the plan is
    the one a fresh draft gives."""
    live = {"a": Live("a", sink("t1"), "sink", "RUNNING"), "b": Live("b", sink("t2"), "sink", "RUNNING")}
    want = wanted(Desired("a", sink("t3")), Desired("b", sink("t2")))
    fresh = planner.planned(seen(live), want, Policy(), None)
    drafts: list[str] = []
    real = planner.drafted
    monkeypatch.setattr(planner, "drafted", lambda *a: drafts.append("draft") or real(*a))
    need = planner.needs(seen(live), want, Policy(), None)
    assert need is not None
    again = planner.planned(replace(seen(live), draft=need.draft), want, Policy(), None)
    assert drafts == ["draft"] and again == fresh
