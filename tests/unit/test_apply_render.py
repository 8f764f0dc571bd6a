"""Apply over a transport double (faults the real stack can't produce on demand) and rendering."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.connect.ready import ReadyOptions
from hephaestus.reconciler import render
from hephaestus.reconciler.apply import ApplyOptions, execute, validate_all
from hephaestus.reconciler.journal import StepJournal
from hephaestus.reconciler.outcome import ClusterOutcome
from hephaestus.reconciler.plan import Desired, Live, Policy, plan
from hephaestus.secrets import digest
from hephaestus.state.audit import Journal
from tests.connect_double import ConnectDouble
from tests.unit.conftest import cleared

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"


def status_body(name: str) -> dict[str, object]:
    return {
        "name": name,
        "type": "sink",
        "connector": {"state": "RUNNING", "worker_id": "w"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w"}],
    }


def handler(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    if request.method == "POST" and path == "/connectors":
        name = json.loads(request.content)["name"]
        if name == "broken":
            return httpx.Response(500, json={"error_code": 500, "message": "boom"})
        return httpx.Response(201, json={"name": name, "config": {}, "tasks": []})
    if path.endswith("/status"):
        return httpx.Response(200, json=status_body(path.split("/")[2]))
    if path.endswith("/config/validate"):
        body = json.loads(request.content)
        bad = body.get("errors.tolerance") == "sometimes"
        configs = [
            {
                "definition": {"name": "errors.tolerance"},
                "value": {"name": "errors.tolerance", "errors": ["Invalid value sometimes"] if bad else []},
            }
        ]
        return httpx.Response(200, json={"name": SINK, "error_count": int(bad), "groups": [], "configs": configs})
    return httpx.Response(404, json={"error_code": 404, "message": "nope"})


def client() -> ConnectClient:
    return ConnectClient("http://connect", transport=httpx.MockTransport(handler), retry=RetryPolicy.immediate(1))


def cfg(**extra: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": "t", **extra}


def test_one_failing_connector_does_not_stop_the_others() -> None:
    p = plan("c", {n: Desired(n, cfg()) for n in ("a", "broken", "c")}, {}, Policy())
    seen: list[tuple[str, int, int]] = []
    options = ApplyOptions(
        ready=ReadyOptions(stable_s=0, poll_s=0.01), progress=lambda r, done, total: seen.append((r.name, done, total))
    )

    def broken(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        posted = request.method == "POST" and b'"broken"' in request.content
        return httpx.Response(500, json={"error_code": 500, "message": "boom"}) if posted else None

    connect = ConnectClient(
        "http://connect", transport=httpx.MockTransport(ConnectDouble(broken)), retry=RetryPolicy.immediate(1)
    )
    results = {r.name: r for r in execute(connect, p, options, StepJournal(Journal(None, "r", "c"), {}), cleared(p))}
    assert results["a"].ok and results["c"].ok and results["a"].detail == "RUNNING"
    assert not results["broken"].ok and "boom" in results["broken"].detail
    assert sorted(name for name, _, _ in seen) == ["a", "broken", "c"]
    assert sorted(done for _, done, _ in seen) == [1, 2, 3] and {total for _, _, total in seen} == {3}


def test_validation_reports_each_connector_and_key() -> None:
    p = plan(
        "c", {"ok": Desired("ok", cfg()), "bad": Desired("bad", cfg(**{"errors.tolerance": "sometimes"}))}, {}, Policy()
    )
    assert validate_all(client(), p, 2) == {"bad": {"errors.tolerance": ("Invalid value sometimes",)}}


def test_text_diff_masks_literal_secrets_but_shows_placeholders() -> None:
    desired = {"a": Desired("a", cfg(**{"connection.password": "${file:/s:pw}", "batch.size": "2"}))}
    live = {"a": Live("a", cfg(**{"connection.password": "hunter2", "batch.size": "1"}))}
    out = ClusterOutcome("c", "http://connect", plan("c", desired, live, Policy()))
    for text in (render.text([out]), render.as_json([out]), render.markdown([out])):
        assert "hunter2" not in text
        # A secret's change still shows, as a short digest of the old value, never the value.
        assert "${file:/s:pw}" in text and digest("hunter2") in text
    assert "~ update a" in render.text([out]) and 'batch.size: "1" -> "2"' in render.text([out])


def test_markdown_summarises_for_a_pr_comment() -> None:
    out = ClusterOutcome("c", "u", plan("c", {"new": Desired("new", cfg())}, {}, Policy()))
    md = render.markdown([out])
    assert "### Kafka Connect cluster `c`" in md and "| + | create | create | `new` |" in md


def test_connectors_outside_select_are_never_planned(tmp_path: Path) -> None:
    from hephaestus.project import load_project
    from hephaestus.reconciler.run import RunOptions, reconcile

    (tmp_path / "connectors/c/sink").mkdir(parents=True)
    (tmp_path / "connectors/c/sink/local_a.json").write_text(json.dumps({"name": "local_a", "config": cfg()}))
    (tmp_path / "p.yaml").write_text(
        "clusters:\n  c:\n    url: http://connect\n    connectors: connectors/c\n    select: ['local_*']\n"
    )
    fleet = {
        n: {"info": {"name": n, "config": {**cfg(), "name": n}, "tasks": [], "type": "sink"}, "status": status_body(n)}
        for n in ("local_a", "stag_b")
    }

    def live(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=fleet)

    project = load_project(tmp_path / "p.yaml")
    factory = lambda c: ConnectClient(c.url, transport=httpx.MockTransport(live))  # noqa: E731
    (out,) = reconcile(project, list(project.clusters.values()), RunOptions(dry_run=True), factory)
    assert out.plan is not None
    assert [(s.name, s.action) for s in out.plan.steps] == [("local_a", "unchanged")]


def test_markdown_and_slack_escape_what_comes_from_the_cluster() -> None:
    from hephaestus.notify.slack import escape

    hostile = "x](http://evil.example)![img](http://evil.example/i.png)<b>|`y"
    live = {hostile: Live(hostile, {"connector.class": "io.Evil"}, "source")}
    out = ClusterOutcome("c", "u", plan("c", {}, live, Policy()))
    row = next(line for line in render.markdown([out]).splitlines() if line.startswith("| ! | protected"))
    # Inside a code span (fenced longer than any backtick run in it) links, images and HTML
    # are literal text; the `|` is escaped so the name stays in its cell.
    assert "``x](http://evil.example)![img](http://evil.example/i.png)<b>\\|`y``" in row
    assert len(re.findall(r"(?<!\\)\|", row)) == 6
    assert render.md_text("[a](http://e) <i>") == "\\[a\\]\\(http\\://e\\) \\<i\\>"
    assert escape("<!channel> `a`&") == "&lt;!channel&gt; 'a'&amp;"


def test_publication_changes_show_first_in_text_json_and_markdown() -> None:
    from dataclasses import replace

    from hephaestus.publications.change import PublicationChange
    from hephaestus.reconciler.outcome import StepResult

    change = PublicationChange("bob", "pub", ("public.t",), ("public.[x](http://evil)",), ("src",))
    p = replace(plan("c", {}, {}, Policy()), publications=(change,))
    out = ClusterOutcome("c", "u", p, prepared=(StepResult("bob/pub", "publication", True, "add public.t", True),))
    lines = render.text([out]).splitlines()
    assert lines[1] == "  ~ publication bob/pub: add public.t; drop public.[x](http://evil) (for src)"
    assert "0 unchanged, 1 publications to change" in render.text([out])
    assert "  ok publication bob/pub: add public.t" in lines
    data = json.loads(render.as_json([out]))["clusters"][0]
    assert data["publications"] == [
        {
            "database": "bob",
            "publication": "pub",
            "add": ["public.t"],
            "drop": ["public.[x](http://evil)"],
            "for": ["src"],
        }
    ]
    md = render.markdown([out])
    assert "- publication `bob/pub`: add public\\.t" in md and "](http" not in md
    assert not p.in_sync, "a publication change is drift"
