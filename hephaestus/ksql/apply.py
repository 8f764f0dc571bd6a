"""`ksql apply`: run pending migration files in version order, recording each transition.

Per file, as ksql-migrations does: check the version before it is MIGRATED (the table may lag
the stream, so this is retried), write RUNNING, send each statement, then write MIGRATED —
or ERROR with the reason, and stop. A file that does not parse is recorded the same way
(RUNNING, then ERROR "Failed to parse sql: …"), with none of its statements sent: ksql-migrations
parses the whole file before it runs any (ApplyMigrationCommand.executeCommands, in
confluentinc/ksql). A later apply resumes from the failed version. ksqlDB has
no transactions: statements of a failed file that ran before the failure stay applied, so
files should prefer `CREATE OR REPLACE` / `IF NOT EXISTS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NoReturn

from hephaestus.errors import HephaestusError
from hephaestus.ksql import sqltext
from hephaestus.ksql.compiler import CompiledMigration, ParseFailure, Statement
from hephaestus.ksql.errors import KsqlError
from hephaestus.ksql.files import MigrationFile, Scan, checksum
from hephaestus.ksql.metadata import NONE_VERSION, State, VersionInfo
from hephaestus.ksql.operations import validate_chain
from hephaestus.ksql.store import BrokenChain, MetadataStore

Kind = Literal["all", "next", "until", "version"]


Audit = Callable[[str, str, str], None]


class MigrationsChanged(HephaestusError):
    """Applied files changed or vanished: applying more on top would hide it."""

    exit_code = 2


class MigrationFailed(HephaestusError):
    """A statement failed; the file is recorded as ERROR."""


@dataclass(frozen=True)
class KsqlTarget:
    kind: Kind = "all"
    number: int = 0  # for until / version


@dataclass(frozen=True)
class Selection:
    migrations: tuple[MigrationFile, ...]
    skipped: tuple[int, ...] = ()  # pending versions that --version jumps over


@dataclass(frozen=True)
class KsqlApplyOptions:
    target: KsqlTarget = KsqlTarget()
    dry_run: bool = False
    settle_attempts: int = 10  # reads of the previous version before giving up (ksql-migrations: 10)
    settle_wait_s: float = 1.0
    clock: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    sleep: Callable[[float], None] = time.sleep
    audit: Audit = field(default=lambda *event: None)  # (file, outcome, detail): the audit log's record


@dataclass(frozen=True)
class Applied:
    version: int
    name: str
    statements: int


@dataclass(frozen=True)
class ApplyResult:
    cluster: str
    previous: str  # the last migrated version before this run
    plan: tuple[CompiledMigration, ...]
    applied: tuple[Applied, ...]
    dry_run: bool
    skipped: tuple[int, ...] = ()


def select(scan: Scan, previous: str, target: KsqlTarget) -> Selection:
    """Which files to run after `previous`, the last migrated version. Pure."""
    minimum = 1 if previous == NONE_VERSION else int(previous) + 1
    if target.kind == "version":
        return _one_version(scan, previous, minimum, target.number)
    eligible = [
        f for f in scan.files if f.version >= minimum and (target.kind != "until" or f.version <= target.number)
    ]
    if target.kind == "next":
        if not eligible:
            raise HephaestusError("no eligible migrations: every local file is already migrated")
        eligible = eligible[:1]
    return Selection(tuple(eligible))


def _one_version(scan: Scan, previous: str, minimum: int, number: int) -> Selection:
    found = scan.by_version().get(number)
    if found is None:
        raise HephaestusError(f"no migration file with version {number}")
    if number < minimum:
        raise HephaestusError(f"version {number} must be newer than the last migrated version ({previous})")
    skipped = tuple(f.version for f in scan.files if minimum <= f.version < number)
    return Selection((found,), skipped)


def apply(
    store: MetadataStore, scan: Scan, compiled: Mapping[int, CompiledMigration], options: KsqlApplyOptions
) -> ApplyResult:
    store.require()
    checked = validate_chain(store, scan)
    if checked.problems:
        raise MigrationsChanged(
            f"ksqlDB '{store.client.name}': applied migrations do not match the files, nothing "
            "applied:\n  " + "\n  ".join(checked.problems)
        )
    previous = checked.latest
    selection = select(scan, previous, options.target)
    plan = tuple(compiled[f.version] for f in selection.migrations)
    result = ApplyResult(store.client.name, previous, plan, (), options.dry_run, selection.skipped)
    if options.dry_run:
        _check_parsed(plan)
        return result
    unchanged(scan.files, store.client.name, "apply")  # the plan's are among them
    applied: list[Applied] = []
    for migration in plan:
        applied.append(_apply_one(store, migration, previous, options))
        previous = str(migration.file.version)
    return replace(result, applied=tuple(applied))


_DONE = {"apply": "applied", "undo": "undone"}


def unchanged(read: Sequence[MigrationFile], cluster: str, command: str) -> None:
    """The files checked and compiled are still as this run read them, before it waited for the
    lock: one edited since (a checkout meanwhile) would pass a check it no longer meets, or run
    statements no one sees any more."""
    moved = [f"{f.path.name} (checksum read {f.checksum}, now {now})" for f in read if (now := _now(f)) != f.checksum]
    if moved:
        raise MigrationsChanged(
            f"ksqlDB '{cluster}': nothing {_DONE[command]}: changed since this run read them: "
            f"{'; '.join(moved)}; run the {command} again"
        )


def _now(file: MigrationFile) -> str:
    try:
        return checksum(file.path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"


def _apply_one(store: MetadataStore, migration: CompiledMigration, previous: str, options: KsqlApplyOptions) -> Applied:
    _settle(store, previous, options)
    f = migration.file
    options.audit(f.path.name, "intent", f"apply version {f.version} ({len(migration.statements)} statements)")
    try:
        running = VersionInfo(f.version, f.name, State.RUNNING, f.checksum, str(options.clock()), "", previous)
        store.record(running)
        if migration.failure is not None:
            _parse_failed(store, migration.failure, running, options)
        for statement in migration.statements:
            run_statement(store, f, statement, running, options.clock)
        store.record(replace(running, state=State.MIGRATED, completed_on=str(options.clock())))
    except HephaestusError as exc:
        options.audit(f.path.name, "failed", str(exc))
        raise
    options.audit(f.path.name, "ok", "MIGRATED")
    return Applied(f.version, f.name, len(migration.statements))


def run_statement(
    store: MetadataStore,
    file: MigrationFile,
    statement: Statement,
    running: VersionInfo,
    clock: Callable[[], int],
    action: str = "execute sql",
) -> None:
    """Send one statement; if ksqlDB refuses it, record the version ERROR (`Failed to <action>:
    …`) and raise MigrationFailed. `ksql undo` runs its undo files' statements through here too."""
    try:
        store.client.execute(statement.text, dict(statement.properties), waits_s=statement.waits_s)
    except KsqlError as exc:
        said = sqltext.redact(exc.server_message, sqltext.sensitive_values(statement.text))
        # ksql-migrations' wording, quoting the statement as the file has it (masked: no secret in a row)
        reason = f"Failed to {action}: {sqltext.mask(statement.raw or statement.text)}. Error: {said}"
        recorded = record_error(
            store, replace(running, state=State.ERROR, completed_on=str(clock()), error_reason=reason)
        )
        raise MigrationFailed(
            f"ksqlDB '{store.client.name}': {file.path}:{statement.line}: "
            f"statement failed, version {running.version} {recorded}\n"
            f"  statement: {sqltext.preview(statement.shown, 200)}\n"
            f"  ksqlDB said: {said}"
        ) from exc


def _check_parsed(plan: tuple[CompiledMigration, ...]) -> None:
    """A dry run stops at the first planned file that does not parse, as apply would."""
    for migration in plan:
        if migration.failure is not None:
            raise migration.failure


def _parse_failed(
    store: MetadataStore, failure: ParseFailure, running: VersionInfo, options: KsqlApplyOptions
) -> NoReturn:
    """ERROR after RUNNING, with ksql-migrations' "Failed to parse sql: <statement>. Error: <why>"
    (masked: no secret in a row); nothing of the file was sent."""
    if failure.statement:
        reason = f"Failed to parse sql: {failure.statement}. Error: {failure.reason}"
    else:  # the file could not be cut into statements
        reason = f"Failed to parse sql at line {failure.line}. Error: {failure.reason}"
    event = replace(running, state=State.ERROR, completed_on=str(options.clock()), error_reason=sqltext.mask(reason))
    recorded = record_error(store, event)
    raise MigrationFailed(
        f"ksqlDB '{store.client.name}': {failure}\n  version {running.version} {recorded}; nothing of the file was sent"
    ) from failure


def record_error(store: MetadataStore, event: VersionInfo) -> str:
    """Record ERROR; what the run's message then says about the version."""
    try:
        store.record(event)
    except KsqlError as exc:  # the server is gone: say so, but report the statement's failure first
        return f"left RUNNING (could not record ERROR: {exc.server_message})"
    return "recorded as ERROR"


def _settle(store: MetadataStore, previous: str, options: KsqlApplyOptions) -> None:
    """The version before must read MIGRATED; the table follows the stream asynchronously."""
    if previous == NONE_VERSION:
        return
    state = "absent"
    for attempt in range(options.settle_attempts):
        info = store.fresh(previous)
        if info is not None and info.state is State.MIGRATED:
            return
        state = info.state.value if info else "absent"
        if attempt + 1 < options.settle_attempts:
            options.sleep(options.settle_wait_s)
    raise BrokenChain(
        f"ksqlDB '{store.client.name}': version {previous} reads {state}, not MIGRATED, "
        f"after {options.settle_attempts} reads; nothing more applied"
    )
