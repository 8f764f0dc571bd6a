"""reconciler.probetables (issue 46): which probe tables a plan's writes need, and how they are
made and checked, through the PostgreSQL seam (tests/unit/pgfake.py: a statement it does not
know fails the test)."""

from __future__ import annotations

from typing import Any

import pytest

from hephaestus import pg
from hephaestus.project import Database, Project
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.probetables import ProbeTable, ensure_all, needed
from tests.unit.pgfake import Server, on
from tests.unit.test_probe import SINK, SOURCE

COLUMNS = r"FROM information_schema.columns"
SINK_COLUMNS = [(c,) for c in ("probe_source", "probe_sink", "probed_at", "probe_seq", "unpublished")]
SOURCE_COLUMNS = [(c,) for c in ("probe_source", "probed_at", "probe_seq", "unpublished", "probe_since")]


def plan(*configs: tuple[str, dict[str, str]]) -> Plan:
    return Plan("c", tuple(Step(action="create", name=n, config=c) for n, c in configs))


def test_a_plan_needs_the_table_at_its_sources_and_sinks_databases_once_each() -> None:
    other = {**SINK, "collection.name.format": "dwh.${topic}"}
    p = plan(("src", SOURCE), ("snk", SINK), ("snk2", SINK), ("snk3", other), ("plain", {"connector.class": "x"}))
    assert needed(p) == [
        ProbeTable("auth", "dwh", "sink", "snk3"),
        ProbeTable("auth", "public", "sink", "snk"),
        ProbeTable("bob", "public", "source", "src"),
    ]
    without = {**SOURCE, "table.include.list": "public.users"}
    assert needed(plan(("src", without), ("s", {**SINK, "topics": "local.m.bob.public.users"}))) == []


def project(*names: str) -> Project:
    return Project("p.yaml", {}, {n: Database(n, f"host=h dbname={n}") for n in names})


def serve(exists: bool, columns: list[tuple[Any, ...]]) -> Server:
    return Server(handlers=[on(r"^SELECT to_regclass", [(exists,)]), on(COLUMNS, columns), on(r"^COMMENT ON", [])])


def test_a_missing_table_is_made_and_only_what_was_made_is_reported() -> None:
    made, found = serve(False, SINK_COLUMNS), serve(True, SOURCE_COLUMNS)
    servers = {"auth": made, "bob": found}
    with pg.seam(lambda dsn, **kw: servers[dsn.rsplit("=", 1)[-1]].connect(dsn, **kw)):
        results = ensure_all(project("auth", "bob"), "c", plan(("src", SOURCE), ("snk", SINK)))
    assert [(r.name, r.ok, r.detail) for r in results] == [("auth.public.hephaestus_probe", True, "created (for snk)")]
    assert any(s.startswith('CREATE TABLE IF NOT EXISTS "public"."hephaestus_probe"') for s in made.statements)
    assert not any(s.startswith("CREATE") for s in found.statements)  # in place: left alone, not reported


@pytest.mark.parametrize(
    ("names", "columns", "why"),
    [
        (("auth", "bob"), [("probe_source",), ("x",)], "exists without column(s) probe_seq, probe_sink"),
        (("bob",), SINK_COLUMNS, "database 'auth' is not in p.yaml"),
    ],
)
def test_a_table_of_another_shape_or_a_database_not_named_stops_the_apply(
    names: tuple[str, ...], columns: list[tuple[Any, ...]], why: str
) -> None:
    with pg.seam(lambda dsn, **kw: serve(True, columns).connect(dsn, **kw)):
        results = ensure_all(project(*names), "c", plan(("snk", SINK)))
    (result,) = results
    assert not result.ok and why in result.detail and "(for snk; or turn the probe off" in result.detail, result
