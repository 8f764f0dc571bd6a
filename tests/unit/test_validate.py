"""`hephaestus validate`: the inputs of a commit checked offline (the pre-commit hook's command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hephaestus.cli import run
from tests.unit.conftest import REPO


def validate(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = run(
        [
            "validate",
            "--project",
            str(root / "hephaestus.yaml"),
            "--definitions",
            str(root / "definitions"),
            "--catalogs",
            str(root / "catalogs"),
            *extra,
        ]
    )
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    import shutil

    for folder in ("definitions", "catalogs", "schemas", "connectors", "ksql_migrations"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    shutil.copy(REPO / "hephaestus.yaml", tmp_path / "hephaestus.yaml")
    return tmp_path


def test_the_repositorys_own_inputs_are_valid(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = validate(repo, capsys)
    assert code == 0, err
    assert out.startswith("ok: 3 definitions (51 connectors); ") and "ksql migrations" in out
    # Every file is checked, whether a cluster's `select` takes it or not: the count says both.
    files = len(list((repo / "connectors").glob("*/*/*.json")))
    assert files == 51 and f"({files} connector files checked; 11 selected by 3 clusters)" in out


def test_every_problem_is_named_with_file_and_line_and_nothing_needs_a_cluster(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definition = next((repo / "definitions").glob("*.yaml"))
    definition.write_text(definition.read_text().replace("envs:", "envz:", 1))
    sink = next((repo / "connectors").rglob("sink/*.json"))
    sink.write_text(json.dumps({**json.loads(sink.read_text()), "state": "Paused!"}))
    migration = next((repo / "ksql_migrations").rglob("V000001__*.sql"))
    migration.write_text(migration.read_text() + "\nDROP STREAM ${nope};\n")
    code, out, err = validate(repo, capsys)
    assert code == 1 and out == ""
    assert definition.name in err and "envz" in err
    assert sink.name in err and "state" in err
    assert f"{migration.name}:" in err and "${nope} is not defined" in err


def test_a_project_file_named_but_absent_is_an_error_not_a_green_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48: a typo in --project or HEPHAESTUS_PROJECT checked nothing and exited 0."""
    code, out, err = validate(tmp_path, capsys, "--allow-empty")
    assert (code, out) == (
        1,
        "",
    ) and f"{tmp_path / 'hephaestus.yaml'}: no such project file (named by --project)" in err
    monkeypatch.setenv("HEPHAESTUS_PROJECT", str(tmp_path / "typo.yaml"))
    code = run(["validate"])
    assert code == 1 and "typo.yaml: no such project file (named by HEPHAESTUS_PROJECT)" in capsys.readouterr().err


def test_a_folder_with_nothing_to_check_fails_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in the wrong folder, validate used to say `ok: nothing to check here` and exit 0: the
    pre-commit hook and CI were green while they checked nothing."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HEPHAESTUS_PROJECT", raising=False)
    assert run(["validate"]) == 1
    assert "nothing to check here: no project file hephaestus.yaml and no definitions folder" in capsys.readouterr().err
    assert run(["validate", "--allow-empty"]) == 0
    assert capsys.readouterr().out == "ok: nothing to check here\n"


def test_the_hooks_offered_to_users_run_commands_that_pass_here(capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["hephaestus-generate-check", "hephaestus-validate"]
    for hook in hooks:
        argv = shlex.split(hook["entry"])
        assert argv[0] == "hephaestus" and hook["pass_filenames"] is False and hook["language"] == "python"
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(REPO)
            assert run(argv[1:]) == 0, capsys.readouterr().err
    own = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert {h["id"] for h in hooks} <= {h["id"] for h in own}
