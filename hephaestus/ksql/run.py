"""The ksql commands over the clusters of a project: read and check every input first, then
talk to each cluster in turn.

`prepare` scans every selected cluster's folder and compiles every migration file before any
server is contacted, so a bad file anywhere (a duplicate version, an unterminated string, a
SELECT) stops the run before anything is written anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from hephaestus.ksql import apply as applying
from hephaestus.ksql import operations
from hephaestus.ksql.compiler import CompiledMigration, compile_migration
from hephaestus.ksql.files import Scan, scan
from hephaestus.ksql.session import KsqlFactory, names_of, open_client
from hephaestus.ksql.store import MetadataStore
from hephaestus.project import KsqlDB, Project
from hephaestus.state.backend import timeout_of, urls_lock

_log = logging.getLogger("hephaestus.ksql")


@dataclass(frozen=True)
class Prepared:
    cluster: KsqlDB
    scan: Scan
    compiled: Mapping[int, CompiledMigration]


def prepare(clusters: list[KsqlDB], defines: Mapping[str, str], *, parse: bool = True) -> list[Prepared]:
    """Every cluster's files, compiled (for apply) or only listed and checksummed (info, validate)."""
    return [_prepare(c, defines, parse) for c in clusters]


def _prepare(cluster: KsqlDB, defines: Mapping[str, str], parse: bool) -> Prepared:
    found = scan(cluster.migrations)
    for name in found.skipped:
        _log.warning("%s: skipping %s: not named V<6 digits>__<name>.sql", cluster.migrations, name)
    compiled = {f.version: compile_migration(f, f.read(), defines) for f in found.files} if parse else {}
    return Prepared(cluster, found, compiled)


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
    prepared: list[Prepared],
    options: applying.Options,
    lock_timeout_s: float | None = None,
    client_factory: KsqlFactory = open_client,
) -> Iterator[applying.ApplyResult]:
    """Cluster by cluster under their locks (a dry run takes none), yielding each result as it
    is done; a failure stops the run."""
    clusters = [p.cluster for p in prepared]
    with nullcontext() if options.dry_run else locked(project, clusters, "ksql apply", lock_timeout_s):
        for p in prepared:
            with client_factory(p.cluster) as client:
                yield applying.apply(MetadataStore(client, names_of(p.cluster)), p.scan, p.compiled, options)


def info(prepared: list[Prepared], client_factory: KsqlFactory = open_client) -> Iterator[operations.InfoResult]:
    for p in prepared:
        with client_factory(p.cluster) as client:
            yield operations.info(client, names_of(p.cluster), p.scan)


def validate(
    prepared: list[Prepared], client_factory: KsqlFactory = open_client
) -> Iterator[operations.ValidateResult]:
    for p in prepared:
        with client_factory(p.cluster) as client:
            yield operations.validate(client, names_of(p.cluster), p.scan)
