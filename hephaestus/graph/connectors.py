"""What each connector reads and writes, from its config (pure): a source's tables and the
topics it writes them to, a sink's topics and the tables it writes them into.

A source's topic for a table is its `topic.prefix`, the table, the delimiter between, through
its RegexRouters (`safety.transforms.routed`, as Kafka routes); a `table.include.list` entry
that is a pattern writes the known topics it matches (`fleet.writers.TopicWriter`, as
`reconcile` checks a sink's topics). A sink reads its `topics`, or the known topics its
`topics.regex` matches whole, and writes each into the table `safety.views.tables` says
(its `collection.name.format`, routers included). Databases are named as the project file
names them when the host, port and database match one of its `databases:`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from hephaestus.fleet.sources import qualified
from hephaestus.fleet.writers import TopicWriter
from hephaestus.graph.model import DeclaredConnector, Edge, Kind, Node
from hephaestus.safety import transforms, views
from hephaestus.safety.values import Ref, Resolver, Value, known
from hephaestus.secrets import mask_config

DbKey = tuple[str, str, str]  # host (lower case), port, database name
_PATTERN_CHARS = re.compile(r"[\\^$*+?()\[\]{}|]")
_URL = re.compile(r"^postgresql://([^/:]+):(\d+)/(.*)$")
_KEY = re.compile(r"\$\{[^}]*:([^:}]+)\}")
_URL_SUFFIX = re.compile(r"[_.-](jdbc[_.-])?url$", re.IGNORECASE)


@dataclass(frozen=True)
class Role:
    """One connector's part in the lineage, before topics are joined up."""

    node: Node
    tables: tuple[Node, ...] = ()  # a source's tables
    writes: Mapping[str, str] | None = None  # a source's topic → the table node it comes from
    writer: TopicWriter | None = None  # a source's namespace, for topics known elsewhere
    topics: tuple[str, ...] = ()  # a sink's topics, as listed
    regex: str = ""  # a sink's topics.regex


def table_id(database: str, table: str) -> str:
    return f"table:{database}/{table}"


def table_node(database: str, table: str) -> Node:
    detail = f"table of database {database}"
    return Node(table_id(database, table), "table", f"{database}.{table}", database=database, detail=detail)


def topic_id(topic: str) -> str:
    return f"topic:{topic}"


def connector_id(cluster: str, name: str) -> str:
    return f"connector:{cluster}/{name}"


def kind_of(config: Mapping[str, str]) -> Kind:
    """The JDBC sinks and Debezium's PostgreSQL source by class; another plugin by the word in
    its class name, else by whether it reads `topics` (what Connect requires of a sink)."""
    cls = config.get("connector.class", "").strip().rsplit(".", 1)[-1].lower()
    if views.is_sink(config) or (not views.is_source(config) and "sink" in cls):
        return "sink"
    if views.is_source(config) or "source" in cls:
        return "source"
    return "sink" if "topics" in config or "topics.regex" in config else "source"


def role(c: DeclaredConnector, resolve: Resolver, dbs: Mapping[DbKey, str]) -> Role:
    kind = kind_of(c.config)
    node = Node(
        connector_id(c.cluster, c.name),
        kind,
        c.name,
        cluster=c.cluster,
        state=c.state,
        detail=_detail(c.config, kind),
        origin=c.origin,
        config=tuple(sorted(mask_config(c.config).items())),
    )
    return _source(node, c.config, resolve, dbs) if kind == "source" else _sink(node, c.config)


def _detail(config: Mapping[str, str], kind: Kind) -> str:
    cls = config.get("connector.class", "").strip()
    return f"{kind}: {cls}" if cls else kind


def _source(node: Node, config: Mapping[str, str], resolve: Resolver, dbs: Mapping[DbKey, str]) -> Role:
    database = _source_database(config, resolve, dbs)
    postgres = views.is_source(config)
    # The freshness probe's table is no lineage: its freshness shows in the overlay instead.
    entries = [t for t in _listed(config, "table.include.list") if not views.probe_named(t)]
    tables = [qualified(t) if postgres and not _PATTERN_CHARS.search(t) else t for t in entries] or ["*"]
    nodes = {t: table_node(database, t) for t in tables}
    prefix = known(resolve(config.get("topic.prefix")))
    delimiter = config.get("topic.delimiter", ".")
    writes = {}
    for t in tables:
        if prefix and t != "*" and not _PATTERN_CHARS.search(t):
            if topic := transforms.routed(config, prefix + delimiter + t.replace(".", delimiter)):
                writes[topic] = nodes[t].id
    namespace = views.namespace(config, views.source(config, resolve)) if postgres else None
    patterns = tuple(t for t in tables if t != "*")
    writer = TopicWriter(node.id, namespace, config, delimiter, patterns) if namespace else None
    return Role(replace(node, database=database), tuple(nodes.values()), writes, writer)


def _source_database(config: Mapping[str, str], resolve: Resolver, dbs: Mapping[DbKey, str]) -> str:
    """The project's name for it, else its database name, else its `topic.prefix` (which the
    generator sets to the database name when the name is a placeholder)."""
    host, port, name = (known(resolve(config.get(k, d))) for k, d in _SERVER)
    if host and port and name and (found := dbs.get((host.lower(), port.strip(), name))):
        return found
    return name or known(resolve(config.get("topic.prefix"))) or "?"


_SERVER = (("database.hostname", None), ("database.port", "5432"), ("database.dbname", None))


def _sink(node: Node, config: Mapping[str, str]) -> Role:
    topics = tuple(t for t in _listed(config, "topics") if not views.probe_named(t))
    return Role(node, topics=topics, regex=config.get("topics.regex", "").strip())


def _listed(config: Mapping[str, str], key: str) -> list[str]:
    return [t.strip() for t in config.get(key, "").split(",") if t.strip()]


def reads(r: Role, known_topics: frozenset[str]) -> tuple[str, ...]:
    """The topics a sink reads: those it lists, and the known ones its regex matches whole."""
    matched = sorted(t for t in known_topics if r.regex and views.regex_reads(r.regex, t))
    return tuple(dict.fromkeys((*r.topics, *matched)))


def written(r: Role, known_topics: frozenset[str]) -> dict[str, str]:
    """The topics a source writes (→ the table node each comes from): its tables' own, and the
    known topics under its namespace that one of its patterns matches."""
    found = dict(r.writes or {})
    if r.writer is None:
        return found
    for topic in sorted(known_topics - found.keys()):
        if r.writer.writes(topic):
            found[topic] = _pattern_of(r, topic)
    return found


def _pattern_of(r: Role, topic: str) -> str:
    assert r.writer is not None
    table = topic[len(r.writer.namespace) :].replace(r.writer.delimiter, ".")
    for pattern, node in zip(r.writer.tables, r.tables, strict=False):
        if _matches(pattern, table):
            return node.id
    return r.tables[0].id


def _matches(pattern: str, table: str) -> bool:
    try:
        return re.fullmatch(pattern, table, re.IGNORECASE) is not None
    except re.error:
        return True


def targets(
    r: Role, config: Mapping[str, str], topics: tuple[str, ...], resolve: Resolver, dbs: Mapping[DbKey, str]
) -> tuple[Node, list[tuple[Node, Edge]]]:
    """A sink's node with its database, and the table each topic lands in (with its edge)."""
    s = views.sink(config, resolve)
    database, postgres = _target_database(s.database, dbs)
    landing = views.tables(config, replace(s, topics=frozenset(topics)))
    out = []
    for topic, table in sorted(landing.items()):
        name = table if table is None or "." in table or not postgres else f"public.{table}"
        target = table_node(database, name or "? (routed per record)")
        out.append((target, Edge(r.node.id, target.id, topic_id(topic))))
    return replace(r.node, database=database), out


def _target_database(url: Value | None, dbs: Mapping[DbKey, str]) -> tuple[str, bool]:
    """The database a sink writes, named as its sources' side names it, so that one database is
    one name on the page; also: whether it is PostgreSQL (a project database is).

    - A JDBC URL (literal, or a placeholder resolved here): the project's name for its host,
      port and database; else the project database of that database name (the workers may
      reach it at another address than hephaestus does); else `host:port/db`.
    - A placeholder not resolved here: its key names the database. The generator writes
      `${file:…:<database>_url}` (generator.naming.secret), so the key less its `_url` is the
      project's name when one matches (case aside), else it is shown as is."""
    if url is None:
        return "", False  # no connection.url: not a JDBC sink, its target is not known here
    value = known(url)
    names = {n.lower(): n for n in dbs.values()}
    if value is None:
        raw = url.text if isinstance(url, Ref) else ""
        found = _KEY.search(raw)
        if found is None:
            return raw or "?", False
        key = _URL_SUFFIX.sub("", found.group(1)) or found.group(1)
        name = names.get(key.lower())
        return (name, True) if name else (key, False)
    match = _URL.match(value)
    if match is None:
        return value, False
    host, port, database = match.groups()
    if found_name := dbs.get((host, port, database)):
        return found_name, True
    same_name = {n for (_, _, d), n in dbs.items() if d == database}
    return (same_name.pop() if len(same_name) == 1 else f"{host}:{port}/{database}"), True
