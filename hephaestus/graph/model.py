"""The lineage of a project as values (pure): nodes, edges, what each connector's cluster said
when it was read, and the paths through a node.

Nodes are database tables (read by a source, or written by a sink, or both), connectors
(Debezium sources, JDBC sinks, and the connectors a ksqlDB migration declares), Kafka topics,
and ksqlDB streams and tables. An edge leaving a source names the table its records come
from (`via`), and an edge leaving a sink the topic its rows come from: so the path through a
source that captures ten tables, or a sink that reads ten topics, is the one table's or the one
topic's, not all ten (`Lineage.path`). The page draws the same paths (graph/app.js).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["table", "source", "topic", "stream", "sink"]
KINDS: tuple[Kind, ...] = ("table", "source", "topic", "stream", "sink")
CONNECTORS: frozenset[Kind] = frozenset({"source", "sink"})


@dataclass(frozen=True)
class DeclaredConnector:
    """A connector as git declares it: a Connect cluster's file, or a ksqlDB migration's
    CREATE … CONNECTOR (`cluster` is then `ksqldb <name>`)."""

    cluster: str
    name: str
    config: Mapping[str, str] = field(hash=False)
    origin: str = ""  # the file (and line) that declares it
    state: str = ""  # the state git asks for (RUNNING, PAUSED, STOPPED); "" unmanaged or unknown


@dataclass(frozen=True)
class KsqlStatement:
    """One statement of a ksqlDB migration, its variables substituted (ksql.compiler's text)."""

    cluster: str  # the ksqlDB cluster's name in the project file
    text: str
    origin: str = ""  # file:line


@dataclass(frozen=True)
class Node:
    id: str
    kind: Kind
    label: str
    cluster: str = ""  # connectors and ksqlDB objects: where they run
    database: str = ""  # tables and connectors: the database read or written
    state: str = ""  # connectors: the state git asks for
    detail: str = ""  # what kind of thing it is, in words ("Debezium PostgreSQL source", "ksqlDB TABLE")
    origin: str = ""
    config: tuple[tuple[str, str], ...] = ()  # connectors: their config, secrets masked


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    via: str = ""  # out of a connector: the node upstream of it this edge carries (a table, a topic)

    @property
    def id(self) -> str:
        return f"{self.source}\x1f{self.target}\x1f{self.via}"


@dataclass(frozen=True)
class Lineage:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    warnings: tuple[str, ...] = ()

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)

    def ids(self, kind: Kind) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes if n.kind == kind)

    def path(self, node_id: str) -> frozenset[str]:
        """Every node upstream and downstream of `node_id` (itself included), through connectors
        only along the edge's `via`."""
        return upstream(self.edges, node_id) | downstream(self.edges, node_id)


def upstream(edges: Iterable[Edge], start: str) -> frozenset[str]:
    """Nodes `start` reads from, however indirectly. At a node reached by an edge with a `via`,
    only the edge from that `via` goes on upstream."""
    into: dict[str, list[Edge]] = {}
    for e in edges:
        into.setdefault(e.target, []).append(e)
    seen = {(start, "")}
    queue = deque([(start, "")])
    while queue:
        node, only = queue.popleft()
        for e in into.get(node, ()):
            if only and e.source != only:
                continue
            step = (e.source, e.via)
            if step not in seen:
                seen.add(step)
                queue.append(step)
    return frozenset(n for n, _ in seen)


def downstream(edges: Iterable[Edge], start: str) -> frozenset[str]:
    """Nodes that read from `start`, however indirectly. Leaving a node entered from X, only
    the edges whose `via` is X (or that have none) go on."""
    out: dict[str, list[Edge]] = {}
    for e in edges:
        out.setdefault(e.source, []).append(e)
    seen = {(start, "")}
    queue = deque([(start, "")])
    while queue:
        node, came_from = queue.popleft()
        for e in out.get(node, ()):
            if came_from and e.via and e.via != came_from:
                continue
            step = (e.target, node)
            if step not in seen:
                seen.add(step)
                queue.append(step)
    return frozenset(n for n, _ in seen)


@dataclass(frozen=True)
class Health:
    """A connector as its cluster answered (`hephaestus status`'s view of it)."""

    state: str
    tasks: tuple[tuple[int, str], ...] = ()
    problems: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()  # consumer lag, DLQ records, slot WAL retained …

    @property
    def healthy(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class RecordedChange:
    """The last change the audit journal records of a connector (an outcome, not an intent)."""

    ts: str
    action: str
    outcome: str
    run_id: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Overlay:
    """What `--live` read: each connector node's health and last change, the clusters that
    could not be read, and what else went wrong."""

    health: Mapping[str, Health] = field(default_factory=dict, hash=False)
    changes: Mapping[str, RecordedChange] = field(default_factory=dict, hash=False)
    unreadable: Mapping[str, str] = field(default_factory=dict, hash=False)  # cluster → why
    errors: tuple[str, ...] = ()
