"""Sinks a source's schema change breaks (issue 45): no restart fixes a sink that cannot write
what its source now sends (hephaestus.drift's `sink-write-fails`), so heal never restarts one,
and pauses it before it fails when the pipeline's policy says so (`breaking: pause`, the
default); reconcile then leaves it paused while the change stands."""

from __future__ import annotations

from collections.abc import Mapping

from hephaestus.connect import LiveConnector
from hephaestus.drift.model import BREAKS_SINK, DriftReport, Finding

HELD = "held"  # heal's verdict for such a sink: failing, and not restarted


def broken(report: DriftReport, fleet: Mapping[str, LiveConnector]) -> dict[str, Finding]:
    """Each listed sink's first breaking finding (the policy's `ignore` does not apply: a
    breaking change is never ignored)."""
    found: dict[str, Finding] = {}
    for f in report.findings:
        if f.code == BREAKS_SINK:
            for name in f.sinks:
                if name in fleet:
                    found.setdefault(name, f)
    return found


def to_pause(found: Mapping[str, Finding], fleet: Mapping[str, LiveConnector]) -> list[str]:
    """The broken sinks to pause now: the policy says pause, and it is not paused or stopped."""
    return sorted(n for n, f in found.items() if f.action == "pause" and fleet[n].state not in ("PAUSED", "STOPPED"))


def reason(f: Finding, paused: bool) -> str:
    done = "paused before it fails" if paused else "not restarted"
    return f"{done}: {f.describe()}; no restart fixes it: mend the schema, then catalog refresh, generate, reconcile"
