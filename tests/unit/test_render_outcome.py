"""A cluster's outcome as text and json (hephaestus.reconciler.render), part by part: a cluster
that could not be planned, invalid configs, a long adopt list, and the results of a rollout
and of its rollback, each with the style (colour) it is shown in. Pure: no double needed."""

from __future__ import annotations

import json

from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler import render
from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.plan import Plan, Unhealthy


def styled(text: str, action: str) -> str:
    return f"<{action}>{text}"


def test_a_cluster_that_could_not_be_planned_is_its_error_in_text_and_empty_in_json() -> None:
    out = ClusterOutcome("c", "http://c", None, error="cannot reach http://c")
    assert render.text([out], styled) == "<header>cluster c (http://c)\n  <error>error: cannot reach http://c\n"
    assert json.loads(render.as_json([out]))["clusters"] == [
        {
            "cluster": "c",
            "url": "http://c",
            "error": "cannot reach http://c",
            "refused": None,
            "refusals": [],
            "applied": False,
            "counts": {},
            "health": [],
            "adopt": [],
            "warnings": [],
            "needs": [],
            "steps": [],
            "invalid": {},
            "publications": [],
            "backfills": [],
            "schema": [],
            "held": [],
            "results": [],
            "rollout": None,
            "requests": 0,
            "writes": 0,
        }
    ]


OK = StepResult("a", "update", True, "RUNNING", True)
BAD = StepResult("b", "create", False, "not ready: FAILED")


def rolled_back() -> ClusterOutcome:
    p = Plan(
        "c",
        (),
        refusals=("r1",),
        health=(Unhealthy("x", "FAILED: boom"),),
        adopt=tuple(f"n{i}" for i in range(12)),
        warnings=("w",),
        publications=(PublicationChange("bob", "pub", ("public.t",), (), ("src",)),),
    )
    return ClusterOutcome(
        "c",
        "u",
        p,
        invalid={"z": {"k2": ("e2",), "k1": ("e1", "e1b")}, "a": {"k": ("e",)}},
        results=(OK, BAD),
        prepared=(StepResult("bob/pub", "publication", True, "add public.t (for src)", True),),
        error="stopped",
        requests=3,
        writes=1,
        rollout="canary 1 then waves of 10%",
        stages=(("canary", ("a",)), ("wave 1", ("b", "c", "d", "e", "f", "g"))),
        report=("canary: failed the gate",),
        rollback=(OK, BAD),
    )


def test_the_text_of_an_outcome_lists_each_part_in_order_with_its_style() -> None:
    lines = render.text([rolled_back()], styled).splitlines()
    assert lines == [
        "<header>cluster c (u)",
        "  <update>~ publication bob/pub: add public.t (for src)",
        "  <error>unhealthy x: FAILED: boom",
        "  adopt (record as owned, no write to Connect): n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, … (2 more)",
        "  <protected>warning: w",
        "  plan: 0 to create, 0 to update, 0 to delete, 0 protected, 0 unmanaged, 0 unchanged, 12 to adopt, "
        "1 publications to change  [3 requests, 1 writes]",
        "  <error>refused: r1",
        "  <error>invalid a: k: e",
        "  <error>invalid z: k1: e1; e1b",
        "  <error>invalid z: k2: e2",
        "  <error>nothing applied: fix the invalid configs first",
        "  rollout: canary 1 then waves of 10%",
        "    canary: 1: a",
        "    wave 1: 6: b, c, d, e, f, … (1 more)",
        "    canary: failed the gate",
        "  <unchanged>ok publication bob/pub: add public.t (for src)",
        "  <unchanged>ok update a: RUNNING",
        "  <error>FAILED create b: not ready: FAILED",
        "  <rename>ok rollback update a: RUNNING",
        "  <error>FAILED rollback create b: not ready: FAILED",
        "  <error>error: stopped",
    ]


def test_the_json_of_an_outcome_holds_the_plan_the_results_and_the_rollout() -> None:
    (doc,) = json.loads(render.as_json([rolled_back()]))["clusters"]
    assert doc["refused"] == "r1" and doc["refusals"] == ["r1"] and doc["error"] == "stopped"
    assert doc["adopt"] == [f"n{i}" for i in range(12)] and doc["health"] == [{"name": "x", "reason": "FAILED: boom"}]
    assert doc["publications"] == [
        {"database": "bob", "publication": "pub", "add": ["public.t"], "drop": [], "for": ["src"]}
    ]
    assert doc["invalid"] == {"z": {"k2": ["e2"], "k1": ["e1", "e1b"]}, "a": {"k": ["e"]}}
    assert [r["name"] for r in doc["results"]] == ["bob/pub", "a", "b"]
    assert doc["rollout"] == {
        "shape": "canary 1 then waves of 10%",
        "stages": [{"stage": "canary", "connectors": ["a"]}, {"stage": "wave 1", "connectors": list("bcdefg")}],
        "report": ["canary: failed the gate"],
        "rollback": [vars(OK), vars(BAD)],
    }
    assert doc["counts"]["create"] == 0 and (doc["requests"], doc["writes"]) == (3, 1)


def test_a_held_sink_is_named_with_its_reason_and_counted_in_text_json_and_markdown() -> None:
    from hephaestus.reconciler.plan import Held

    held = Held("k", "reads t, which ksqlDB migration kec V1__f.sql:2 writes", "kec V1__f.sql:2")
    out = ClusterOutcome("c", "http://c", Plan("c", (), held=(held,)))
    text = render.text([out])
    assert "held k: reads t, which ksqlDB migration kec V1__f.sql:2 writes" in text and ", 1 held" in text
    (cluster,) = json.loads(render.as_json([out]))["clusters"]
    assert cluster["held"] == [{"name": "k", "why": held.why, "migration": "kec V1__f.sql:2"}]
    assert "**held:** `k`" in render.markdown([out])
