"""Small things a user meets first: typos, colours, the version flag (issue 20's snags)."""

from __future__ import annotations

import pytest

from hephaestus.cli import run


def test_a_mistyped_snapshot_command_is_an_error_not_a_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["snapshot", "stauts", "--connector", "bob_source"]) == 1
    err = capsys.readouterr().err
    assert "No such command 'stauts'" in err and "status" in err


def test_no_color_turns_the_plans_colours_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from hephaestus.commands.reconcile import _colour

    assert "\x1b[" in _colour("+ create a", "create")
    monkeypatch.setenv("NO_COLOR", "1")
    assert _colour("+ create a", "create") == "+ create a"
