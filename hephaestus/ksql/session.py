"""From the project file's `ksqldb:` section to clients and metadata names."""

from __future__ import annotations

import httpx

from hephaestus.ksql.client import KsqlClient, RetryPolicy
from hephaestus.ksql.metadata import Names
from hephaestus.project import KsqlDB
from hephaestus.tls import verify_for


def names_of(cluster: KsqlDB) -> Names:
    return Names(cluster.stream, cluster.table, cluster.stream_topic or "", cluster.table_topic or "", cluster.replicas)


def open_client(
    cluster: KsqlDB, *, transport: httpx.BaseTransport | None = None, retry: RetryPolicy = RetryPolicy()
) -> KsqlClient:
    return KsqlClient(
        cluster.url,
        name=cluster.name,
        auth=cluster.auth(),
        verify=verify_for(cluster.verify_tls, f"ksqlDB '{cluster.name}'", cluster.url),
        timeout=cluster.timeout_s,
        transport=transport,
        retry=retry,
    )
