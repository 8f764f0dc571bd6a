"""`accuracy --deep --repair` (edge: orchestrates the databases and the signals).

One plan, two executors (as sqlmesh's plan and apply). `plan` only reads: it refuses
`--delete-extra` on a table several pipelines fill (each one's extras are the others' rows),
compares, refuses above `--max-keys`, and decides each table's keys, batches and deletes, the
gate's pass included. `preview` (`--dry-run`) shows that plan; `execute` carries it out: per
mismatching table one execute-snapshot signal per batch of keys, waiting (bounded) until the
sink holds exactly the source's rows for them before the next batch (Debezium queues snapshots
of one table and re-labels their notifications: one batch in flight keeps each outcome
readable); extras deleted only with `--delete-extra`, and only those the source still lacks
when read again just before; then the repaired tables compared again.

The signals are written by a `Signaller` the CLI hands in: `snapshot send`'s own path (the
connector located in its cluster's select, the gate, the cluster lock, the audit). Features
import no other feature, so this module only knows its shape.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from hephaestus import pg
from hephaestus.accuracy import repair as rp
from hephaestus.accuracy import sinkdb
from hephaestus.accuracy.db import Connection
from hephaestus.accuracy.model import AccuracyReport, Key, TableResult
from hephaestus.accuracy.queries import TableQuery, keyed_hashes
from hephaestus.accuracy.run import (
    AccuracyOptions,
    CompareJob,
    PreparedPair,
    connections,
    plan_jobs,
    prepare,
    run_accuracy,
    shared_tables,
)
from hephaestus.errors import HephaestusError
from hephaestus.generator.model import Definition
from hephaestus.generator.writers import SharedTable
from hephaestus.polling import Bound, until
from hephaestus.project import Project
from hephaestus.safety.gate import Cleared

CHUNK = 1000  # keys per read-back query


class Signaller(Protocol):
    def __call__(self, connector: str, table: str, where: str) -> str:
        """Write one execute-snapshot signal of `table` restricted to `where`; its id."""


@dataclass(frozen=True)
class RepairOptions:
    max_keys: int = 10_000
    batch_keys: int = 500
    delete_extra: bool = False
    timeout_s: float = 600.0  # per batch: until the sink holds its keys as the source does
    interval_s: float = 1.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def repair(
    project: Project, defs: Sequence[Definition], options: AccuracyOptions, how: RepairOptions, signal: Signaller
) -> rp.RepairReport:
    """Plan, then carry the plan out."""
    return execute(project, plan(project, defs, options, how), how, signal)


@dataclass(frozen=True)
class TablePlan:
    """One table's repair as decided (`intent`) and what carrying it out needs: its job, its
    prepared queries and, for a delete, the gate's pass."""

    intent: rp.TableIntent
    job: CompareJob
    prepared: PreparedPair | None = None  # None when the table cannot be repaired
    cleared: Cleared | None = None  # the gate's pass for the delete; None: nothing deleted


@dataclass(frozen=True)
class RepairPlan:
    """Everything a repair does, computed before anything is written: `preview` shows it,
    `execute` does it (one plan, two executors)."""

    before: AccuracyReport
    tables: tuple[TablePlan, ...]
    defs: tuple[Definition, ...]
    again: AccuracyOptions  # the compare after the repair: the tables repaired


def plan(project: Project, defs: Sequence[Definition], options: AccuracyOptions, how: RepairOptions) -> RepairPlan:
    """Compare, refuse what must not go (a shared table's deletes, more than --max-keys), and
    decide each mismatching table's keys. Reads only."""
    deep = replace(options, deep=True, deep_options=replace(options.deep_options, limit=_limit(options, how)))
    shared = shared_tables(project, defs, deep)
    if how.delete_extra:
        sinkdb.refuse_shared([(p.sink, s) for p, s in shared.items()])
    before = run_accuracy(project, defs, deep, how.clock)
    rp.check_size(before, how.max_keys, how.delete_extra)
    todo = [r for r in before.results if r.verdict == "mismatch" and r.diff is not None]
    again = replace(deep, pairs=tuple(r.pair for r in todo))
    jobs = {j.pair: j for j in plan_jobs(project, defs, again)} if todo else {}
    tables = tuple(_plan_table(jobs[r.pair], r, how, shared.get(r.pair)) for r in todo)
    return RepairPlan(before, tables, tuple(defs), again)


def preview(made: RepairPlan) -> rp.RepairPreview:
    """The dry run's executor: the plan as it stands, nothing written."""
    return rp.RepairPreview(made.before, tuple(t.intent for t in made.tables))


def execute(project: Project, made: RepairPlan, how: RepairOptions, signal: Signaller) -> rp.RepairReport:
    """The real run's executor: the signals, the waits, the deletes; then compare again."""
    if not made.tables:
        return rp.RepairReport(made.before, (), None)
    done = tuple(_execute_table(project, t, how, signal) for t in made.tables)
    after = run_accuracy(project, made.defs, made.again, how.clock)
    return rp.RepairReport(made.before, done, after)


def _limit(options: AccuracyOptions, how: RepairOptions) -> int:
    return max(options.deep_options.limit, how.max_keys)


def _plan_table(job: CompareJob, result: TableResult, how: RepairOptions, shared: SharedTable | None) -> TablePlan:
    try:
        intent, prepared = _intend(job, result, how)
    except _failures() as exc:
        return TablePlan(rp.TableIntent(result.pair.name, error=_text(exc)), job)
    # The gate outside the try: a refused delete refuses the run, before anything is sent.
    cleared = sinkdb.judged(job.pair.sink, intent.extra, shared) if intent.delete else None
    return TablePlan(intent, job, prepared, cleared)


def _intend(job: CompareJob, result: TableResult, how: RepairOptions) -> tuple[rp.TableIntent, PreparedPair]:
    if job.pair.source.query:
        raise HephaestusError("an expectation's rows come from ksqlDB: a source snapshot cannot repair them")
    connector = rp.source_connector(result)
    _, extra = rp.wanted(result)
    with connections(job) as (source, sink):
        p = prepare(job, source, sink)
        held = set(_hashes(source, replace(p.source, filter=""), extra)) if extra else set()
    table = str(job.pair.source.table)
    return rp.intend(result, connector, table, p.source.key, held, how.batch_keys, how.delete_extra), p


@dataclass
class _Progress:
    """What one table's repair has done so far (kept when a later step fails)."""

    intent: rp.TableIntent
    signals: list[str] = field(default_factory=list)
    deleted: int = 0

    def done(self, error: str | None = None) -> rp.TableRepair:
        i = self.intent
        return rp.TableRepair(i.pair, i.connector, i.resnapshot, tuple(self.signals), i.extra, self.deleted, error)


def _execute_table(project: Project, t: TablePlan, how: RepairOptions, signal: Signaller) -> rp.TableRepair:
    progress = _Progress(t.intent)
    if t.prepared is None:
        return progress.done(t.intent.error)
    try:
        with connections(t.job) as conns:
            _mend(project, t, t.prepared, how, signal, progress, conns)
    except _failures() as exc:
        return progress.done(_text(exc))
    return progress.done()


def _mend(
    project: Project,
    t: TablePlan,
    p: PreparedPair,
    how: RepairOptions,
    signal: Signaller,
    progress: _Progress,
    conns: tuple[Connection, Connection],
) -> None:
    table = str(t.job.pair.source.table)
    for batch in t.intent.batches:
        progress.signals.append(signal(t.intent.connector, table, batch.filter))
        _wait(conns, p, batch.keys, how, progress.signals[-1])
    if t.cleared is not None:
        gone = _still_gone(conns[0], p, t.intent.extra)
        progress.deleted = sinkdb.remove_rows(project, t.job.pair.sink, p.sink.key, gone, t.cleared) if gone else 0


def _still_gone(source: Connection, p: PreparedPair, keys: Sequence[Key]) -> tuple[Key, ...]:
    """The extras the source still lacks, read again just before the delete: a row written
    there since the compare is on its way to the sink, not extra."""
    source.rollback()  # a new snapshot
    held = _hashes(source, replace(p.source, filter=""), keys)
    return tuple(k for k in keys if k not in held)


def _failures() -> tuple[type[BaseException], ...]:
    """What stops one table's repair, not the run: ours, and a query's (the driver's)."""
    return (HephaestusError, *pg.driver_errors())


def _text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, HephaestusError) else pg.text(exc)


def _wait(
    conns: tuple[Connection, Connection], p: PreparedPair, keys: Sequence[Key], how: RepairOptions, signal_id: str
) -> None:
    def matched() -> bool | None:
        return True if not pending(conns, p, keys) else None

    if until(matched, Bound(how.timeout_s, how.interval_s, how.clock, how.sleep, first_s=0.2)) is None:
        left = len(pending(conns, p, keys))
        raise HephaestusError(
            f"signal {signal_id}: {left} of {len(keys)} keys still differ at the sink after {how.timeout_s:.0f}s "
            "(is the source connector running, and its sink?): no further batch sent"
        )


def pending(conns: tuple[Connection, Connection], p: PreparedPair, keys: Sequence[Key]) -> set[Key]:
    """Keys whose row at the sink is not yet the source's, filters aside (a stale copy leaves
    the compared rows once it arrives; gone at the source: nothing to wait for)."""
    source, sink = conns
    for conn in conns:
        conn.rollback()  # each poll reads a new snapshot
    a = _hashes(source, replace(p.source, filter=""), keys)
    b = _hashes(sink, replace(p.sink, filter=""), keys)
    return {k for k, h in a.items() if b.get(k) != h}


def _hashes(conn: Connection, q: TableQuery, keys: Sequence[Key]) -> dict[Key, str]:
    out: dict[Key, str] = {}
    for start in range(0, len(keys), CHUNK):
        text, params = keyed_hashes(q, keys[start : start + CHUNK])
        out.update({tuple(r[:-1]): str(r[-1]) for r in conn.execute(text, params).fetchall()})
    return out
