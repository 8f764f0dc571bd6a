"""What `slots` prints (pure): a line per slot, or JSON, and the Slack text of the problems."""

from __future__ import annotations

import json
from typing import Any

from hephaestus.fleet.read import SlotReport
from hephaestus.fleet.slots import Judged, size
from hephaestus.notify.slack import escape


def row(j: Judged) -> dict[str, Any]:
    s = j.slot
    return {
        "database": s.database,
        "slot": s.name,
        "plugin": s.plugin,
        "active": s.active,
        "retained_bytes": s.retained_bytes,
        "lag_bytes": s.lag_bytes,
        "wal_status": s.wal_status,
        "owner": j.owner,
        "verdict": j.verdict,
        "reason": j.reason,
    }


def as_json(found: SlotReport) -> str:
    return json.dumps({"slots": [row(j) for j in found.judged], "errors": list(found.errors)}, indent=2) + "\n"


def text(found: SlotReport) -> str:
    """A line per slot and the count of problems (the errors go to stderr: `errors`)."""
    lines = [_line(j) for j in found.judged]
    lines.append(f"{len(found.problems)} of {len(found.judged)} slot(s) need attention")
    return "\n".join(lines) + "\n"


def errors(found: SlotReport) -> str:
    return "".join(f"error: {e}\n" for e in found.errors)


def _line(j: Judged) -> str:
    s = j.slot
    held = "-" if s.retained_bytes is None else size(s.retained_bytes)
    verdict = f"  {j.verdict.upper()}: {j.reason}" if j.verdict != "ok" else ""
    state = "active" if s.active else "inactive"
    return f"{s.database:16} {s.name:40} {state:8} {held:>10} {s.wal_status or '-':10} {j.owner or 'orphan'}{verdict}"


def slack_text(found: SlotReport) -> str:
    lines = [
        f"`{escape(j.slot.database)}`/`{escape(j.slot.name)}`: {j.verdict} ({escape(j.reason)})" for j in found.problems
    ]
    return "hephaestus slots: replication slots need attention\n" + "\n".join(lines)
