"""`ksql undo --until N`: undo the migrated versions above N, newest first, each by its undo
file `U<version>__<name>.sql` (Flyway's model; ksql-migrations has no way back, ksql#9997, #9221).

Everything is checked before anything is sent: CURRENT must be MIGRATED (not RUNNING or ERROR),
the applied files unchanged (as `apply` checks them, and Flyway's `validate` before `undo`:
exit 2, naming the version, the file and both checksums; there is no flag around it), and
every version to undo must have its undo file, parsed (exit 1 otherwise, naming the version
and the file). Under the lock, the files are read again: one edited since the run read them
stops it (exit 2). An undo file may be added or changed after its V file was applied (it is
not part of what was applied); the checksum of the one that ran is in the audit log.

Per version, recorded as `apply` records: RUNNING (CURRENT and the version's row), the undo
file's statements, then CURRENT back to the version below (its MIGRATED row as it stands, or
"<none>" below the first) and the version's row UNDONE — or ERROR with the failing statement,
and stop. The table keeps the latest row per key, so a later `apply` reads the version below as
the last migrated one and applies the undone version again. ksqlDB has no transactions: what an
undo file ran before a failing statement stays done, so undo files should prefer `IF EXISTS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import takewhile

from hephaestus.errors import HephaestusError
from hephaestus.ksql.apply import Audit, MigrationsChanged, run_statement, unchanged
from hephaestus.ksql.compiler import CompiledMigration
from hephaestus.ksql.files import Scan, undo_name
from hephaestus.ksql.metadata import NO_ERROR, NONE_VERSION, State, VersionInfo
from hephaestus.ksql.operations import validate_chain
from hephaestus.ksql.store import MetadataStore


class UndoRefused(HephaestusError):
    """Nothing can be undone as asked (exit 1): a version without its undo file, a version still
    RUNNING or in ERROR, an --until not below the current version."""


@dataclass(frozen=True)
class UndoOptions:
    until: int  # the version that stays current; 0 undoes every version
    dry_run: bool = False
    clock: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    audit: Audit = field(default=lambda *event: None)  # (file, outcome, detail): the audit log's record


@dataclass(frozen=True)
class Undone:
    version: int
    name: str
    statements: int


@dataclass(frozen=True)
class UndoResult:
    cluster: str
    current: str  # the last migrated version before this run
    after: str  # the version current after it (NONE_VERSION: none)
    plan: tuple[CompiledMigration, ...]  # the undo files, newest first
    undone: tuple[Undone, ...]
    dry_run: bool


def targets(chain: list[VersionInfo], current: str, until: int, cluster: str = "") -> list[VersionInfo]:
    """The applied versions above `until`, newest first (`chain` runs back from `current`). Pure."""
    if current == NONE_VERSION:
        raise UndoRefused(f"ksqlDB '{cluster}': no version is migrated: nothing to undo")
    if until >= int(current):
        raise UndoRefused(
            f"ksqlDB '{cluster}': --until {until} must be lower than the current version ({current}); "
            "nothing to undo (--until 0 undoes every version)"
        )
    return list(takewhile(lambda info: info.version > until, chain))


def plan(
    scan: Scan, compiled: Mapping[int, CompiledMigration], chosen: list[VersionInfo], cluster: str = ""
) -> list[CompiledMigration]:
    """Each chosen version's compiled undo file; one without is refused before anything is sent. Pure."""
    local = scan.by_version()
    lacking = [(i, local[i.version]) for i in chosen if local[i.version].undo is None]
    if lacking:
        raise UndoRefused(
            f"ksqlDB '{cluster}': nothing undone: "
            + "; ".join(f"version {i.version} ({i.name}) has no undo file {undo_name(f)}" for i, f in lacking)
            + f" (in {lacking[0][1].path.parent})"
        )
    return [compiled[i.version] for i in chosen]


def undo(
    store: MetadataStore, scan: Scan, compiled: Mapping[int, CompiledMigration], options: UndoOptions
) -> UndoResult:
    store.require()
    _require_settled(store)
    checked = validate_chain(store, scan)
    if checked.problems:
        raise MigrationsChanged(
            f"ksqlDB '{store.client.name}': applied migrations do not match the files, nothing "
            "undone:\n  " + "\n  ".join(checked.problems)
        )
    chain = store.chain(checked.latest)
    chosen = targets(chain, checked.latest, options.until, store.client.name)
    steps = plan(scan, compiled, chosen, store.client.name)
    after = chosen[-1].previous
    result = UndoResult(store.client.name, checked.latest, after, tuple(steps), (), options.dry_run)
    if options.dry_run:
        return result
    local = scan.by_version()
    unchanged([*(local[i.version] for i in chain), *(s.file for s in steps)], store.client.name, "undo")
    below = {str(i.version): i for i in chain}
    done = [_undo_one(store, s, info, below.get(info.previous), options) for s, info in zip(steps, chosen, strict=True)]
    return replace(result, undone=tuple(done))


def _require_settled(store: MetadataStore) -> None:
    """CURRENT RUNNING or ERROR: an apply or undo is under way or stopped halfway; undoing on top
    of it would guess at what is on the server."""
    current = store.current_version()
    if current == NONE_VERSION:
        return
    info = store.get(current)
    if info.state is State.RUNNING:
        raise UndoRefused(
            f"ksqlDB '{store.client.name}': version {current} is RUNNING: an apply or undo is under way, or "
            "one stopped halfway; nothing undone. Wait for it; if none is running, `hephaestus ksql apply` "
            "finishes the version, then undo"
        )
    if info.state is State.ERROR:
        raise UndoRefused(
            f"ksqlDB '{store.client.name}': version {current} is ERROR: its last apply or undo failed "
            "(`hephaestus ksql info` says why); nothing undone. Fix the cause, run `hephaestus ksql apply` "
            "to apply it again (its statements should be IF NOT EXISTS / CREATE OR REPLACE), then undo"
        )


def _undo_one(
    store: MetadataStore,
    migration: CompiledMigration,
    info: VersionInfo,
    below: VersionInfo | None,
    options: UndoOptions,
) -> Undone:
    # The version's own row, its checksum the applied V file's: `validate` and `info` compare it.
    running = replace(
        info, state=State.RUNNING, started_on=str(options.clock()), completed_on="", error_reason=NO_ERROR
    )
    name = migration.file.path.name
    # The undo file's checksum: what ran is on record (the version's row keeps the V file's).
    count, md5 = len(migration.statements), migration.file.checksum
    options.audit(name, "intent", f"undo version {info.version} ({count} statements, checksum {md5})")
    try:
        store.record(running)
        for statement in migration.statements:
            run_statement(store, migration.file, statement, running, options.clock, "execute undo sql")
        store.record_undone(replace(running, state=State.UNDONE, completed_on=str(options.clock())), below)
    except HephaestusError as exc:
        options.audit(name, "failed", str(exc))
        raise
    options.audit(name, "ok", "UNDONE")
    return Undone(info.version, info.name, len(migration.statements))
