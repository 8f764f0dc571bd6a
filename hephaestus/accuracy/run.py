"""One accuracy run: every selected table pair compared, many at once (edge: orchestrates I/O).

Every input — definitions, `--table` names, the databases in the project file and their
passwords — is checked before the first connection; a table that cannot be compared (missing,
a bad filter, no primary key for `--deep`) is reported as an error row, the others still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TypeVar

from hephaestus import pg
from hephaestus.accuracy import db, pairs
from hephaestus.accuracy.bisect import DeepOptions, deep_diff
from hephaestus.accuracy.db import Connection, PgSide, TableInfo
from hephaestus.accuracy.model import AccuracyReport, Counts, Filters, KeyDiff, TablePair, TableResult, judge
from hephaestus.accuracy.queries import NATIVE_TYPES, TableQuery
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.generator.model import Definition
from hephaestus.generator.writers import SharedTable
from hephaestus.project import Project

T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class AccuracyOptions:
    env: str | None = None
    org: str | None = None
    tables: tuple[str, ...] = ()
    deep: bool = False
    deep_options: DeepOptions = DeepOptions()
    concurrency: int = 4
    budget_s: float | None = None  # stop comparing after this long (--budget-s): partial results
    pairs: tuple[TablePair, ...] = ()  # only these pairs (a repair's verification); all when empty


@dataclass(frozen=True)
class CompareJob:
    pair: TablePair
    source_dsn: str
    sink_dsn: str
    slots: tuple[str, ...]  # candidate slots of the pair's source
    options: AccuracyOptions


def run_accuracy(
    project: Project, defs: Sequence[Definition], options: AccuracyOptions, clock: Callable[[], float] = time.monotonic
) -> AccuracyReport:
    start = clock()
    jobs = plan_jobs(project, defs, budgeted(options, start, clock))
    with ThreadPoolExecutor(max(1, options.concurrency), thread_name_prefix="accuracy") as pool:
        results = tuple(pool.map(compare, jobs))
    return AccuracyReport(results, options.deep, clock() - start)


def budgeted(options: AccuracyOptions, start: float, clock: Callable[[], float]) -> AccuracyOptions:
    """The options with the budget as a deadline every table's comparison shares."""
    deadline = None if options.budget_s is None else start + options.budget_s
    return replace(options, deep_options=replace(options.deep_options, deadline=deadline, clock=clock))


def plan_jobs(project: Project, defs: Sequence[Definition], options: AccuracyOptions) -> list[CompareJob]:
    """The pairs to compare with their DSNs; every missing database reported at once."""
    every = [(d, pair) for d in defs for pair in pairs.table_pairs([d])]
    chosen = set(options.pairs or pairs.select([pair for _, pair in every], options.tables))
    every = [(d, pair) for d, pair in every if pair in chosen]
    names = sorted({end.database for _, pair in every for end in (pair.source, pair.sink)})
    dsns = {n: db.dsn_for(project, n) for n in names}
    errors = [_missing(project, _user(every, n), n) for n in names if dsns[n] is None]
    if errors:
        raise InputErrors(errors)
    return [
        CompareJob(
            pair, dsns[pair.source.database] or "", dsns[pair.sink.database] or "", _slots(project, d, options), options
        )
        for d, pair in every
    ]


def shared_tables(
    project: Project, defs: Sequence[Definition], options: AccuracyOptions
) -> dict[TablePair, SharedTable]:
    """The selected pairs whose sink table other sinks fill too (selected or not)."""
    chosen = options.pairs or tuple(pairs.select(pairs.table_pairs(defs), options.tables))
    return pairs.sharing(defs, chosen, db.place_of(project))


def _slots(project: Project, d: Definition, options: AccuracyOptions) -> tuple[str, ...]:
    cluster = project.clusters.get(d.cluster)
    return tuple(pairs.slot_candidates(d, options.env, options.org, cluster.select if cluster else ()))


def _user(every: Sequence[tuple[Definition, TablePair]], database: str) -> TablePair:
    return next(p for _, p in every if database in (p.source.database, p.sink.database))


def _missing(project: Project, pair: TablePair, database: str) -> InputError:
    return InputError(
        project.file,
        f"database {database!r} (used by {pair.origin}) is not in the "
        "project file: add it under databases: with its dsn",
        field=f"databases.{database}",
    )


def compare(job: CompareJob) -> TableResult:
    """One pair, start to verdict; what goes wrong becomes this table's error row."""
    start = time.monotonic()
    if job.options.deep_options.out_of_time():  # the budget ran out before this table's turn
        return TableResult(job.pair, "partial")
    try:
        with connections(job) as (source, sink):
            result = _compare(job, source, sink)
    except HephaestusError as exc:
        result = TableResult(job.pair, "error", error=str(exc))
    except pg.driver_errors() as exc:  # a query's error: this table's, redacted
        result = TableResult(job.pair, "error", error=pg.text(exc))
    return replace(result, seconds=round(time.monotonic() - start, 3))


@contextmanager
def connections(job: CompareJob) -> Iterator[tuple[Connection, Connection]]:
    """Both sides connected at once (each a TCP and auth round trip or more); when either
    fails the other is closed and the source's failure is the one reported."""
    with ThreadPoolExecutor(1, thread_name_prefix="accuracy-source") as pool:
        first = pool.submit(db.connect, job.source_dsn, job.pair.source.database)
        sink = _outcome(lambda: db.connect(job.sink_dsn, job.pair.sink.database))
        source = _outcome(first.result)
    if isinstance(source, BaseException) or isinstance(sink, BaseException):
        for opened in (source, sink):
            if not isinstance(opened, BaseException):
                opened.close()
        raise source if isinstance(source, BaseException) else sink  # type: ignore[misc]
    try:
        yield source, sink
    finally:
        sink.close()
        source.close()


def _outcome(call: Callable[[], T]) -> T | BaseException:
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - raised again by the caller, after cleaning up
        return exc


@dataclass(frozen=True)
class PreparedPair:
    """A pair ready to compare: its slot and lag, filters, and each side's query."""

    slot: str | None
    lag_before: int | None
    filters: Filters
    source: TableQuery
    sink: TableQuery


def _compare(job: CompareJob, source: Connection, sink: Connection) -> TableResult:
    p = prepare(job, source, sink)
    counts, diff = _measure(PgSide(source, p.source), PgSide(sink, p.sink), job.options)
    lag = _worst(p.lag_before, db.slot_lag(source, p.slot) if p.slot else None)
    verdict, allowed = judge(job.pair.spec, counts, diff, lag)
    return TableResult(job.pair, verdict, counts, p.filters, p.slot, lag, allowed, diff)


def prepare(job: CompareJob, source: Connection, sink: Connection) -> PreparedPair:
    """Both tables inspected (and the hash both servers agree on): what each side reads."""
    pair, deep = job.pair, job.options.deep

    def source_side() -> tuple[str | None, int | None, TableInfo, db.HashProbe | None]:
        slot = pairs.pick_slot(pair.source.database, job.slots, db.slots(source))
        info = (
            db.inspect_expectation(source, pair.source.database, pair.source.query)
            if pair.source.query
            else db.inspect(source, pair.source.database, pair.source.table)
        )
        return slot, db.slot_lag(source, slot) if slot else None, info, db.hash_probe(source) if deep else None

    def sink_side() -> tuple[TableInfo, db.HashProbe | None]:
        return db.inspect(sink, pair.sink.database, pair.sink.table), db.hash_probe(sink) if deep else None

    (slot, lag_before, src, src_probe), (dst, dst_probe) = concurrently(source_side, sink_side)
    if pair.source.query:
        src = keyed_expectation(pair, src, dst)
    filters = pairs.filters(pair, src.columns, dst.columns)
    md5, record = _hashes(src_probe, dst_probe) if src_probe and dst_probe else (False, False)
    a, b = table_queries(pair, src, dst, filters, deep, md5, record)
    return PreparedPair(slot, lag_before, filters, a, b)


def keyed_expectation(pair: TablePair, src: TableInfo, dst: TableInfo) -> TableInfo:
    """An expectation's rows are keyed as the sink table is: its result must hold that key."""
    missing = [k for k in dst.primary_key if k not in src.columns]
    if missing:
        raise HephaestusError(
            f"the expectation for {pair.sink} returns no {', '.join(missing)} (the primary key of {pair.sink.table})"
        )
    return replace(src, primary_key=dst.primary_key)


def _measure(source: PgSide, sink: PgSide, options: AccuracyOptions) -> tuple[Counts, KeyDiff | None]:
    if options.deep:
        return deep_diff(source, sink, options.deep_options, both=concurrently)
    return Counts(*concurrently(source.count, sink.count)), None


def _worst(before: int | None, after: int | None) -> int | None:
    # Rows written while counting show up as lag after it; a lag before it, as a sink behind.
    known = [lag for lag in (before, after) if lag is not None]
    return max(known) if known else None


def _hashes(source: db.HashProbe, sink: db.HashProbe) -> tuple[bool, bool]:
    """(md5, record): the portable hash unless both servers' fast hashes agree, and values
    hashed natively only where their record hashes agree too."""
    fast = source.text is not None and source.text == sink.text
    return not fast, fast and source.record is not None and source.record == sink.record


def table_queries(
    pair: TablePair,
    src: TableInfo,
    dst: TableInfo,
    filters: Filters,
    deep: bool,
    md5: bool = False,
    record: bool = False,
) -> tuple[TableQuery, TableQuery]:
    """What each side counts and hashes: the columns both tables have (the generator's field
    intersection, from the live tables), keyed by the source's primary key."""
    columns = tuple(c for c in src.columns if c in dst.columns)
    key = src.primary_key
    if deep and not key:
        raise HephaestusError(f"{pair.source} has no primary key: --deep compares by key")
    if deep and set(key) != set(dst.primary_key):
        raise HephaestusError(
            f"primary keys differ: {pair.source} ({', '.join(key)}) vs "
            f"{pair.sink} ({', '.join(dst.primary_key) or 'none'})"
        )
    # Ranges must cut both sides alike: text keys of differing collations order in "C".
    collate = frozenset(
        k
        for k in key
        if None not in (src.collations.get(k), dst.collations.get(k)) and src.collations.get(k) != dst.collations.get(k)
    )
    native = frozenset(c for c in columns if _native(c, src, dst)) if record and not md5 else frozenset()
    return (
        TableQuery(pair.source.table, key, columns, filters.source, collate, md5, native, pair.source.query),
        TableQuery(pair.sink.table, key, columns, filters.sink, collate, md5, native),
    )


def _native(column: str, src: TableInfo, dst: TableInfo) -> bool:
    """Hashed as a value on both sides: one built-in type, and for text one collation."""
    kind = src.types.get(column)
    return (
        kind in NATIVE_TYPES
        and kind == dst.types.get(column)
        and src.collations.get(column) == dst.collations.get(column)
    )


def concurrently(f: Callable[[], T], g: Callable[[], U]) -> tuple[T, U]:
    """Both sides at once: each has its own connection, and the wait is the database's."""
    with ThreadPoolExecutor(1, thread_name_prefix="accuracy-source") as pool:
        first = pool.submit(f)
        second = g()
        return first.result(), second
