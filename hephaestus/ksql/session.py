"""From the project file's `ksqldb:` section to clients and metadata names."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from hephaestus.ksql.client import KsqlClient, KsqlRetryPolicy
from hephaestus.ksql.metadata import Names
from hephaestus.project import KsqlDB


def names_of(cluster: KsqlDB) -> Names:
    return Names(cluster.stream, cluster.table, cluster.stream_topic or "", cluster.table_topic or "", cluster.replicas)


# The one way clients are injected, as for Connect (`clients.ClientFactory`): a factory of the
# client for a cluster, defaulting to the real one; tests pass one with a transport or retry.
KsqlFactory = Callable[[KsqlDB], KsqlClient]


def open_client(
    cluster: KsqlDB, *, transport: httpx.BaseTransport | None = None, retry: KsqlRetryPolicy = KsqlRetryPolicy()
) -> KsqlClient:
    return KsqlClient(
        cluster.url,
        name=cluster.name,
        auth=cluster.auth(),
        verify=cluster.verify_tls,
        timeout=cluster.timeout_s,
        transport=transport,
        retry=retry,
    )


def open_reader(cluster: KsqlDB) -> KsqlClient:
    """The client of a dry run: each request is sent once. A dry run writes nothing, so a rerun
    costs nothing, and a server that does not answer fails it at once instead of after the
    backoff (about 8 s); a server still starting (503, error 50302) is waited for as always."""
    return open_client(cluster, retry=KsqlRetryPolicy(attempts=1))
