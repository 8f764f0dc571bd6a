"""What the CLI makes of a bug (hephaestus.cli): an exception that is no HephaestusError is one
line naming it, exit 1, and its traceback only when HEPHAESTUS_TRACEBACK=1. The bug is a
PostgreSQL driver that raises something of its own, through the seam (tests/unit/pgfake.py),
in test_status_run.py's world: `slots` reads every database, so it meets it at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hephaestus.cli import run
from tests.connect_double import ConnectDouble
from tests.unit import test_status_run
from tests.unit.pgfake import Server

world = test_status_run.world
World = tuple[Path, ConnectDouble, Server]


def broken(text: str, params: list[Any]) -> None:
    raise RuntimeError("driver bug")


def slots(world: World, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    project, _, database = world
    database.handlers.insert(0, broken)
    code = run(["slots", "--project", str(project)])
    return code, capsys.readouterr().err


def test_a_bug_is_one_line_naming_it_and_exit_1(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = slots(world, capsys)
    assert (code, err) == (
        1,
        "error: unexpected RuntimeError: driver bug (a bug in hephaestus; HEPHAESTUS_TRACEBACK=1 shows where)\n",
    )


def test_the_traceback_is_shown_when_asked(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEPHAESTUS_TRACEBACK", "1")
    code, err = slots(world, capsys)
    assert code == 1 and err.startswith("error: unexpected RuntimeError: driver bug (a bug in hephaestus")
    assert "Traceback (most recent call last):" in err and err.endswith("RuntimeError: driver bug\n")
