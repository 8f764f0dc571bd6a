"""The ksql commands over the clusters of a project: read and check every input first, then
talk to each cluster in turn.

`prepare` scans every selected cluster's folder and compiles every migration file before any
server is contacted: a bad folder (a duplicate version) stops the run before anything is
written anywhere. A file that does not parse (an unterminated string, a SELECT) stops it too
(`hephaestus validate`), except for `ksql apply`, which keeps it with its failure and records
it as ERROR when it comes to that file, as ksql-migrations does. Undo files
(`U<version>__<name>.sql`) are compiled by `hephaestus validate` and `ksql undo`, and one that
does not parse always stops the run: an undo never starts on a file it cannot finish.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace

from hephaestus.errors import HephaestusError
from hephaestus.ksql import apply as applying
from hephaestus.ksql import operations
from hephaestus.ksql import undo as undoing
from hephaestus.ksql.compiler import CompiledMigration, compile_file
from hephaestus.ksql.errors import KsqlError
from hephaestus.ksql.files import Scan, scan
from hephaestus.ksql.session import KsqlFactory, names_of, open_client
from hephaestus.ksql.store import MetadataStore
from hephaestus.project import KsqlDB, Project
from hephaestus.state.backend import journal_for, timeout_of, urls_lock
from hephaestus.state.lock import new_run_id

_log = logging.getLogger("hephaestus.ksql")


@dataclass(frozen=True)
class PreparedCluster:
    cluster: KsqlDB
    scan: Scan
    compiled: Mapping[int, CompiledMigration]
    undo: Mapping[int, CompiledMigration] = field(default_factory=dict)  # the U files, by version


def prepare(
    clusters: list[KsqlDB],
    defines: Mapping[str, str],
    *,
    parse: bool = True,
    defer_failures: bool = False,
    undo: bool | None = None,
) -> list[PreparedCluster]:
    """Every cluster's files, compiled (for apply) or only listed and checksummed (info, validate).
    A file that does not parse raises its ParseFailure, unless `defer_failures` (ksql apply):
    then it is kept, for apply to record when it comes to that file. `undo` compiles the undo
    files too (default: when parsing without deferring, as `hephaestus validate` does); one that
    does not parse always raises."""
    with_undo = parse and not defer_failures if undo is None else undo
    return [_prepare(c, defines, parse, defer_failures, with_undo) for c in clusters]


def _prepare(cluster: KsqlDB, defines: Mapping[str, str], parse: bool, defer: bool, with_undo: bool) -> PreparedCluster:
    found = scan(cluster.migrations)
    for name in found.skipped:
        _log.warning(
            "%s: skipping %s: not named V<6 digits>__<name>.sql (nor U… for its undo)", cluster.migrations, name
        )
    compiled = {f.version: compile_file(f, defines) for f in found.files} if parse else {}
    failed = [c.failure for c in compiled.values() if c.failure is not None]
    if failed and not defer:
        raise failed[0]
    undo_files = [u for f in found.files if with_undo and (u := f.undo_file()) is not None]
    undo = {u.version: compile_file(u, defines) for u in undo_files}
    if broken := [c.failure for c in undo.values() if c.failure is not None]:
        raise broken[0]
    return PreparedCluster(cluster, found, compiled, undo)


def locked(
    project: Project, clusters: Sequence[KsqlDB], command: str, timeout_s: float | None
) -> AbstractContextManager[None]:
    """One actor per ksqlDB cluster, like the Connect clusters (state.lock): the locks of
    `clusters`, waited for up to --lock-timeout (else the project's lock.timeout_s)."""
    return urls_lock(project, "ksqldb", [c.url for c in clusters], command, timeout_of(project, timeout_s))


def init(
    project: Project,
    clusters: list[KsqlDB],
    lock_timeout_s: float | None = None,
    client_factory: KsqlFactory = open_client,
) -> Iterator[operations.InitResult]:
    """Under the clusters' locks, cluster by cluster."""
    with locked(project, clusters, "ksql init", lock_timeout_s):
        for cluster in clusters:
            with client_factory(cluster) as client:
                yield operations.init(client, names_of(cluster))


def apply(
    project: Project,
    prepared: list[PreparedCluster],
    options: applying.KsqlApplyOptions,
    lock_timeout_s: float | None = None,
    client_factory: KsqlFactory = open_client,
) -> Iterator[applying.ApplyResult]:
    """Cluster by cluster under their locks (a dry run takes none), yielding each result as it
    is done; a failure stops the run."""
    clusters = [p.cluster for p in prepared]
    with nullcontext() if options.dry_run else locked(project, clusters, "ksql apply", lock_timeout_s):
        for p in prepared:
            with client_factory(p.cluster) as client, _dry_run_reads(options.dry_run):
                with _audited(project, p.cluster, "ksql-apply", options.dry_run) as audit:
                    store = MetadataStore(client, names_of(p.cluster))
                    result = applying.apply(store, p.scan, p.compiled, replace(options, audit=audit))
            yield result


def undo(
    project: Project,
    prepared: list[PreparedCluster],
    options: undoing.UndoOptions,
    lock_timeout_s: float | None = None,
    client_factory: KsqlFactory = open_client,
) -> Iterator[undoing.UndoResult]:
    """As `apply`: cluster by cluster under their locks (a dry run takes none, and only reads)."""
    clusters = [p.cluster for p in prepared]
    with nullcontext() if options.dry_run else locked(project, clusters, "ksql undo", lock_timeout_s):
        for p in prepared:
            with client_factory(p.cluster) as client, _dry_run_reads(options.dry_run):
                with _audited(project, p.cluster, "ksql-undo", options.dry_run) as audit:
                    result = undoing.undo(
                        MetadataStore(client, names_of(p.cluster)), p.scan, p.undo, replace(options, audit=audit)
                    )
            yield result


@contextmanager
def _audited(project: Project, cluster: KsqlDB, action: str, dry_run: bool) -> Iterator[applying.Audit]:
    """The project's audit log for one ksqlDB cluster (as `ksqldb <name>`): each file's intent
    before its first write, then its outcome. Checked first: a run that cannot be audited sends
    nothing. A dry run writes no record."""
    if dry_run:
        yield lambda *event: None
        return
    with journal_for(project, f"ksqldb {cluster.name}", new_run_id()) as journal:
        journal.check()
        yield lambda file, outcome, detail: journal.event(file, action, outcome, detail)


@contextmanager
def _dry_run_reads(dry_run: bool) -> Iterator[None]:
    """A dry run still reads the server (the metadata's applied versions, as ksql-migrations'
    dry run does: ApplyMigrationCommand.command, in confluentinc/ksql); if it does not answer,
    one line says so and why the dry run needs it."""
    try:
        yield
    except KsqlError as exc:
        if not dry_run or exc.status is not None:
            raise
        raise Unreachable(
            f"ksqlDB '{exc.call.cluster}' at {exc.call.server} did not answer ({exc.server_message}): "
            "--dry-run needs it to read the applied versions (it writes nothing)"
        ) from None


class Unreachable(HephaestusError):
    """The server a dry run must read did not answer."""


def info(prepared: list[PreparedCluster], client_factory: KsqlFactory = open_client) -> Iterator[operations.InfoResult]:
    for p in prepared:
        with client_factory(p.cluster) as client:
            yield operations.info(client, names_of(p.cluster), p.scan)


def validate(
    prepared: list[PreparedCluster], client_factory: KsqlFactory = open_client
) -> Iterator[operations.ValidateResult]:
    for p in prepared:
        with client_factory(p.cluster) as client:
            yield operations.validate(client, names_of(p.cluster), p.scan)
