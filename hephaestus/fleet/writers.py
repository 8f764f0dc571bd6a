"""Which source writes a topic (pure): a Debezium source's topic namespace and the tables its
include list captures. Reconcile (a sink's missing topics, a back-fill's source), the graph
(a topic known elsewhere) and the freshness probe (which source a sink's probe comes from)
read writers the same way."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hephaestus.fleet.sources import captured
from hephaestus.safety import views
from hephaestus.safety.values import Resolver


@dataclass(frozen=True)
class TopicWriter:
    name: str
    namespace: str
    config: Mapping[str, str]
    delimiter: str = "."
    tables: tuple[str, ...] = ()  # its table.include.list (regexes); empty: every table

    def writes(self, topic: str) -> bool:
        """Under its namespace, and a table it captures: a typo in the table part is not its."""
        if not topic.startswith(self.namespace):
            return False
        table = topic[len(self.namespace) :].replace(self.delimiter, ".")
        return not self.tables or any(_full(pattern, table) for pattern in self.tables)


def _full(pattern: str, table: str) -> bool:
    # Debezium matches include lists whole and without case; a pattern Python cannot read
    # counts as a match (nothing refused on a guess).
    try:
        return re.fullmatch(pattern, table, re.IGNORECASE) is not None
    except re.error:
        return True


def writers_of(configs: Mapping[str, Mapping[str, str]], resolve: Resolver) -> list[TopicWriter]:
    """The Debezium sources among `configs` that name their topics, as writers, sorted by name."""
    found = []
    for name, config in sorted(configs.items()):
        if not views.is_source(config):
            continue
        source = views.source(config, resolve)
        if namespace := views.namespace(config, source):
            found.append(TopicWriter(name, namespace, config, source.naming[0], tuple(captured(config))))
    return found
