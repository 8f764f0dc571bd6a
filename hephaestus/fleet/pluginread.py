"""Each worker's plugins, read from the worker itself (edge; issue 50).

A Connect cluster answers `GET /connector-plugins` from whichever worker the request reaches, so
one request says nothing of the others. The workers are the ones statuses name (`worker_id`,
each worker's advertised REST host:port, for every connector and task), and the cluster's own URL
when nothing runs yet; each is asked `GET /connector-plugins?connectorsOnly=false` at its own
address, with the cluster's scheme, credentials and TLS. A worker that does not answer is named,
never taken as holding nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from urllib.parse import urlsplit

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.connect.models import ConnectorStatus, Plugin
from hephaestus.fleet.plugins import Workers
from hephaestus.project import Cluster

WORKER_TIMEOUT_S = 5.0
_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-]+):[0-9]{1,5}")


def worker_ids(cluster: Cluster, statuses: Iterable[ConnectorStatus]) -> tuple[str, ...]:
    """The workers statuses name; the cluster's URL's host:port when none runs anything yet."""
    found = {s.worker_id for s in statuses if s.worker_id} | {
        t.worker_id for s in statuses for t in s.tasks if t.worker_id
    }
    return tuple(sorted(found)) or (urlsplit(cluster.url).netloc.rpartition("@")[2],)


def read(cluster: Cluster, client: ConnectClient, factory: ClientFactory = connect_client, workers: int = 4) -> Workers:
    """Every worker of the cluster asked at once (at most `workers` at a time)."""
    try:
        statuses = client.statuses().values()
    except ConnectError as exc:
        return Workers(cluster.name, unread={cluster.url: str(exc)})
    return of_workers(cluster, worker_ids(cluster, statuses), factory, workers, bounded=False)


def of_listing(
    cluster: Cluster, listed: Mapping[str, ConnectorStatus], factory: ClientFactory = connect_client
) -> Workers:
    """The workers a listing already names (status, the exporter): no request for them; each
    asked once, bounded, as a scheduled check is."""
    return of_workers(cluster, worker_ids(cluster, listed.values()), factory, bounded=True)


def of_workers(
    cluster: Cluster, ids: tuple[str, ...], factory: ClientFactory, workers: int = 4, *, bounded: bool
) -> Workers:
    """`bounded`: each worker asked once, for at most WORKER_TIMEOUT_S (status, the exporter: a
    worker that does not answer now is named now); else with the cluster's timeout and retries
    (`plugins`, a plan's check: a worker missed under load would refuse a plan for nothing)."""
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(ids)))) as pool:
        answers = dict(zip(ids, pool.map(lambda w: _plugins(cluster, w, factory, bounded), ids), strict=True))
    return _workers(cluster.name, answers)


def _plugins(cluster: Cluster, worker: str, factory: ClientFactory, bounded: bool) -> list[Plugin] | str:
    """A worker id is what Connect answered: anything but a bare host:port (a path, credentials,
    a scheme) is not asked."""
    if not _HOST_PORT.fullmatch(worker):
        return "its worker id is not a host:port: not asked"
    url = f"{urlsplit(cluster.url).scheme}://{worker}"
    try:
        timeout = min(cluster.timeout_s, WORKER_TIMEOUT_S) if bounded else cluster.timeout_s
        with factory(replace(cluster, url=url, timeout_s=timeout)) as c:
            return c.plugins(connectors_only=False, once=bounded)
    except ConnectError as exc:
        return str(exc)


def _workers(cluster: str, answers: Mapping[str, list[Plugin] | str]) -> Workers:
    held: dict[str, dict[str, frozenset[str]]] = {}
    types: dict[str, str] = {}
    unread: dict[str, str] = {}
    unversioned: list[str] = []
    for w, found in answers.items():
        if isinstance(found, str):
            unread[w] = found
            continue
        if found and not any(p.version for p in found):
            unversioned.append(w)
        held[w] = {c: frozenset(p.version for p in found if p.class_name == c) for c in {p.class_name for p in found}}
        types |= {p.class_name: p.type for p in found}
    return Workers(cluster, held, types, unread, tuple(unversioned))
