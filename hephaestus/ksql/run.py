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

import httpx

from hephaestus.ksql import apply as applying
from hephaestus.ksql import operations
from hephaestus.ksql.client import RetryPolicy
from hephaestus.ksql.compiler import CompiledMigration, compile_migration
from hephaestus.ksql.files import Scan, scan
from hephaestus.ksql.session import names_of, open_client
from hephaestus.ksql.store import MetadataStore
from hephaestus.project import KsqlDB

_log = logging.getLogger("hephaestus.ksql")


@dataclass(frozen=True)
class Prepared:
    cluster: KsqlDB
    scan: Scan
    compiled: Mapping[int, CompiledMigration]


@dataclass(frozen=True)
class Connection:
    """How to reach the servers: tests pass an immediate retry policy or a transport."""

    retry: RetryPolicy = RetryPolicy()
    transport: httpx.BaseTransport | None = None


def prepare(clusters: list[KsqlDB], defines: Mapping[str, str], *, parse: bool = True) -> list[Prepared]:
    """Every cluster's files, compiled (for apply) or only listed and checksummed (info, validate)."""
    return [_prepare(c, defines, parse) for c in clusters]


def _prepare(cluster: KsqlDB, defines: Mapping[str, str], parse: bool) -> Prepared:
    found = scan(cluster.migrations)
    for name in found.skipped:
        _log.warning("%s: skipping %s: not named V<6 digits>__<name>.sql", cluster.migrations, name)
    compiled = {f.version: compile_migration(f, f.read(), defines) for f in found.files} if parse else {}
    return Prepared(cluster, found, compiled)


def init(clusters: list[KsqlDB], conn: Connection = Connection()) -> Iterator[operations.InitResult]:
    for cluster in clusters:
        with open_client(cluster, transport=conn.transport, retry=conn.retry) as client:
            yield operations.init(client, names_of(cluster))


def apply(
    prepared: list[Prepared], options: applying.Options, conn: Connection = Connection()
) -> Iterator[applying.ApplyResult]:
    """Cluster by cluster, yielding each result as it is done; a failure stops the run."""
    for p in prepared:
        with open_client(p.cluster, transport=conn.transport, retry=conn.retry) as client:
            yield applying.apply(MetadataStore(client, names_of(p.cluster)), p.scan, p.compiled, options)


def info(prepared: list[Prepared], conn: Connection = Connection()) -> Iterator[operations.InfoResult]:
    for p in prepared:
        with open_client(p.cluster, transport=conn.transport, retry=conn.retry) as client:
            yield operations.info(client, names_of(p.cluster), p.scan)


def validate(prepared: list[Prepared], conn: Connection = Connection()) -> Iterator[operations.ValidateResult]:
    for p in prepared:
        with open_client(p.cluster, transport=conn.transport, retry=conn.retry) as client:
            yield operations.validate(client, names_of(p.cluster), p.scan)
