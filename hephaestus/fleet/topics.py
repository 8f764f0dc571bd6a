"""What a sink reads, where its failed records go, and which of those still need attention
(pure): shared by `status`, the exporter and `dlq`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hephaestus.kafka import Span

DLQ_KEY = "errors.deadletterqueue.topic.name"


def dlq_topics(configs: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Sink name → its DLQ topic, for every connector that names one."""
    return {name: c[DLQ_KEY] for name, c in sorted(configs.items()) if c.get(DLQ_KEY, "").strip()}


def topics_of(config: Mapping[str, str]) -> tuple[str, ...]:
    """A sink's `topics` list (a `topics.regex` sink is not resolved: no lag is shown for it)."""
    return tuple(t.strip() for t in config.get("topics", "").split(",") if t.strip())


def replay_group(connector: str) -> str:
    """The consumer group `dlq replay` moves past what it sent back (so a rerun skips it)."""
    return f"hephaestus-dlq-replay.{connector}"


def unresolved(spans: Sequence[Span], replayed: Mapping[tuple[str, int], int]) -> int:
    """Records a DLQ parked since the last replay or purge: past what a replay committed and
    past the log start a purge moved. The rest were dealt with and need no one's attention."""
    return sum(max(s.end - max(s.start, replayed.get((s.topic, s.partition), 0)), 0) for s in spans)
