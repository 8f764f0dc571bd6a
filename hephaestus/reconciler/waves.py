"""In which order a plan's writes go (pure): deletes first (only sinks are ever deleted, and a
sink gone first never reads a half-changed source), then the sources with every sink that
reads none of their topics, then the sinks that read a planned source's topics; each wave cut
into batches when the rollout is paced.

A sink depends on a source when one of its `topics` starts with the source's topic prefix: the
route's replacement up to its first group (`{env}.{org}.$1.$2.$3` with `$1` the database's
`topic.prefix`), else `topic.prefix` itself. `topics.regex` sinks are put after every source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hephaestus.classes import POSTGRES_SOURCE as SOURCE
from hephaestus.reconciler.plan import Step


def topic_prefix(cfg: Mapping[str, str]) -> str:
    prefix = cfg.get("topic.prefix", "")
    replacement = cfg.get("transforms.route.replacement", "") if "route" in cfg.get("transforms", "") else ""
    if replacement and "$1" in replacement:
        return replacement.split("$1")[0] + prefix + "."
    return f"{prefix}." if prefix else ""


def reads(sink: Step, prefixes: Sequence[str]) -> bool:
    if sink.config.get("topics.regex"):
        return bool(prefixes)
    topics = [t.strip() for t in sink.config.get("topics", "").split(",") if t.strip()]
    return any(t.startswith(p) for t in topics for p in prefixes if p)


def waves(writes: Sequence[Step]) -> list[list[Step]]:
    """The writes in waves (empty waves left out), each in the plan's order."""
    deletes = [s for s in writes if s.action == "delete"]
    rest = [s for s in writes if s.action != "delete"]
    sources = [s for s in rest if s.connector_class == SOURCE]
    prefixes = [topic_prefix(s.config) for s in sources]
    dependent = [s for s in rest if s not in sources and reads(s, prefixes)]
    first = [s for s in rest if s not in dependent]
    return [w for w in (deletes, first, dependent) if w]


def batches(wave: Sequence[Step], size: int) -> list[list[Step]]:
    """The wave in batches of `size` (0: one batch)."""
    if size <= 0:
        return [list(wave)]
    return [list(wave[i : i + size]) for i in range(0, len(wave), size)]
