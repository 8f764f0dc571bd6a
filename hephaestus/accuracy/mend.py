"""`accuracy --deep --repair` (edge: orchestrates the databases and the signals).

Compare; refuse above `--max-keys` before anything is sent; for each mismatching table send
one execute-snapshot signal per batch of keys and wait (bounded) until the sink holds exactly
the source's rows for them before the next batch (Debezium queues snapshots of one table and
re-labels their notifications: one batch in flight keeps each outcome readable); delete
extras only with `--delete-extra`; then compare the repaired tables again.

The signals are written by a `Signaller` the CLI hands in: `snapshot send`'s own path (the
connector located in its cluster's select, the gate, the cluster lock, the audit). Features
import no other feature, so this module only knows its shape.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from hephaestus.accuracy import repair as rp
from hephaestus.accuracy import sinkdb
from hephaestus.accuracy.db import Connection
from hephaestus.accuracy.model import Key, TableResult
from hephaestus.accuracy.queries import TableQuery, keyed_hashes
from hephaestus.accuracy.run import AccuracyOptions, Job, Prepared, connections, plan_jobs, prepare, run_accuracy
from hephaestus.errors import HephaestusError
from hephaestus.generator.model import Definition
from hephaestus.polling import Bound, until
from hephaestus.project import Project

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
    deep = replace(options, deep=True, deep_options=replace(options.deep_options, limit=_limit(options, how)))
    before = run_accuracy(project, defs, deep, how.clock)
    rp.check_size(before, how.max_keys, how.delete_extra)
    todo = [r for r in before.results if r.verdict == "mismatch" and r.diff is not None]
    if not todo:
        return rp.RepairReport(before, (), None)
    jobs = {j.pair: j for j in plan_jobs(project, defs, replace(deep, pairs=tuple(r.pair for r in todo)))}
    tables = tuple(_table(project, jobs[r.pair], r, how, signal) for r in todo)
    after = run_accuracy(project, defs, replace(deep, pairs=tuple(r.pair for r in todo)), how.clock)
    return rp.RepairReport(before, tables, after)


def _limit(options: AccuracyOptions, how: RepairOptions) -> int:
    return max(options.deep_options.limit, how.max_keys)


@dataclass
class _Progress:
    """What one table's repair has done so far (kept when a later step fails)."""

    pair: str
    connector: str = ""
    resnapshot: tuple[Key, ...] = ()
    signals: list[str] = field(default_factory=list)
    extra: tuple[Key, ...] = ()
    deleted: int = 0

    def done(self, error: str | None = None) -> rp.TableRepair:
        return rp.TableRepair(
            self.pair, self.connector, self.resnapshot, tuple(self.signals), self.extra, self.deleted, error
        )


def _table(project: Project, job: Job, result: TableResult, how: RepairOptions, signal: Signaller) -> rp.TableRepair:
    progress = _Progress(result.pair.name)
    try:
        if job.pair.source.query:
            raise HephaestusError("an expectation's rows come from ksqlDB: a source snapshot cannot repair them")
        progress.connector = rp.source_connector(result)
        with connections(job) as (source, sink):
            _mend(project, job, result, how, signal, progress, (source, sink))
    except HephaestusError as exc:
        return progress.done(str(exc))
    return progress.done()


def _mend(
    project: Project,
    job: Job,
    result: TableResult,
    how: RepairOptions,
    signal: Signaller,
    progress: _Progress,
    conns: tuple[Connection, Connection],
) -> None:
    p = prepare(job, *conns)
    again, extra = rp.wanted(result)
    # An "extra" the source still holds, outside the compared rows (soft-deleted there, live
    # here), is a stale copy: read it again, never delete it.
    stale = set(_hashes(conns[0], replace(p.source, filter=""), extra)) if extra else set()
    progress.resnapshot = (*again, *(k for k in extra if k in stale))
    progress.extra = tuple(k for k in extra if k not in stale)
    table = str(job.pair.source.table)
    for batch in rp.batches(table, p.source.key, progress.resnapshot, how.batch_keys):
        progress.signals.append(signal(progress.connector, table, batch.filter))
        _wait(conns, p, batch.keys, how, progress.signals[-1])
    if how.delete_extra and progress.extra:
        cleared = sinkdb.judged(job.pair.sink, progress.extra)
        progress.deleted = sinkdb.remove_rows(project, job.pair.sink, p.sink.key, progress.extra, cleared)


def _wait(
    conns: tuple[Connection, Connection], p: Prepared, keys: Sequence[Key], how: RepairOptions, signal_id: str
) -> None:
    def matched() -> bool | None:
        return True if not pending(conns, p, keys) else None

    if until(matched, Bound(how.timeout_s, how.interval_s, how.clock, how.sleep, first_s=0.2)) is None:
        left = len(pending(conns, p, keys))
        raise HephaestusError(
            f"signal {signal_id}: {left} of {len(keys)} keys still differ at the sink after {how.timeout_s:.0f}s "
            "(is the source connector running, and its sink?): no further batch sent"
        )


def pending(conns: tuple[Connection, Connection], p: Prepared, keys: Sequence[Key]) -> set[Key]:
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
