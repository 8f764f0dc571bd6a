"""A project's lineage, joined up (pure): source tables → sources → topics → ksqlDB streams
and tables → sinks → target tables, over every cluster given.

Topics are one namespace across the project's clusters (they share their Kafka, as the
example project's do): a topic a source of one cluster writes and a sink of another reads is
one node. A topic is known when a source writes it by name, a sink lists it, or a ksqlDB
object reads or writes it; a `topics.regex` sink and a source's pattern join the known topics
they match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hephaestus.graph import connectors as conn
from hephaestus.graph.connectors import DbKey, Role, table_id, topic_id
from hephaestus.graph.ksqlflow import Flow, Relation, cluster_label, flow
from hephaestus.graph.model import DeclaredConnector, Edge, KsqlStatement, Lineage, Node
from hephaestus.safety.values import NO_RESOLVER, Resolver


@dataclass
class _Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: dict[str, Edge] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, node: Node) -> str:
        self.nodes.setdefault(node.id, node)
        return node.id

    def link(self, source: str, target: str, via: str = "") -> None:
        edge = Edge(source, target, via)
        self.edges.setdefault(edge.id, edge)


def build(
    connectors: Sequence[DeclaredConnector],
    statements: Sequence[KsqlStatement] = (),
    resolve: Resolver = NO_RESOLVER,
    dbs: Mapping[DbKey, str] | None = None,
) -> Lineage:
    """The lineage of `connectors` (every cluster's, git's desired state) and of the ksqlDB
    migrations' `statements` (in the order they run)."""
    dbs = dbs or {}
    ksql = flow(statements)
    everyone = [*connectors, *ksql.connectors.values()]
    roles = [(c, conn.role(c, resolve, dbs)) for c in everyone]
    known = _known_topics(roles, ksql)
    g = _Graph()
    for c, r in roles:
        if r.node.kind == "source":
            _source(g, r, known)
        else:
            _sink(g, c, r, known, resolve, dbs)
    _ksql(g, ksql, _read_topics(roles, ksql, known))
    _orphans(g)
    nodes = tuple(sorted(g.nodes.values(), key=lambda n: n.id))
    edges = tuple(sorted(g.edges.values(), key=lambda e: (e.source, e.target, e.via)))
    return Lineage(nodes, edges, tuple(g.warnings))


def _known_topics(roles: Sequence[tuple[DeclaredConnector, Role]], ksql: Flow) -> frozenset[str]:
    found = {t for _, r in roles for t in (*(r.writes or {}), *r.topics)}
    found |= {r.topic for r in ksql.relations.values()}
    return frozenset(found)


def _source(g: _Graph, r: Role, known: frozenset[str]) -> None:
    g.add(r.node)
    for t in r.tables:
        g.link(g.add(t), r.node.id)
    for topic, table in conn.written(r, known).items():
        g.link(r.node.id, g.add(_topic(topic)), table)


def _sink(
    g: _Graph, c: DeclaredConnector, r: Role, known: frozenset[str], resolve: Resolver, dbs: Mapping[DbKey, str]
) -> None:
    topics = conn.reads(r, known)
    node, out = conn.targets(r, c.config, topics, resolve, dbs)
    g.add(node)
    for topic in topics:
        g.link(g.add(_topic(topic)), node.id)
    if r.regex and not topics:
        g.warnings.append(f"sink {c.name} ({c.cluster}): its topics.regex {r.regex!r} matches no topic known in git")
        pattern = Node(topic_id("~" + r.regex), "topic", r.regex, detail="topics.regex matching no known topic")
        g.link(g.add(pattern), node.id)
    for table, e in out:
        g.link(e.source, g.add(table), e.via)


def _read_topics(roles: Sequence[tuple[DeclaredConnector, Role]], ksql: Flow, known: frozenset[str]) -> frozenset[str]:
    """Topics something reads: a sink, or a ksqlDB stream or table declared over one."""
    sinks = {t for _, r in roles if r.node.kind == "sink" for t in conn.reads(r, known)}
    return frozenset(sinks | {r.topic for r in ksql.relations.values() if not r.reads})


def _ksql(g: _Graph, ksql: Flow, read: frozenset[str]) -> None:
    """Streams and tables: over a topic, or a query of others. A query's own topic is drawn
    when something reads it (a sink, another stream): ksqlDB's inner steps stay one hop."""
    for (cluster, _), rel in sorted(ksql.relations.items()):
        node = g.add(_relation(rel))
        if not rel.reads:
            g.link(g.add(_topic(rel.topic)), node)
            continue
        for name in rel.reads:
            g.link(g.add(_relation_ref(ksql, cluster, name)), node)
        if rel.topic in read:
            g.link(node, g.add(_topic(rel.topic)))
    for cluster, into, reads in ksql.inserts:
        for name in reads:
            g.link(g.add(_relation_ref(ksql, cluster, name)), relation_id(cluster, into))


def _orphans(g: _Graph) -> None:
    written = {e.target for e in g.edges.values()}
    for node in sorted(g.nodes.values(), key=lambda n: n.id):
        if node.kind == "topic" and node.id not in written and not node.id.startswith("topic:~"):
            g.warnings.append(f"topic {node.label}: read in git, written by nothing in git")


def relation_id(cluster: str, name: str) -> str:
    return f"ksql:{cluster}/{name}"


def _relation(rel: Relation) -> Node:
    return Node(
        relation_id(rel.cluster, rel.name),
        "stream",
        rel.name,
        cluster=cluster_label(rel.cluster),
        detail=f"ksqlDB {rel.what} (topic {rel.topic})",
        origin=rel.origin,
    )


def _relation_ref(ksql: Flow, cluster: str, name: str) -> Node:
    found = ksql.relations.get((cluster, name))
    if found is not None:
        return _relation(found)
    detail = "ksqlDB stream or table that no migration creates"
    return Node(relation_id(cluster, name), "stream", name, cluster=cluster_label(cluster), detail=detail)


def _topic(name: str) -> Node:
    return Node(topic_id(name), "topic", name, detail="Kafka topic")


__all__ = ["build", "relation_id", "table_id", "topic_id"]
