"""What a sink reads and where its failed records go (pure): shared by `status` and `dlq`."""

from __future__ import annotations

from collections.abc import Mapping

DLQ_KEY = "errors.deadletterqueue.topic.name"


def dlq_topics(configs: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Sink name → its DLQ topic, for every connector that names one."""
    return {name: c[DLQ_KEY] for name, c in sorted(configs.items()) if c.get(DLQ_KEY, "").strip()}


def topics_of(config: Mapping[str, str]) -> tuple[str, ...]:
    """A sink's `topics` list (a `topics.regex` sink is not resolved: no lag is shown for it)."""
    return tuple(t.strip() for t in config.get("topics", "").split(",") if t.strip())
