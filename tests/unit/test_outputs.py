"""The one output guard: no command's file flag overwrites an input of hephaestus (issue 43, 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hephaestus import outputs
from hephaestus.cli import run
from hephaestus.errors import InputError
from hephaestus.project import load_project

SINK = {
    "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
    "topics": "bob.public.users",
    "connection.url": "jdbc:postgresql://wh:5432/dwh",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "hephaestus.yaml").write_text(
        "clusters:\n  c: {url: 'http://127.0.0.1:1', connectors: fleet/c, secrets_file: connect.properties}\n"
        "audit_log: logs/audit.jsonl\n"
    )
    (tmp_path / "connect.properties").write_text("pw=x\n")
    sink = tmp_path / "fleet" / "c" / "sink" / "s.json"
    sink.parent.mkdir(parents=True)
    sink.write_text(json.dumps({"name": "s", "config": SINK}))
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "target",
    ["hephaestus.yaml", "fleet/c/sink/s.json", "fleet/c/sink/new.html", "connect.properties", "logs/audit.jsonl"],
)
def test_graph_never_overwrites_an_input(root: Path, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(root)
    code = run(["graph", "--project", str(root / "hephaestus.yaml"), "--output", str(root / target)])
    assert code == 1
    assert "--output would overwrite an input of hephaestus: name a file of its own" in capsys.readouterr().err
    assert snapshot(root) == before


def test_a_symlink_or_a_dotted_path_to_an_input_is_an_input(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "g.html").symlink_to(root / "hephaestus.yaml")
    before = snapshot(root)
    for target in (root / "g.html", root / "fleet" / ".." / "hephaestus.yaml"):
        assert run(["graph", "--project", str(root / "hephaestus.yaml"), "--output", str(target)]) == 1
        assert "would overwrite an input" in capsys.readouterr().err
    assert snapshot(root) == before


def test_graph_rewrites_its_own_page_but_no_other_file(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project, page = str(root / "hephaestus.yaml"), root / "graph.html"
    assert run(["graph", "--project", project, "--output", str(page)]) == 0
    assert run(["graph", "--project", project, "--output", str(page)]) == 0, capsys.readouterr()
    (root / "notes.html").write_text("<!DOCTYPE html><title>my notes</title>")
    assert run(["graph", "--project", project, "--output", str(root / "notes.html")]) == 1
    assert "--output would overwrite a file that is not a hephaestus graph page" in capsys.readouterr().err
    assert (root / "notes.html").read_text() == "<!DOCTYPE html><title>my notes</title>"


@pytest.mark.parametrize("command", [["heal"], ["reconcile", "--dry-run"], ["accuracy", "--definitions", "nowhere"]])
def test_a_metrics_textfile_never_overwrites_an_input(
    root: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(root)
    project = ["--project", str(root / "hephaestus.yaml")]
    assert run([*command, *project, "--metrics-textfile", str(root / "fleet/c/sink/s.json")]) == 1
    assert "--metrics-textfile would overwrite an input of hephaestus" in capsys.readouterr().err
    (root / "notes.txt").write_text("not metrics at all\n")
    assert run([*command, *project, "--metrics-textfile", str(root / "notes.txt")]) == 1
    assert "would overwrite a file that is not a Prometheus textfile" in capsys.readouterr().err
    assert snapshot(root) == {**before, "notes.txt": b"not metrics at all\n"}


def test_each_kind_knows_its_own_files(root: Path) -> None:
    project = load_project(root / "hephaestus.yaml")
    prom = root / "m.prom"
    prom.write_text('# HELP x y\n# TYPE x gauge\nx{cluster="c"} 1.0\nhephaestus_up 0 1700000000\n\n')
    outputs.check(prom, project, "--metrics-textfile", outputs.TEXTFILE)
    (root / "plan.json").write_text(json.dumps({"hephaestus_plan": 1}))
    outputs.check(root / "plan.json", project, "--out", outputs.PLAN)
    outputs.check(root / "absent" / "new.prom", project, "--metrics-textfile", outputs.TEXTFILE)
    (root / "copy.yaml").write_text("clusters: {}\n")
    for kind in (outputs.PLAN, outputs.GRAPH, outputs.TEXTFILE):
        with pytest.raises(InputError, match=f"would overwrite a file that is not {kind.noun}"):
            outputs.check(root / "copy.yaml", project, "--x", kind)
    (root / "out").mkdir()
    with pytest.raises(InputError, match="--x names a folder: name a file"):
        outputs.check(root / "out", project, "--x", outputs.GRAPH)
    for folder in ("definitions", "catalogs", ".hephaestus", "connectors"):
        with pytest.raises(InputError, match="would overwrite an input"):
            outputs.check(root / folder / "x.prom", project, "--metrics-textfile", outputs.TEXTFILE)


def test_a_large_plan_written_by_hephaestus_is_still_its_own(root: Path) -> None:
    """A plan's marker comes first: a body over the 4 KiB the check reads (the freshness probe's
    heartbeat query alone is 700 bytes a source) must not make `--out` refuse its own plan."""
    from hephaestus.reconciler import sealed
    from hephaestus.safety.seal import Fingerprints, new_salt

    body = {"clusters": {f"c{i}": {"config": "x" * 500} for i in range(20)}}
    sealed.write(root / "plan.json", sealed.Sealed("id1", body, Fingerprints(new_salt())))
    assert (root / "plan.json").stat().st_size > 4096
    outputs.check(root / "plan.json", load_project(root / "hephaestus.yaml"), "--out", outputs.PLAN)
    assert json.loads((root / "plan.json").read_text())["body"] == body
