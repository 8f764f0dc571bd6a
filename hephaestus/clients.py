"""The Kafka Connect client of a project cluster: one factory for every feature that talks to one."""

from __future__ import annotations

from collections.abc import Callable

from hephaestus.connect import ConnectClient
from hephaestus.project import Cluster
from hephaestus.secrets import REDACTOR

ClientFactory = Callable[[Cluster], ConnectClient]


def connect_client(cluster: Cluster) -> ConnectClient:
    """URL, basic auth (password resolved now), TLS and timeout as the project file says.
    (Credentials inside the URL, e.g. one given by url_env, are learnt by `http.client`.)"""
    if cluster.secrets_file:
        REDACTOR.learn_file(cluster.secrets_file)
    return ConnectClient(
        cluster.url, name=cluster.name, auth=cluster.auth(), verify=cluster.verify_tls, timeout=cluster.timeout_s
    )
