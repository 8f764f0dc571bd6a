"""What putting a recorded position back does to data (pure; issue 49): `offsets restore`
from the offsets ledger, judged at the one gate like every write (safety.gate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hephaestus.safety import views
from hephaestus.safety.effects import Config, Effect, again_effect, few, number, start_effects, stop_effects
from hephaestus.safety.values import NO_RESOLVER, Resolver


def of_restore(
    config: Config,
    current: Mapping[Any, Any],
    wanted: Mapping[Any, Any],
    lsn: int | None,
    slot: tuple[str, int] | None,
    resolve: Resolver = NO_RESOLVER,
) -> tuple[Effect, ...]:
    """offsets restore (issue 49): a recorded position put back. `current`/`wanted`: a sink's
    positions by partition (a partition with none now, its offsets lost, is put back: what was
    delivered after the record is delivered again). A source: `lsn` its recorded position,
    `slot` (its name, its restart_lsn) as it is now, None when it does not exist."""
    if views.is_source(config):
        s = views.source(config, resolve)
        return (*stop_effects(s), *_resumed(lsn, slot), *start_effects(s))
    again = again_effect(config, resolve)
    back = sorted(str(p) for p, o in wanted.items() if p in current and number(o) < number(current[p]))
    ahead = sorted(str(p) for p, o in wanted.items() if p in current and number(o) > number(current[p]))
    put = any(p not in current for p in wanted)
    found = [Effect("offsets-rewound", f"moved back in {few(back)}")] if back else []
    found += (
        [Effect("offsets-lost", f"moved ahead in {few(ahead)}: the records in between are skipped")] if ahead else []
    )
    return (*found, *([again] if back or put else []))


def _resumed(lsn: int | None, slot: tuple[str, int] | None) -> tuple[Effect, ...]:
    """A source resumes at its recorded LSN only while its slot still holds that WAL."""
    if slot is None:
        why = "its slot does not exist: a new one starts at the present, and the changes since the record are lost"
        return (Effect("offsets-lost", why),)
    name, restart = slot
    if lsn is None:
        return (Effect("offsets-lost", "the record holds no WAL position to resume at"),)
    if lsn < restart:
        at, since = lsn_text(lsn), lsn_text(restart)
        why = f"slot {name} no longer holds the recorded position {at} (its WAL starts at {since})"
        return (Effect("offsets-lost", why),)
    return ()


def lsn_text(value: int) -> str:
    """An LSN as PostgreSQL spells it: `16/B374D848` (X·2³² + Y)."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"
