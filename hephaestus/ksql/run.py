"""The ksql commands over the clusters of a project: read and check every input first, then
talk to each cluster in turn.

`prepare` scans every selected cluster's folder and compiles every migration file before any
server is contacted, so a bad file anywhere (a duplicate version, an unterminated string, a
SELECT) stops the run before anything is written anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hephaestus.ksql import apply as applying
from hephaestus.ksql import operations
from hephaestus.ksql.compiler import CompiledMigration, compile_migration
from hephaestus.ksql.files import Scan, scan
from hephaestus.ksql.session import KsqlFactory, names_of, open_client
from hephaestus.ksql.store import MetadataStore
from hephaestus.project import KsqlDB

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


def init(clusters: list[KsqlDB], client_factory: KsqlFactory = open_client) -> Iterator[operations.InitResult]:
    for cluster in clusters:
        with client_factory(cluster) as client:
            yield operations.init(client, names_of(cluster))


def apply(
    prepared: list[Prepared], options: applying.Options, client_factory: KsqlFactory = open_client
) -> Iterator[applying.ApplyResult]:
    """Cluster by cluster, yielding each result as it is done; a failure stops the run."""
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
