"""From the project file's `ksqldb:` section to clients and metadata names."""

from __future__ import annotations

import httpx

from hephaestus.errors import InputError
from hephaestus.ksql.client import KsqlClient, RetryPolicy
from hephaestus.tls import verify_for
from hephaestus.ksql.metadata import Names
from hephaestus.project import KsqlDB, Project


def select(project: Project, names: tuple[str, ...]) -> list[KsqlDB]:
    """The named ksqlDB clusters (all when none named); an unknown name is an error."""
    if not project.ksqldb:
        raise InputError(project.file, "no ksqlDB clusters: add a `ksqldb:` section", field="ksqldb")
    unknown = [n for n in names if n not in project.ksqldb]
    if unknown:
        raise InputError(project.file, f"no ksqlDB cluster {unknown[0]!r} (have: {', '.join(project.ksqldb)})",
                         field="ksqldb")
    return [k for n, k in project.ksqldb.items() if not names or n in names]


def names_of(cluster: KsqlDB) -> Names:
    return Names(cluster.stream, cluster.table, cluster.stream_topic or "", cluster.table_topic or "",
                 cluster.replicas)


def open_client(cluster: KsqlDB, *, transport: httpx.BaseTransport | None = None,
                retry: RetryPolicy = RetryPolicy()) -> KsqlClient:
    return KsqlClient(cluster.url, name=cluster.name, auth=cluster.auth(), verify=verify_for(cluster.verify_tls, f"ksqlDB '{cluster.name}'"),
                      timeout=cluster.timeout_s, transport=transport, retry=retry)
