"""What `dlq list|show|replay` print (pure): text and JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from hephaestus.dlq.model import Dlq, errors_of, masked
from hephaestus.dlq.run import ReplayResult, Shown


def when(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def dlq_row(d: Dlq) -> dict[str, Any]:
    return {
        "cluster": d.cluster,
        "connector": d.connector,
        "topic": d.topic,
        "depth": d.depth,
        "unresolved": d.unresolved,
        "oldest": when(d.oldest_ms),
        "partitions": [{"partition": s.partition, "start": s.start, "end": s.end} for s in d.spans],
    }


def list_json(found: Sequence[Dlq]) -> str:
    return json.dumps({"dlqs": [dlq_row(d) for d in found]}, indent=2) + "\n"


def list_text(found: Sequence[Dlq]) -> str:
    lines = [
        f"{d.cluster:12} {d.connector}: {d.depth} record(s) in {d.topic}"
        + (f", oldest {when(d.oldest_ms)}" if d.oldest_ms is not None else "")
        + _resolved(d)
        for d in found
    ]
    lines.append(f"{sum(1 for d in found if d.pending)} of {len(found)} dead-letter queue(s) hold unresolved records")
    return "\n".join(lines) + "\n"


def _resolved(d: Dlq) -> str:
    """How many of those a replay or purge left behind it (only said when some were)."""
    if d.unresolved is None or d.unresolved == d.depth:
        return ""
    return f"; {d.unresolved} parked since the last replay or purge"


def record_rows(shown: Sequence[Shown], values: bool) -> list[dict[str, Any]]:
    """Each parked record: where, when, Connect's error headers, and (with `values`) its key
    and value decoded, secret fields masked; a row is data, printed only when asked for."""
    return [
        {
            "partition": s.record.partition,
            "offset": s.record.offset,
            "time": when(s.record.timestamp_ms),
            "error": errors_of(s.record),
            "key": {"format": s.key.kind, **({"value": masked(s.key.value)} if values else {})},
            "value": {"format": s.value.kind, **({"value": masked(s.value.value)} if values else {})},
        }
        for s in shown
    ]


def show_json(connector: str, dlq: Dlq, rows: list[dict[str, Any]]) -> str:
    doc = {
        "connector": connector,
        "topic": dlq.topic,
        "depth": dlq.depth,
        "unresolved": dlq.unresolved,
        "records": rows,
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def show_text(connector: str, dlq: Dlq, rows: list[dict[str, Any]]) -> str:
    head = f"{connector}: {dlq.depth} record(s) in {dlq.topic}{_resolved(dlq)}; showing {len(rows)}"
    return "\n".join([head, *(record_text(r) for r in rows)]) + "\n"


def record_text(r: dict[str, Any]) -> str:
    e = r["error"]
    return (
        f"- [{r['partition']}] offset {r['offset']} at {r['time']}: {e.get('stage', '?')} failed in "
        f"{e.get('class.name', '?')}: {e.get('exception.class.name', '')}: {e.get('exception.message', '')}\n"
        f"    from {e.get('topic', '?')}[{e.get('partition', '?')}] offset {e.get('offset', '?')}"
        + "".join(
            f"\n    {part} ({r[part]['format']}): {json.dumps(r[part]['value'], default=str)}"
            for part in ("key", "value")
            if "value" in r[part]
        )
    )


def replayed(connector: str, result: ReplayResult, verb: str) -> str:
    where = f" to {', '.join(result.targets)}" if result.targets else " (nothing parked since the last replay)"
    return f"{connector}: {verb} {result.count} record(s){where}"
