"""What a DLQ holds, and what replaying a record means (pure).

Connect's DLQ reporter (`errors.deadletterqueue.context.headers.enable=true`) writes each
failed record as it was consumed, with headers `__connect.errors.{topic, partition, offset,
connector.name, task.id, stage, class.name, exception.class.name, exception.message,
exception.stacktrace}`. Replay sends the record back where it came from: the original topic
and partition (so one key stays in one partition, whatever partitioner wrote it), with its
key, value and own headers, the error headers left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hephaestus.errors import HephaestusError
from hephaestus.kafka import Record, Span
from hephaestus.secrets import MASK, REDACTOR, is_sensitive

ERROR_HEADER = "__connect.errors."
# Shown by `dlq show`; the stack trace is long and may quote row values: left out.
SHOWN = ("stage", "class.name", "exception.class.name", "exception.message", "topic", "partition", "offset")


@dataclass(frozen=True)
class Dlq:
    cluster: str
    connector: str
    topic: str
    spans: tuple[Span, ...] = ()
    oldest_ms: int | None = None  # the first record still held, by its timestamp
    config: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)  # the sink's, live
    unresolved: int | None = None  # parked since the last replay or purge (None: not read)

    @property
    def depth(self) -> int:
        return sum(s.depth for s in self.spans)

    @property
    def pending(self) -> int:
        """What needs attention: the unresolved records when read, else all it holds."""
        return self.depth if self.unresolved is None else self.unresolved


def errors_of(record: Record) -> dict[str, str]:
    """The Connect error headers of a DLQ record, short names, values redacted."""
    out = {}
    for key, raw in record.headers:
        if key.startswith(ERROR_HEADER) and key[len(ERROR_HEADER) :] in SHOWN:
            out[key[len(ERROR_HEADER) :]] = REDACTOR(_text(raw))
    return out


def _text(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Replay:
    """Where one DLQ record goes back to, or why it cannot."""

    record: Record
    topic: str = ""
    partition: int = -1
    problem: str = ""


def replay_of(record: Record) -> Replay:
    headers = {k: _text(v) for k, v in record.headers if k.startswith(ERROR_HEADER)}
    topic = headers.get(ERROR_HEADER + "topic", "")
    partition = headers.get(ERROR_HEADER + "partition", "")
    if not topic or not partition.isdigit():
        return Replay(
            record,
            problem="no __connect.errors.topic/partition header: the sink's "
            "errors.deadletterqueue.context.headers.enable was off when it was parked",
        )
    return Replay(record, topic, int(partition))


def own_headers(record: Record) -> list[tuple[str, bytes]]:
    """The record's headers as first produced (Connect's error headers removed)."""
    return [(k, v or b"") for k, v in record.headers if not k.startswith(ERROR_HEADER)]


def masked(value: Any) -> Any:
    """A decoded key or value with the fields of secret-looking names masked (a row may carry a
    password column); every string also passes the redactor."""
    if isinstance(value, dict):
        return {k: (MASK if is_sensitive(str(k)) and v is not None else masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return REDACTOR(value) if isinstance(value, str) else value


def start_positions(spans: Sequence[Span], committed: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """Where a replay starts in each partition: after what an earlier replay committed, never
    before the log start (a purge may have moved it)."""
    return {(s.topic, s.partition): max(s.start, committed.get((s.topic, s.partition), 0)) for s in spans}


def end_positions(spans: Sequence[Span], until: int | None) -> dict[tuple[str, int], int]:
    """Where it stops: each partition's end, or offset `until` (inclusive) when given."""
    return {(s.topic, s.partition): s.end if until is None else min(s.end, until + 1) for s in spans}


@dataclass(frozen=True)
class Bounds:
    """Which parked records a replay takes: in every partition or one, from where the last
    replay stopped or from offset `since`, up to the end or offset `until` (inclusive)."""

    until: int | None = None
    since: int | None = None
    partition: int | None = None


class ParkedBefore(HephaestusError):
    """A replay from an offset would pass over records parked before it and never replayed:
    a replay's position is one offset per partition, so they would read as replayed (exit 2)."""

    exit_code = 2


def positions(
    spans: Sequence[Span], committed: Mapping[tuple[str, int], int], bounds: Bounds
) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
    """Where a replay within `bounds` starts and stops in each partition it takes."""
    chosen = [s for s in spans if bounds.partition in (None, s.partition)]
    if bounds.partition is not None and not chosen:
        raise HephaestusError(f"the dead-letter queue has no partition {bounds.partition}")
    froms, ends = start_positions(chosen, committed), end_positions(chosen, bounds.until)
    if bounds.since is None:
        return froms, ends
    since = bounds.since
    for (topic, partition), first in sorted(froms.items()):
        if first < since < ends[(topic, partition)]:
            raise ParkedBefore(
                f"{topic}[{partition}] holds records parked before offset {since} and never replayed "
                f"(offsets {first}-{since - 1}): a replay's position is one per partition, so replaying "
                f"from {since} would count them as replayed; replay them too (leave out --from), "
                "or purge them first (`dlq purge`)"
            )
    return {tp: max(first, since) for tp, first in froms.items()}, ends
