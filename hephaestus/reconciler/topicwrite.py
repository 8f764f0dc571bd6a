"""The topics a sink needs, created just before the sink is sent (executor: Kafka admin).

A sink's needed topics (`reconciler.sinktopics`) are created as their source would create them:
each creation passes the one gate (`safety.gate.check`: a topic created deletes nothing, so it
holds no destructive effect), is journaled before (intent) and after (its outcome) under the
sink's name, and "already exists" is done (the source won the race). A topic that could not be
created fails its sink's step only ("not applied: …").
"""

from __future__ import annotations

from dataclasses import dataclass

from hephaestus import kafka
from hephaestus.errors import HephaestusError
from hephaestus.project import Cluster
from hephaestus.reconciler.journal import StepJournal
from hephaestus.reconciler.plan import Need, Plan, Step
from hephaestus.safety import gate
from hephaestus.safety.gate import Cleared


@dataclass(frozen=True)
class Maker:
    cluster: str
    bootstrap: str
    needs: tuple[Need, ...]
    journal: StepJournal

    def before(self, step: Step) -> str:
        """ "" once the topics `step` needs exist (or it needs none); else why they do not."""
        try:
            failed = [why for n in self.needs if n.sink == step.name and (why := self._made(n))]
        except HephaestusError as exc:  # refused by the gate, or the journal refused the intent
            return str(exc)
        return "; ".join(failed)

    def _made(self, need: Need) -> str:
        cleared: Cleared = gate.check([gate.Item(self.cluster, f"topic {t}", "create-topic") for t in need.topics])
        topics = [
            kafka.NewTopic(t, need.partitions, need.replication, need.config)
            for t in need.topics
            if f"topic {t}" in cleared.names()
        ]
        for t in topics:
            self.journal.topic(need, t.name, "intent", "")
        done, failed = kafka.create_topics(self.bootstrap, topics)
        for name, detail in (*done.items(), *failed.items()):
            self.journal.topic(need, name, "ok" if name in done else "failed", detail)
        return "; ".join(f"topic {t} not created: {why}" for t, why in sorted(failed.items()))


def maker(cluster: Cluster, p: Plan, journal: StepJournal) -> Maker | None:
    """The plan's topic maker: none when no sink needs a topic (or Kafka is not named)."""
    if not p.needs or not cluster.kafka_bootstrap:
        return None
    return Maker(cluster.name, cluster.kafka_bootstrap, p.needs, journal)
