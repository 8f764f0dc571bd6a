"""Wide records are built by keyword (mypy lets two same-typed neighbours swap when they are
passed by position), and what two layers share is written once."""

from __future__ import annotations

from dataclasses import fields

import pytest

from hephaestus import settings
from hephaestus.project import Cluster, KsqlDB
from hephaestus.reconciler import apply, plan, run, sealed, workflow
from hephaestus.safety import gate

WIDE = [
    workflow.RunRequest,
    run.RunOptions,
    apply.ApplyOptions,
    sealed.PlanScope,
    plan.Policy,
    settings.PolicySettings,
    settings.HealSettings,
    settings.RolloutSettings,
]


@pytest.mark.parametrize("record", WIDE, ids=lambda r: r.__qualname__)
def test_wide_records_are_keyword_only(record: type) -> None:
    assert [f.name for f in fields(record) if not f.kw_only] == []


def test_a_cluster_and_a_ksqldb_take_their_address_by_position_and_the_rest_by_name() -> None:
    assert [f.name for f in fields(Cluster) if not f.kw_only] == ["name", "url", "connectors", "select", "helm_values"]
    assert [f.name for f in fields(KsqlDB) if not f.kw_only] == ["name", "url", "migrations"]


def test_a_plan_step_and_a_topic_need_take_what_they_are_of_by_position_and_the_rest_by_name() -> None:
    assert [f.name for f in fields(plan.Step) if not f.kw_only] == ["action", "name"]
    assert [f.name for f in fields(plan.Need) if not f.kw_only] == ["sink"]


def test_the_delete_policy_defaults_are_the_project_files() -> None:
    p = settings.PolicySettings()
    assert (gate.DeletePolicy().max_deletes, gate.DeletePolicy().max_share) == (p.max_deletes, p.max_delete_share)
    assert (plan.Policy().max_deletes, plan.Policy().max_delete_share) == (p.max_deletes, p.max_delete_share)


def test_apply_keeps_the_states_the_plan_knows() -> None:
    assert apply.TARGET_STATES is plan.TARGET_STATES


@pytest.mark.parametrize(("reasons", "line"), [((), ""), (("a",), "a"), (("a", "b", "c"), "a (and 2 more refused)")])
def test_a_plan_and_the_gate_say_a_refusal_in_one_line_alike(reasons: tuple[str, ...], line: str) -> None:
    refusals = tuple(gate.Refusal("c", "n", r) for r in reasons)
    assert plan.Plan("c", (), refusals=reasons).refused == line
    assert gate.Verdict((), refusals).reason("c") == line
