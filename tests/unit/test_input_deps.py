"""No traceback for a corrupt dependency either: heal's state file, a failing source database.
One error line through the CLI, exit 1."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hephaestus.cli import run
from hephaestus.errors import HephaestusError
from hephaestus.fleet.sources import POSTGRES_SOURCE
from hephaestus.snapshot import db
from hephaestus.snapshot.signal import execute_snapshot
from tests.connect_double import ConnectDouble


@dataclass
class World:
    root: Path
    double: ConnectDouble
    capsys: pytest.CaptureFixture[str]

    def cli(self, *args: str) -> tuple[int, str]:
        code = run([*args, "--project", str(self.root / "hephaestus.yaml")])
        out = self.capsys.readouterr()
        return code, out.out + out.err


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], served: tuple[ConnectDouble, str]) -> World:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.add("sink_a", {"connector.class": "x.Sink", "topics": "t"}).task_states = ["FAILED"]
    double.add(
        "bob_source",
        {
            "connector.class": POSTGRES_SOURCE,
            "topic.prefix": "bob",
            "slot.name": "bob",
            "table.include.list": "public.users",
            "signal.data.collection": "public.dbz_signals",
        },
    )
    (tmp_path / "connectors/c").mkdir(parents=True)
    (tmp_path / "hephaestus.yaml").write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n"
        "databases:\n  bob: {dsn: 'host=127.0.0.1 port=9 dbname=bob'}\n"
    )
    return World(tmp_path, double, capsys)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "state.json:1: invalid JSON"),
        (b"[]", "heal state is corrupt (expected an object of clusters)"),
        (b'{"c": []}', "heal state is corrupt (cluster 'c': expected an object of connector records)"),
        (b'{"c": {"sink_a": {"count": "three"}}}', "heal state is corrupt ('c'/'sink_a': count has the wrong type)"),
        (b'{"c": {"sink_a": {"last_restart": true}}}', "last_restart has the wrong type"),
        (b"\xff\xfe{}", "state.json:1: not UTF-8"),
    ],
)
def test_a_corrupt_heal_state_file(world: World, content: bytes, expected: str) -> None:
    state = world.root / "state.json"
    state.write_bytes(content)
    for dry in ([], ["--dry-run"]):
        code, output = world.cli("heal", "--state-file", str(state), *dry)
        assert code == 1, output
        assert expected in output and "Traceback" not in output and "unexpected" not in output
        assert len(output.strip().splitlines()) == 1, output
    assert world.double.writes() == [], "nothing restarted on a state it cannot read"
    assert state.read_bytes() == content, "the evidence is left as it was"


def test_a_directory_as_heal_state(world: World) -> None:
    (world.root / "state.json").mkdir()
    with (world.root / "hephaestus.yaml").open("a") as project:
        project.write("heal: {state: {file: state.json}}\n")  # --state-file has click's own check
    code, output = world.cli("heal", "--dry-run")
    assert code == 1 and "state.json: is a directory, expected a file" in output


class FailingConnection:
    """A psycopg connection whose every statement fails as a real one would."""

    connection = None  # what psycopg.sql's as_string reads its adapters from: the defaults

    def __init__(self, exc: psycopg.Error) -> None:
        self.exc = exc

    def __enter__(self) -> FailingConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.errors.InsufficientPrivilege("permission denied for table dbz_signals\nHINT: grant it"),
        psycopg.OperationalError("server closed the connection unexpectedly\n\tThis probably means..."),
    ],
)
def test_a_failing_source_database_is_one_error_line(
    world: World, monkeypatch: pytest.MonkeyPatch, exc: psycopg.Error
) -> None:
    monkeypatch.setattr(psycopg, "connect", lambda *a, **k: FailingConnection(exc))
    code, output = world.cli("snapshot", "send", "--connector", "bob_source", "public.users")
    assert code == 1, output
    assert output.startswith("error: source database: checking the tables failed: ")
    assert len(output.strip().splitlines()) == 1 and "Traceback" not in output


def test_every_db_step_wraps_psycopg_errors() -> None:
    conn: Any = FailingConnection(psycopg.OperationalError("gone\naway"))
    steps: list[Callable[[], object]] = [
        lambda: db.check_tables(conn, ["t"], "public.s", "p"),
        lambda: db.slot_pid(conn, "s"),
        lambda: db.wait_slot_active(conn, "s", 0.0),
        lambda: db.insert_signal(conn, "public.s", execute_snapshot("bob", ["public.t"])),
    ]
    for step in steps:
        with pytest.raises(HephaestusError, match=r"^source database: .* failed: gone away$"):
            step()
