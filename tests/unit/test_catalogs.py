"""Table catalogs (catalogs/<db>.json) and their old name: `schemas dump`, `--schemas` and a
schemas/ folder still work for a release, each with a warning, and never silently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.unit.conftest import Project


def _in_project(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run with the default folders (definitions/, catalogs/, connectors/) of the project."""
    monkeypatch.chdir(project.root)


def test_the_old_option_name_still_works_with_a_warning(project: Project) -> None:
    result = project.cli(
        "generate",
        "--definitions",
        str(project.definitions),
        "--schemas",
        str(project.catalogs),
        "--out",
        str(project.connectors),
        "--check",
    )
    assert result.code == 2, result.err  # nothing generated yet: every file would change
    assert "warning: --schemas is deprecated: use --catalogs" in result.err


def test_a_project_on_the_old_layout_is_read_from_schemas_with_a_warning(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_project(project, monkeypatch)
    assert project.cli("generate").code == 0
    new_layout = project.files()
    shutil.rmtree(project.connectors)
    for path in project.catalogs.glob("*.json"):
        shutil.move(path, project.schemas / path.name)
    project.catalogs.rmdir()
    result = project.cli("generate")
    assert result.code == 0, result.err
    assert "reading table catalogs from schemas/ (deprecated): move them to catalogs/" in result.err
    assert project.files() == new_layout


def test_catalogs_left_in_schemas_are_named_and_not_read(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    _in_project(project, monkeypatch)
    shutil.move(project.catalogs / "bob.json", project.schemas / "bob.json")
    result = project.cli("generate")
    assert result.code == 1
    assert "schemas/ holds catalogs that are not read (bob.json): move them to catalogs/" in result.err
    assert "no table catalog for database 'bob'" in result.err
    assert "hephaestus catalog dump" in result.err
    assert not project.connectors.exists()  # nothing applied


def test_json_schemas_in_schemas_are_never_taken_for_catalogs(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_project(project, monkeypatch)
    assert sorted(p.name for p in project.schemas.iterdir()) == ["definitions.schema.json", "project.schema.json"]
    result = project.cli("generate")
    assert result.code == 0 and "warning" not in result.err


def test_catalog_dump_is_the_command_and_schemas_dump_its_hidden_deprecated_name(project: Project) -> None:
    root = project.cli("--help").out
    assert "catalog " in root and "schemas " not in root
    new = project.cli("catalog", "dump", "--help")
    assert new.code == 0 and "[default: catalogs]" in new.out and "DEPRECATED" not in new.out
    old = project.cli("schemas", "dump", "--help")
    assert old.code == 0 and "[default: schemas]" in old.out  # an old script keeps its folder
    assert "use `hephaestus catalog dump`" in old.out + old.err


def test_the_catalog_folder_has_only_catalogs(tmp_path: Path) -> None:
    from tests.unit.conftest import REPO

    assert all(not p.name.endswith(".schema.json") for p in (REPO / "catalogs").iterdir())
    assert sorted(p.name for p in (REPO / "schemas").iterdir()) == ["definitions.schema.json", "project.schema.json"]
