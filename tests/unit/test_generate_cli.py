"""`hephaestus generate`: fan-out, files on disk, determinism, --check, stale removal."""

from __future__ import annotations

import json

import pytest

from tests.unit.conftest import REPO, Project, Result


def test_examples_fan_out_to_expected_counts(project: Project) -> None:
    result = project.generate()
    assert result.code == 0, result.err
    files = project.files()
    # bob: 3 envs x 2 orgs = 6 sources; 5 (table, sink) pairs x 6 = 30 sinks.
    assert len([f for f in files if f.startswith("platforms/source/")]) == 6
    assert len([f for f in files if f.startswith("platforms/sink/")]) == 30
    # lmsdwh: 3 envs x 1 org = 3 sources; 2 pairs x 3 = 6 sinks.
    assert len([f for f in files if f.startswith("lmsdwh/source/")]) == 3
    assert len([f for f in files if f.startswith("lmsdwh/sink/")]) == 6


def test_output_is_deterministic_json_of_strings(project: Project) -> None:
    project.generate()
    first = project.files()
    project.generate()
    assert project.files() == first
    for rel, raw in first.items():
        text = raw.decode()
        doc = json.loads(text)
        assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n", rel
        assert all(isinstance(v, str) for v in doc["config"].values()), rel
        assert rel.endswith(f"/{doc['name']}.json")


def test_committed_connectors_are_up_to_date() -> None:
    """The repo's connectors/ is what the repo's definitions generate (what CI checks)."""
    from hephaestus.cli import run

    assert (
        run(
            [
                "generate",
                "--definitions",
                str(REPO / "definitions"),
                "--catalogs",
                str(REPO / "catalogs"),
                "--out",
                str(REPO / "connectors"),
                "--check",
            ]
        )
        == 0
    )


def test_check_lists_changes_writes_nothing_and_exits_2(project: Project) -> None:
    result = project.generate("--check")
    assert result.code == 2
    assert "create " in result.out and "local_manabie_bob_source_connector.json" in result.out
    assert not project.connectors.exists()
    assert project.generate().code == 0
    assert project.generate("--check").code == 0


def test_a_first_generate_sums_up_per_cluster_and_lists_files_only_with_verbose(project: Project) -> None:
    """A fleet's first generate wrote a line per file (1,450): now a line per cluster, where
    it wrote, and the files only on request."""
    result = project.generate()
    assert result.code == 0, result.err
    assert result.out == ""
    assert result.err.splitlines() == [
        f"{project.connectors / 'kec'}: 6 created, 0 updated, 0 unchanged, 0 removed",
        f"{project.connectors / 'lmsdwh'}: 9 created, 0 updated, 0 unchanged, 0 removed",
        f"{project.connectors / 'platforms'}: 36 created, 0 updated, 0 unchanged, 0 removed",
        "51 connectors, 51 files changed (hephaestus -v generate lists them)",
    ]
    bob = project.connectors / "platforms/source/local_manabie_bob_source_connector.json"
    where = ("--definitions", str(project.definitions), "--catalogs", str(project.catalogs))
    bob.unlink()
    listed = project.cli("-v", "generate", *where, "--out", str(project.connectors))  # the top level's --verbose
    assert listed.code == 0, listed.err
    assert listed.out == f"create {bob}\n"
    assert listed.err.endswith("51 connectors, 1 file changed\n")
    misplaced = project.cli("generate", "-v", *where, "--out", str(project.connectors))
    assert misplaced.code == 1 and "hephaestus -v generate" in misplaced.err


def test_check_reports_a_hand_edit(project: Project) -> None:
    project.generate()
    target = project.connectors / "platforms/sink/local_manabie_bob_to_auth_users_sink_connector.json"
    target.write_text(target.read_text().replace('"upsert"', '"insert"'))
    result = project.generate("--check")
    assert result.code == 2
    assert result.out.strip() == f"update {target}"  # what is stale is listed without -v
    assert f"{project.connectors / 'platforms'}: 0 to create, 1 to update, 35 unchanged, 0 to remove\n" in result.err
    assert result.err.endswith("51 connectors, 1 file would change\n")


def test_stale_files_removed_and_custom_untouched(project: Project) -> None:
    project.generate()
    custom = project.connectors / "platforms/custom/hand_written.json"
    custom.parent.mkdir()
    custom.write_text('{"name": "hand_written", "config": {}}\n')
    bob = project.definitions / "bob.yaml"
    bob.write_text(
        bob.read_text().replace("      - database: eureka\n  - source_table: students", "  - source_table: students")
    )
    result = project.generate()
    assert result.code == 0, result.err
    assert f"{project.connectors / 'platforms'}: 0 created, 0 updated, 30 unchanged, 6 removed\n" in result.err
    names = project.files()
    assert not any("bob_to_eureka_users" in n for n in names)
    assert "platforms/custom/hand_written.json" in names
    assert len([n for n in names if n.startswith("platforms/sink/")]) == 24


def test_the_json_schemas_are_written_for_editors(project: Project) -> None:
    (project.schemas / "definitions.schema.json").unlink(missing_ok=True)
    (project.schemas / "project.schema.json").unlink(missing_ok=True)
    assert project.generate("--check").code == 2
    project.generate()
    assert "pipelines" in json.loads((project.schemas / "definitions.schema.json").read_text())["properties"]
    assert "clusters" in json.loads((project.schemas / "project.schema.json").read_text())["properties"]
    assert project.generate("--check").code == 0  # and neither is read as a table catalog


def test_the_examples_name_their_schema_for_editors() -> None:
    from tests.unit.conftest import REPO

    for path in sorted((REPO / "definitions").glob("*.yaml")):
        assert path.read_text().startswith("# yaml-language-server: $schema=../schemas/definitions.schema.json\n")
        assert (path.parent / "../schemas/definitions.schema.json").resolve().is_file()
    project = (REPO / "hephaestus.yaml").read_text()
    assert project.startswith("# yaml-language-server: $schema=schemas/project.schema.json\n")


def test_version_and_help(project: Project) -> None:
    assert "0.1.0" in project.cli("--version").out
    for cmd in (["generate"], ["catalog", "dump"], []):
        result = project.cli(*cmd, "--help")
        assert result.code == 0 and "Usage:" in result.out


def _in_project_folder(project: Project, *extra: str, verbose: bool = False) -> Result:
    """generate with the defaults a user has at the project's root: no --out, hephaestus.yaml
    (`verbose`: `hephaestus -v generate`, which lists each file)."""
    top = ("-v",) if verbose else ()
    return project.cli(*top, "generate", "--definitions", "definitions", "--catalogs", "catalogs", *extra)


@pytest.fixture
def named_folder(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project file that names platforms' connectors folder (deploy/platforms); lmsdwh is not in it."""
    monkeypatch.chdir(project.root)
    monkeypatch.delenv("HEPHAESTUS_PROJECT", raising=False)
    (project.root / "hephaestus.yaml").write_text(
        "clusters:\n  platforms:\n    url: http://127.0.0.1:8083\n    connectors: deploy/platforms\n"
    )
    return project


def test_a_cluster_is_written_to_the_folder_its_project_file_names(named_folder: Project) -> None:
    """Issue 48: generate wrote connectors/platforms/, which reconcile (reading deploy/platforms/) never read."""
    result = _in_project_folder(named_folder, verbose=True)
    assert result.code == 0, result.err
    assert "deploy/platforms: 36 created, 0 updated, 0 unchanged, 0 removed" in result.err
    deploy = named_folder.root / "deploy/platforms"
    assert len(list((deploy / "source").glob("*.json"))) == 6 and len(list((deploy / "sink").glob("*.json"))) == 30
    assert "create deploy/platforms/sink/local_manabie_bob_to_auth_users_sink_connector.json" in result.out
    assert not (named_folder.connectors / "platforms").exists()
    assert len(list((named_folder.connectors / "lmsdwh/sink").glob("*.json"))) == 6  # not in the project file
    assert _in_project_folder(named_folder, "--check").code == 0


def test_stale_files_are_removed_from_a_named_folder(named_folder: Project) -> None:
    _in_project_folder(named_folder)
    bob = named_folder.definitions / "bob.yaml"
    bob.write_text(
        bob.read_text().replace("      - database: eureka\n  - source_table: students", "  - source_table: students")
    )
    result = _in_project_folder(named_folder, verbose=True)
    assert result.code == 0, result.err
    assert "remove deploy/platforms/sink/" in result.out
    assert "deploy/platforms: 0 created, 0 updated, 30 unchanged, 6 removed" in result.err
    assert len(list((named_folder.root / "deploy/platforms/sink").glob("*.json"))) == 24


def test_out_still_puts_every_cluster_under_it(named_folder: Project) -> None:
    result = _in_project_folder(named_folder, "--out", "elsewhere")
    assert result.code == 0, result.err
    assert len(list((named_folder.root / "elsewhere/platforms/sink").glob("*.json"))) == 30
    assert not (named_folder.root / "deploy").exists()


def test_a_bad_project_file_is_an_error_naming_it(named_folder: Project) -> None:
    (named_folder.root / "hephaestus.yaml").write_text("clusters:\n  platforms:\n    url: http://x:8083\n")
    result = _in_project_folder(named_folder)
    assert result.code == 1
    assert "hephaestus.yaml" in result.err and "connectors" in result.err
    assert not (named_folder.root / "connectors").exists()


def test_a_folder_spelled_two_ways_is_one_folder(named_folder: Project) -> None:
    """--project as an absolute path names connectors/platforms absolutely while --out's default
    root reads it relatively: the file is neither removed as stale nor written twice."""
    project_file = named_folder.root / "hephaestus.yaml"
    text = (named_folder.root / "hephaestus.yaml").read_text()
    project_file.write_text(text.replace("deploy/platforms", "connectors/platforms"))
    first = _in_project_folder(named_folder, "--project", str(project_file))
    assert first.code == 0, first.err
    again = _in_project_folder(named_folder, "--project", str(project_file))
    assert again.code == 0 and again.out == "", again.out
    assert len(list((named_folder.connectors / "platforms/sink").glob("*.json"))) == 30
