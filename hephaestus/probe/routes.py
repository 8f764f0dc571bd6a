"""Each sink's probe path, read from the live configs (pure): a hand-edited config is judged
as it runs, not as git says.

A sink carries the probe when it reads a probe topic and tags probe records with its own name
(generator.probe). Its probe row's key is the source connector that writes that topic (the
one whose namespace and include list cover it); its databases are the source's `topic.prefix`
(or literal `database.dbname`) and the sink's `connection.url` (a JDBC URL, or the generator's
`${file:…:<database>_url}` placeholder).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from hephaestus.classes import CONFLUENT_SINK
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import source_ref
from hephaestus.fleet.topics import topics_of
from hephaestus.fleet.writers import TopicWriter, writers_of
from hephaestus.generator.probe import TAG
from hephaestus.probe.model import Route
from hephaestus.safety import views
from hephaestus.safety.values import NO_RESOLVER

_URL = re.compile(r"^jdbc:postgresql://[^/]*/([^?;]+)", re.IGNORECASE)
_SECRET = re.compile(r"^\$\{file:[^:]*:(.+)_url\}$")
Configs = Mapping[str, Mapping[str, str]]


def routes(cluster: str, configs: Configs) -> list[Route]:
    """A route per sink of the cluster; one carrying no probe says why."""
    writers = writers_of(configs, NO_RESOLVER)
    return [_route(cluster, name, config, writers) for name, config in sorted(configs.items()) if views.is_sink(config)]


def _route(cluster: str, name: str, config: Mapping[str, str], writers: list[TopicWriter]) -> Route:
    probe = probe_topic(config)
    if probe is None or config.get(f"transforms.{TAG}.static.value") != name:
        return Route(cluster, name, why=_not_carried(config))
    writer = next((w for w in writers if w.writes(probe)), None)
    if writer is None:
        return Route(cluster, name, why=f"no source on {cluster} writes its probe topic {probe}")
    data = [t for t in topics_of(config) if t != probe]
    table = data[0][len(writer.namespace) :].replace(writer.delimiter, ".") if data else ""
    return Route(cluster, name, writer.name, source_db(writer), sink_db(config), probe_schema(config), table)


def probe_topic(config: Mapping[str, str]) -> str | None:
    """The probe topic a sink reads, if any."""
    return next((t for t in topics_of(config) if views.probe_named(t)), None)


def probe_schema(config: Mapping[str, str]) -> str:
    """The schema of a probing sink's probe table: its `collection.name.format`'s (generator.probe)."""
    fmt = config.get("collection.name.format", "${topic}")
    return fmt.split(".", 1)[0] if "." in fmt else "public"


def _not_carried(config: Mapping[str, str]) -> str:
    if config.get("connector.class", "").strip() == CONFLUENT_SINK:
        return "the probe rides Debezium's JDBC sink only: Confluent's sink names one table for every topic"
    return (
        "its config carries no probe (probe off, compat: reference, a topic sink, options that set its "
        "transforms or routing, or edited): see docs/freshness.md"
    )


def source_db(writer: TopicWriter) -> str:
    try:
        return source_ref(writer.name, writer.config).database
    except HephaestusError:
        return ""


def sink_db(config: Mapping[str, str]) -> str:
    """The sink's database: from a JDBC URL, or the name the generator's secret key carries."""
    url = config.get("connection.url", "").strip()
    found = _URL.match(url) or _SECRET.match(url)
    return found.group(1) if found else ""
