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


def complete(words: str, cwd: object, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What bash completion would offer (click's protocol: COMP_WORDS, COMP_CWORD)."""
    import subprocess
    import sys

    env = {
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
        "_HEPHAESTUS_COMPLETE": "bash_complete",
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run(
        [sys.executable, "-m", "hephaestus"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    ).stdout
    return [line.split(",", 1)[1] for line in out.splitlines() if line]


def test_shell_completion_offers_job_and_cluster_names(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.conftest import REPO

    assert complete("hephaestus job run upsert_", REPO, monkeypatch) == ["upsert_kafka_connect"]
    assert complete("hephaestus reconcile --cluster ", REPO, monkeypatch) == ["kec", "lmsdwh", "platforms"]
    assert complete("hephaestus reconcile --cluster pl", REPO, monkeypatch) == ["platforms"]
    assert complete("hephaestus reconcile --cluster ", tmp_path, monkeypatch) == []  # no project file here


def test_status_prints_a_clusters_markup_and_escapes_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    """A connector's name or trace comes from the cluster: "[/]" in it crashed rich's markup
    parser, and an ESC sequence would have reached the terminal. Both are shown as text now."""
    from hephaestus.commands.status import _tables
    from hephaestus.status.model import ClusterView, ConnectorView

    broken = ConnectorView(
        "c", "sink[/]x", "sink", "FAILED", ((0, "FAILED"),), problems=("task 0 FAILED: [bold]bad[/] \x1b[2Jvalue",)
    )
    _tables([ClusterView("c", "http://c", (broken,), errors=("lag unreadable \x1b[31m",))], False)
    out = capsys.readouterr().out
    assert "sink[/]x" in out and "[bold]bad[/]" in out
    assert "\x1b" not in out and "\\x1b[2Jvalue" in out and "lag unreadable \\x1b[31m" in out


def test_the_apply_progress_line_prints_connects_text_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The twin of the status table: a detail with "[/]" made rich raise mid-apply."""
    from types import SimpleNamespace

    from hephaestus.commands.reconcile import _progress

    show = _progress()
    show(SimpleNamespace(ok=False, action="update", name="s[/]", detail="refused: [red]x[/] \x1b[2J"), 1, 2)
    show(SimpleNamespace(ok=True, action="create", name="t", detail="RUNNING"), 2, 2)
    err = capsys.readouterr().err
    assert "[1/2] FAILED update s[/]: refused: [red]x[/] \\x1b[2J" in err and "\x1b" not in err
    assert "[2/2] ok create t: RUNNING" in err
