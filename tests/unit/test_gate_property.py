"""A property of the one gate, over generated pairs of live and desired Debezium source and JDBC
sink configs: a change with a destructive effect is refused without the flag, and applied with
exactly its effects allowed, through every path a change can take (update, rename, --target,
state, a saved plan, import). Writes are counted by the strict Connect double."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hephaestus.classes import CONFLUENT_SINK, DEBEZIUM_SINK, POSTGRES_SOURCE
from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.connect.ready import ReadyOptions
from hephaestus.project import Cluster, Project
from hephaestus.reconciler import sealed
from hephaestus.reconciler.apply import ApplyOptions
from hephaestus.reconciler.plan import Desired, Live, Policy, Scope
from hephaestus.reconciler.run import RunOptions, reconcile
from hephaestus.safety import effects
from hephaestus.safety.gate import allow_of
from hephaestus.state.ownership import OwnershipFile, claims_of
from tests.connect_double import ConnectDouble
from tests.unit.conftest import gated

FAST = ApplyOptions(ready=ReadyOptions(timeout_s=0.5, stable_s=0, poll_s=0.001))

SOURCE = {
    "connector.class": POSTGRES_SOURCE,
    "database.hostname": "db",
    "database.dbname": "bob",
    "slot.name": "s1",
    "topic.prefix": "bob",
    "plugin.name": "pgoutput",
    "snapshot.mode": "initial",
    "table.include.list": "public.a,public.b",
}
SINK = {
    "connector.class": DEBEZIUM_SINK,
    "connection.url": "jdbc:postgresql://db/auth",
    "topics": "bob.public.a,bob.public.b",
    "insert.mode": "upsert",
    "primary.key.mode": "record_key",
    "primary.key.fields": "id",
    "collection.name.format": "${topic}",
}
# Values a change may set a key to: spellings the plugins read alike or apart, placeholders.
SOURCE_VALUES: dict[str, list[str | None]] = {
    "slot.name": ["s1", "s2", None, "${file:/x:slot}"],
    "topic.prefix": ["bob", "bob2"],
    "plugin.name": ["pgoutput", " PGOUTPUT", "decoderbufs", None],
    "snapshot.mode": ["initial", "INITIAL ", "always", "always ", "no_data", "when_needed", "initial_only", "custom"],
    "slot.drop.on.stop": [None, "false", "true", " TRUE"],
    "table.include.list": ["public.a,public.b", "public.a", "public.a, public.b", "public.a,public.b,public.c", None],
    "message.key.columns": [None, "public.a:id"],
    "database.dbname": ["bob", "other", "${file:/x:db}"],
    "heartbeat.interval.ms": [None, "1000"],
    "transforms": [None, "route"],
}
SINK_VALUES: dict[str, list[str | None]] = {
    "connector.class": [DEBEZIUM_SINK, CONFLUENT_SINK],
    "connection.url": [
        "jdbc:postgresql://db/auth",
        "jdbc:postgresql://DB:5432/auth?ssl=true",
        "jdbc:postgresql://db/x",
    ],
    "topics": ["bob.public.a,bob.public.b", "bob.public.a", "bob.public.a,bob.public.b,bob.public.c"],
    "insert.mode": ["upsert", "UPSERT", "upsert ", "insert", None],
    "primary.key.mode": ["record_key", "record_value", None],
    "primary.key.fields": ["id", "id,org", None],
    "collection.name.format": ["${topic}", "users", None],
    "delete.enabled": [None, "false", "true"],
    "batch.size": [None, "100"],
}
ROUTE = {
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "x.$1",
}


def changed(base: dict[str, str], values: dict[str, list[str | None]]) -> st.SearchStrategy[dict[str, str]]:
    def apply(picks: dict[str, str | None]) -> dict[str, str]:
        out = dict(base)
        for k, v in picks.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        if out.get("transforms") == "route":
            out.update(ROUTE)
        return out

    keys = st.lists(st.sampled_from(sorted(values)), min_size=1, max_size=3, unique=True)
    return keys.flatmap(lambda ks: st.fixed_dictionaries({k: st.sampled_from(values[k]) for k in ks})).map(apply)


PAIRS = st.one_of(
    st.tuples(st.just(SOURCE), changed(SOURCE, SOURCE_VALUES), st.just("source")),
    st.tuples(st.just(SINK), changed(SINK, SINK_VALUES), st.just("sink")),
)
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
MANY = settings(max_examples=300, deadline=None)


def destructive(found: tuple[effects.Effect, ...]) -> list[str]:
    return sorted({e.code for e in found if e.destructive})


@MANY
@given(PAIRS)
def test_the_plan_is_refused_iff_a_change_is_destructive_and_passes_with_exactly_its_effects(pair: Any) -> None:
    live, desired, kind = pair
    found = destructive(effects.of_update(live, desired))
    lv = {"x": Live("x", live, kind, "RUNNING")}
    scope = Scope(frozenset({"x"}))
    p = gated("c", {"x": Desired("x", desired)}, lv, Policy(), scope)
    assert bool(p.refused) == bool(found), (found, p.refused)
    if found:
        assert gated("c", {"x": Desired("x", desired)}, lv, Policy(allow=allow_of(found)), scope).refused == ""
        fewer = found[1:] or None
        assert gated("c", {"x": Desired("x", desired)}, lv, Policy(allow=allow_of(fewer)), scope).refused


def oracle(live: dict[str, str], desired: dict[str, str]) -> bool:
    """Written apart from safety.effects, from the plugins' documentation: changes that must be
    destructive (a subset: the gate may refuse more)."""
    if live["connector.class"] == POSTGRES_SOURCE:
        return _source_oracle(live, desired)
    if desired["connector.class"] != live["connector.class"]:
        return bool(_topics(live) - _topics(desired))
    return (
        _insert(live) != _insert(desired)
        or bool(_topics(live) - _topics(desired))
        or live.get("primary.key.fields") != desired.get("primary.key.fields")
        or live.get("primary.key.mode") != desired.get("primary.key.mode")
        or _norm(live, "delete.enabled", "false") != _norm(desired, "delete.enabled", "false")
        or live["connection.url"].rsplit("/", 1)[-1].split("?")[0]
        != desired["connection.url"].rsplit("/", 1)[-1].split("?")[0]
        or live.get("collection.name.format", "${topic}") != desired.get("collection.name.format", "${topic}")
    )


def _source_oracle(live: dict[str, str], desired: dict[str, str]) -> bool:
    after = {t.strip() for t in desired.get("table.include.list", "").split(",") if t.strip()}
    before = {t.strip() for t in live.get("table.include.list", "").split(",") if t.strip()}
    return (
        _norm(desired, "snapshot.mode", "initial") in ("always", "custom")  # reads every table on each start
        or live.get("slot.name", "debezium") != desired.get("slot.name", "debezium")
        or live.get("topic.prefix") != desired.get("topic.prefix")
        or _norm(live, "plugin.name", "decoderbufs") != _norm(desired, "plugin.name", "decoderbufs")
        or _norm(live, "slot.drop.on.stop", "false") == "true"  # the restart stops the old tasks
        or live.get("database.dbname") != desired.get("database.dbname")
        or live.get("message.key.columns") != desired.get("message.key.columns")
        or bool(after and before - after)
    )


def _norm(config: dict[str, str], key: str, default: str) -> str:
    return config.get(key, default).strip().lower()


def _insert(config: dict[str, str]) -> str:
    """The Debezium JDBC sink's InsertMode.parse: any case, not trimmed, else insert."""
    value = config.get("insert.mode", "insert").lower()
    return value if value in ("insert", "upsert", "update") else "insert"


def _topics(config: dict[str, str]) -> set[str]:
    return {t.strip() for t in config.get("topics", "").split(",") if t.strip()}


@MANY
@given(PAIRS)
def test_what_the_documentation_calls_destructive_is_refused(pair: Any) -> None:
    live, desired, kind = pair
    if oracle(live, desired):
        p = gated("c", {"x": Desired("x", desired)}, {"x": Live("x", live, kind)}, Policy(), Scope(frozenset({"x"})))
        assert p.refused, (live, desired)


@MANY
@given(PAIRS)
def test_a_rename_carries_the_same_judgement(pair: Any) -> None:
    live, desired, kind = pair
    found = destructive(effects.of_rename(live, desired))
    lv = {"old": Live("old", live, kind, "RUNNING")}
    p = gated("c", {"new": Desired("new", desired, renamed_from="old")}, lv, Policy(), Scope(frozenset({"old"})))
    assert [s.action for s in p.writes] == ["rename"]
    assert bool(p.refused) == bool(found), (found, p.refused)


@MANY
@given(st.sampled_from(list(SOURCE_VALUES["slot.drop.on.stop"])), st.sampled_from(["STOPPED", "PAUSED", "RUNNING"]))
def test_a_state_change_is_judged_too(drop: str | None, target: str) -> None:
    live = {**SOURCE, **({"slot.drop.on.stop": drop} if drop else {})}
    lv = {"x": Live("x", live, "source", "RUNNING")}
    p = gated("c", {"x": Desired("x", live, state=target)}, lv, Policy(), Scope(frozenset({"x"})))
    drops = target == "STOPPED" and (drop or "false").strip().lower() == "true"
    assert bool(p.refused) == drops and ("slot-dropped" in p.refused) == drops


# --- through a whole run: --target and a saved plan, writes counted by the double ----------------


class Run:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.double = ConnectDouble()
        folder = root / "connectors/c"
        for kind in ("source", "sink"):
            (folder / kind).mkdir(parents=True, exist_ok=True)
        self.project = Project("p.yaml", {"c": Cluster("c", "http://c.test:8083", folder)}, {}, base=root)
        (root / "p.yaml").write_text("clusters: {c: {url: 'http://c.test:8083', connectors: connectors/c}}\n")
        self.project = Project(str(root / "p.yaml"), self.project.clusters, {}, base=root)

    def client(self, cluster: Cluster) -> ConnectClient:
        return ConnectClient(
            cluster.url,
            transport=httpx.MockTransport(self.double),
            retry=RetryPolicy.immediate(1),
            settle_s=0,
            poll_s=0,
        )

    def setup(self, name: str, live: dict[str, str], desired: dict[str, str], kind: str) -> None:
        for p in (self.root / "connectors/c").rglob("*.json"):
            p.unlink()
        self.double.connectors.clear()
        self.double.add(name, live, type=kind)
        OwnershipFile(self.root / ".hephaestus/ownership.json").claim("default", "c", claims_of([name], "*", "t", "r"))
        (self.root / f"connectors/c/{kind}/{name}.json").write_text(json.dumps({"name": name, "config": desired}))
        self.double.log.clear()

    def run(self, **options: Any) -> Any:
        (out,) = reconcile(self.project, [self.project.clusters["c"]], RunOptions(apply=FAST, **options), self.client)
        return out


@FEW
@given(PAIRS)
def test_target_and_a_saved_plan_hold_the_same_line(tmp_path_factory: Any, pair: Any) -> None:
    live, desired, kind = pair
    found = destructive(effects.of_update(live, desired))
    run = Run(tmp_path_factory.mktemp("run"))
    writes = desired != live and not found  # a change the gate lets go is written; nothing else
    run.setup("x", live, desired, kind)
    targeted = run.run(targets=("x",))
    assert bool(targeted.refused) == bool(found) and bool(run.double.writes()) == writes
    run.setup("x", live, desired, kind)
    preview = run.run(dry_run=True)
    seal = sealed.build(run.project, [preview], sealed.PlanScope(targets=()), [run.project.clusters["c"]])
    applied = run.run(sealed=seal)
    assert bool(applied.refused) == bool(found), (found, applied.plan.refused if applied.plan else applied.error)
    assert bool(run.double.writes()) == writes


@FEW
@given(st.sampled_from(["jdbc:postgresql://u:pw-1@db/auth", "jdbc:postgresql://u:pw-2@db/other"]))
def test_an_import_that_puts_a_placeholder_in_git_is_judged_when_reconciled(tmp_path_factory: Any, url: str) -> None:
    """import --secret connection.url=… writes a placeholder; the reconcile that follows writes it
    to Connect, and that change of target is destructive: refused without the flag."""
    run = Run(tmp_path_factory.mktemp("imp"))
    live = {**SINK, "connection.url": url}
    run.setup("x", live, {**live, "connection.url": "${file:/opt/s.properties:url}"}, "sink")
    out = run.run()
    assert out.refused and "target-changed" in out.plan.refused and run.double.writes() == []
