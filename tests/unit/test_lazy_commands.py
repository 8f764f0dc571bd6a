"""Issue 47: the CLI loads a command's module only when that command runs, and a no-op dry run
imports nothing heavy it does not use. Counted in a fresh interpreter (`sys.modules`), never
timed: time is measured in bench/, not in tests."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from hephaestus.cli import cli
from hephaestus.commands import COMMANDS, FEATURES

REPO = Path(__file__).resolve().parents[2]


def test_every_command_is_mapped_to_the_module_that_defines_it() -> None:
    defined = {c.name: f for f in FEATURES for c in importlib.import_module(f"hephaestus.commands.{f}").commands}
    assert defined == COMMANDS
    files = {p.stem for p in (REPO / "hephaestus/commands").glob("*.py")}
    assert set(FEATURES) <= files


def test_the_help_lists_every_command_and_loads_each_by_name() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    assert all(getattr(cli.get_command(ctx, n), "name", None) == n for n in COMMANDS)
    assert cli.get_command(ctx, "nosuch") is None


def imported(*argv: str, cwd: Path) -> set[str]:
    """The modules a fresh CLI process has imported when it exits."""
    code = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: print('\\n' + json.dumps(sorted(sys.modules)), file=sys.__stderr__))\n"
        "from hephaestus.cli import main\n"
        f"sys.argv = ['hephaestus', *{list(argv)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


# What a path that does not use them must not import (issue 47): each costs tens of ms at start.
HEAVY = {"rich", "psycopg", "confluent_kafka", "fastavro", "jinja2", "slack_sdk", "prometheus_client", "jsonschema"}


def heavy(modules: set[str]) -> set[str]:
    """The heavy packages imported (a package's own name: `httpx._main` alone is hephaestus's
    stand-in for httpx's CLI, not httpx)."""
    return modules & HEAVY


def test_version_imports_neither_click_nor_httpx(tmp_path: Path) -> None:
    code = "import sys, json; sys.argv = ['hephaestus', '--version']\nfrom hephaestus.entry import main\nmain()\n"
    code += "print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    modules = set(json.loads(proc.stdout.splitlines()[-1]))
    assert proc.stdout.startswith("hephaestus, version")
    assert not {"click", "httpx", *HEAVY} & modules


def project(root: Path, url: str) -> Path:
    folder = root / "connectors/c/sink"
    folder.mkdir(parents=True)
    config = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t", "tasks.max": "1"}
    (folder / "a.json").write_text(json.dumps({"name": "a", "config": config}))
    (root / "hephaestus.yaml").write_text(f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n")
    return root / "hephaestus.yaml"


def test_validate_sends_no_request_and_imports_no_http_client(tmp_path: Path) -> None:
    found = imported("validate", "--project", str(project(tmp_path, "http://127.0.0.1:9")), cwd=tmp_path)
    assert "hephaestus.commands.validate" in found
    assert heavy(found) == set() and "httpx" not in found
    assert not any(
        m.startswith("hephaestus.commands.") and m.split(".")[2] not in {"validate", "common", "streams"} for m in found
    )


def test_a_no_op_dry_run_imports_nothing_heavy_it_does_not_use(tmp_path: Path) -> None:
    from tests.connect_double import ConnectDouble, serve

    double = ConnectDouble()
    config = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t", "tasks.max": "1"}
    double.add("a", config)
    with serve(double) as url:
        found = imported("reconcile", "--dry-run", "--project", str(project(tmp_path, url)), cwd=tmp_path)
    assert ("GET", "/connectors") in double.log, "the dry run read the listing"
    assert "hephaestus.commands.reconcile" in found and "httpx" in found
    assert heavy(found) == set()
    assert (
        not {"hephaestus.dlq.run", "hephaestus.generator.run", "hephaestus.accuracy", "hephaestus.snapshot.hooks"}
        & found
    )


def test_the_entry_point_answers_version_itself_and_hands_the_rest_to_the_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process (the child-process checks above are out of coverage's sight)."""
    from hephaestus import __version__, entry

    monkeypatch.setattr(sys, "argv", ["hephaestus", "--version"])
    entry.main()
    assert capsys.readouterr().out == f"hephaestus, version {__version__}\n"
    monkeypatch.setattr(sys, "argv", ["hephaestus", "nosuch"])
    with pytest.raises(SystemExit) as exited:
        entry.main()
    assert exited.value.code == 1 and "No such command 'nosuch'" in capsys.readouterr().err
