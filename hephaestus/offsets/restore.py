"""`hephaestus offsets restore`: a connector's recorded position put back from the offsets ledger
(issue 49; edge: Connect, PostgreSQL, the state store).

One connector, or every owned connector of a cluster recorded in the ledger (disaster recovery:
a cluster recreated with an empty offsets topic). Each goes through the path renames use, under
the cluster's lock and audited: stop (or, absent, create it STOPPED from git's file, so that it
never starts without its offsets), PATCH the recorded offsets, then back to its state. The gate
judges each (`safety.restore`): a source whose slot no longer holds the recorded LSN, or is
gone, is `offsets-lost`; a sink moved ahead of where it is skips records. A slot behind its
record is not the slot the record was taken from: bad input, nothing written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect.errors import ConnectError
from hephaestus.connect.ready import ReadyOptions, Target, wait_ready
from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet.desired import load_desired
from hephaestus.offsets.backup import slot_of
from hephaestus.offsets.run import positions
from hephaestus.project import Cluster, Project
from hephaestus.safety.effects import Effect
from hephaestus.safety.gate import Allow, Cleared, Item, check
from hephaestus.safety.restore import lsn_text, of_restore
from hephaestus.state.backend import connect_lock, journal_for, ownership_store, timeout_of
from hephaestus.state.ledgerdoc import Record, SlotAt, at_or_before
from hephaestus.state.lock import new_run_id

# What a restore itself is: a recorded position put back re-delivers what came after it (a sink
# upserts it again); a skip or a lost WAL position needs --allow-destructive=offsets-lost.
CONSENT = frozenset({"offsets-rewound", "redelivery"})
BACK = {"RUNNING": "resume", "PAUSED": "pause"}


@dataclass(frozen=True)
class Restore:
    cluster: Cluster
    record: Record
    config: Mapping[str, str] = field(hash=False)
    live_state: str | None  # None: not on the cluster, created STOPPED from git's file
    target: str  # the state it ends in
    effects: tuple[Effect, ...] = ()

    @property
    def connector(self) -> str:
        return self.record.connector

    def item(self) -> Item:
        return Item(self.cluster.name, self.connector, "offsets restore", self.effects)

    def describe(self) -> str:
        first = "create it STOPPED from git" if self.live_state is None else "stop"
        back = {"RUNNING": "start", "PAUSED": "pause"}.get(self.target, "leave STOPPED")
        return f"{self.connector}: {first}, put back the offsets of {self.record.taken_at}, {back}"


def pick(records: Sequence[Record], connector: str, cluster: str | None, when: datetime | None) -> Record:
    """The record to restore: the newest at or before `when` (InputError when there is none)."""
    mine = [r for r in records if r.connector == connector and (cluster is None or r.cluster == cluster)]
    chosen = at_or_before(mine, when)
    if chosen is None:
        at = f" at or before {when.isoformat()}" if when else ""
        raise InputError("offsets ledger", f"no record of {connector}{at}", field=connector)
    return chosen


def plan(
    project: Project, cluster: Cluster, records: Sequence[Record], *, client_factory: ClientFactory = connect_client
) -> list[Restore]:
    """Each record's restore on `cluster`, its effects judged from the live side and the slot."""
    desired = load_desired(cluster, include_custom=True)
    owned = ownership_store(project).owned(project.name, cluster.name)
    with client_factory(cluster) as client:
        fleet = client.fleet()
        for r in records:
            _check_ours(cluster, r.connector, r.connector in fleet, r.connector in owned, r.connector in desired)
        current = {r.connector: _current(client, r.connector) for r in records if r.connector in fleet}
    out = []
    for r in records:
        live = fleet.get(r.connector)
        config = live.config if live is not None else desired[r.connector].config
        target = live.state if live is not None else (desired[r.connector].state or "RUNNING")
        out.append(_judged(project, cluster, r, config, live.state if live else None, target, current.get(r.connector)))
    return out


def _check_ours(cluster: Cluster, name: str, live: bool, owned: bool, in_git: bool) -> None:
    """Only this deployment's connectors: inside the cluster's `select`, and a live one owned (an
    absent one is created from git's file, so it must be there)."""
    why = ""
    if not cluster.selects(name):
        why = f"{name} is outside the select of {cluster.name}"
    elif live and not owned:
        why = f"{name} runs on {cluster.name} but this deployment does not own it (`hephaestus import` adopts it)"
    elif not live and not in_git:
        why = f"{name} is neither on {cluster.name} nor in git"
    if why:
        raise InputError("offsets ledger", f"{why}: nothing restored", field=name)


def _current(client: Any, name: str) -> list[dict[str, Any]]:
    found = client.offsets(name).get("offsets", [])
    return found if isinstance(found, list) else []


def _judged(
    project: Project,
    cluster: Cluster,
    r: Record,
    config: Mapping[str, str],
    live_state: str | None,
    target: str,
    current: list[dict[str, Any]] | None,
) -> Restore:
    now = slot_of(project, r.connector, config) if r.slot is not None else None
    if now is not None and r.slot is not None:
        _check_not_newer(r, r.slot, now)
    slot = (now.name, now.restart_lsn) if now is not None else None
    found = of_restore(
        config, positions(current or []), positions([dict(o) for o in r.offsets]), r.lsn, slot, project.resolver()
    )
    return Restore(cluster, r, config, live_state, target if target != "FAILED" else "RUNNING", found)


def _check_not_newer(r: Record, then: SlotAt, now: SlotAt) -> None:
    """A slot only moves forward: one behind the record is another slot (a restored database)."""
    if now.confirmed_flush_lsn < then.confirmed_flush_lsn:
        raise InputError(
            "offsets ledger",
            f"the record of {r.taken_at} is newer than slot {now.name}: it had confirmed "
            f"{lsn_text(then.confirmed_flush_lsn)}, the slot now {lsn_text(now.confirmed_flush_lsn)} "
            "(a database restored from a backup?): nothing restored",
            field=r.connector,
        )


def judge(restores: Sequence[Restore], allow: Allow) -> Cleared:
    """The one gate over every restore: Refused (exit 2) unless each effect is allowed."""
    return check([r.item() for r in restores], allow, CONSENT)


def apply(
    project: Project,
    cluster: Cluster,
    restores: Sequence[Restore],
    cleared: Cleared,
    lock_timeout_s: float | None,
    *,
    client_factory: ClientFactory = connect_client,
) -> None:
    """Under the cluster's lock, audited; the first failure stops the run, naming where it is."""
    if any(r.item() not in cleared.items for r in restores):
        raise HephaestusError("offsets restore: not cleared by the gate (a bug): nothing changed")
    run_id = new_run_id()
    with (
        connect_lock(project, [cluster], "offsets restore", timeout_of(project, lock_timeout_s), run_id),
        journal_for(project, cluster.name, run_id) as journal,
        client_factory(cluster) as client,
    ):
        journal.check()
        for r in restores:
            journal.event(r.connector, "offsets-restore", "intent", r.describe())
            try:
                _one(client, r)
            except ConnectError as exc:
                journal.event(r.connector, "offsets-restore", "failed", str(exc))
                raise HephaestusError(
                    f"offsets of {r.connector} not restored: {exc} (it may be left STOPPED: check `hephaestus status`)"
                ) from exc
            journal.event(r.connector, "offsets-restore", "ok", r.describe())
        _ready(project, client, restores, journal)


def _ready(project: Project, client: Any, restores: Sequence[Restore], journal: Any) -> None:
    """Done only when Connect says so: each in its state, held for the stability window (a
    restore that put a source at a position its slot cannot serve fails its task here)."""
    p = project.policy
    options = ReadyOptions(timeout_s=p.ready_timeout_s, stable_s=p.stability_window_s)
    verdicts = wait_ready(client, [Target(r.connector, frozenset({r.target})) for r in restores], options)
    for v in verdicts.values():
        journal.event(v.name, "offsets-restore", "ready" if v.ok else "not-ready", v.detail)
    if bad := [v for v in verdicts.values() if not v.ok]:
        said = "; ".join(f"{v.name}: {v.detail}" for v in bad)
        raise HephaestusError(f"offsets restored, but not running as they should: {said}")


def _one(client: Any, r: Restore) -> None:
    if r.live_state is None:
        client.create(r.connector, dict(r.config), initial_state="STOPPED")
    else:
        client.stop(r.connector)
    client.alter_offsets(r.connector, [dict(o) for o in r.record.offsets])
    if r.target in BACK:
        getattr(client, BACK[r.target])(r.connector)
