"""Bad input: an error naming file, line and field; exit 1; nothing written or removed."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.unit.conftest import Project

GOOD = """
cluster: platforms
database: bob
envs: [local]
orgs: [manabie]
pipelines:
  - source_table: users
    sinks:
      - database: auth
"""


def fails(project: Project, text: str, break_schema: Callable[[], None] = lambda: None) -> str:
    """Generate once (good), then break bob.yaml: the error text; files unchanged."""
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition("bob.yaml", GOOD)
    assert project.generate().code == 0
    before = project.files()
    break_schema()
    project.write_definition("bob.yaml", text)
    result = project.generate()
    assert result.code == 1
    assert project.files() == before, "nothing may be written or removed"
    assert "bob.yaml" in result.err
    return result.err


def test_unknown_key_names_line_and_key(project: Project) -> None:
    err = fails(project, GOOD + "        colour: blue\n")
    assert "bob.yaml:9 at pipelines[0].sinks[0].colour: unknown key 'colour'" in err


def test_wrong_type(project: Project) -> None:
    err = fails(project, GOOD.replace("envs: [local]", "envs: local"))
    assert "bob.yaml:3 at envs" in err and "not of type 'array'" in err


def test_empty_envs_and_orgs(project: Project) -> None:
    err = fails(project, GOOD.replace("[local]", "[]").replace("[manabie]", "[]"))
    assert "bob.yaml:3 at envs" in err and "bob.yaml:4 at orgs" in err


def test_missing_required_key(project: Project) -> None:
    err = fails(project, GOOD.replace("cluster: platforms\n", ""))
    assert "missing required key 'cluster'" in err


def test_table_missing_from_snapshot(project: Project) -> None:
    err = fails(project, GOOD.replace("source_table: users", "source_table: nope"))
    assert "bob.yaml:6 at pipelines[0].source_table: table public.nope not in" in err


def test_sink_table_missing_from_snapshot(project: Project) -> None:
    err = fails(project, GOOD + "        table: accounts\n")
    assert "bob.yaml:9 at pipelines[0].sinks[0].table: table public.accounts not in" in err


def test_no_catalog_for_sink_database(project: Project) -> None:
    err = fails(project, GOOD.replace("database: auth", "database: ghost"))
    assert "pipelines[0].sinks[0].database: no table catalog for database 'ghost'" in err


def test_primary_key_mismatch_names_both_tables(project: Project) -> None:
    auth = json.loads((project.catalogs / "auth.json").read_text())
    auth["tables"]["public.users"]["primary_key"] = ["email"]
    err = fails(project, GOOD, lambda: (project.catalogs / "auth.json").write_text(json.dumps(auth)))
    assert "primary keys differ: bob.public.users (user_id) vs auth.public.users (email)" in err


def test_duplicate_connector_names_across_files(project: Project) -> None:
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition("bob.yaml", GOOD)
    project.write_definition("bob_again.yaml", GOOD)
    result = project.generate()
    assert result.code == 1
    assert "connector name 'local_manabie_bob_source_connector' is also produced by" in result.err
    assert not project.connectors.exists()


def test_invalid_yaml_names_line(project: Project) -> None:
    err = fails(project, GOOD + "  - source_table: [unclosed\n")
    assert "invalid YAML" in err and "bob.yaml:" in err


@pytest.mark.parametrize(
    "bad, hint",
    [
        ("source: {snapshot_mode: never}", "use no_data"),
        ("source: {options: {snapshot.mode: never}}", "use no_data"),
    ],
)
def test_removed_snapshot_mode_for_3x(project: Project, bad: str, hint: str) -> None:
    err = fails(project, GOOD + bad + "\n")
    assert "source.snapshot_mode" in err and hint in err


def test_removed_unwrap_keys_for_3x(project: Project) -> None:
    err = fails(project, GOOD + "        options: {transforms.unwrap.drop.tombstones: true}\n")
    assert "transforms.unwrap.drop.tombstones: removed in Debezium 3.x" in err


def test_signal_table_is_never_a_pipeline(project: Project) -> None:
    err = fails(project, GOOD.replace("source_table: users", "source_table: dbz_signals"))
    assert "is the signal table" in err


def test_avro_without_registry(project: Project) -> None:
    err = fails(project, GOOD + "converter: {format: avro}\n")
    assert "converter.schema_registry_url" in err
    assert "or the project file's clusters.platforms.schema_registry_url" in err, err
    err = fails(project, GOOD + "converter: {format: avro, flavour: karapace}\n")
    assert "converter.flavour" in err, err


def test_every_error_of_every_file_reported_at_once(project: Project) -> None:
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    project.write_definition("a.yaml", GOOD.replace("envs: [local]", "envs: []"))
    project.write_definition("b.yaml", GOOD.replace("orgs: [manabie]", "orgs: 3"))
    result = project.generate()
    assert result.code == 1
    assert "a.yaml:3 at envs" in result.err and "b.yaml:4 at orgs" in result.err


def test_bad_schema_snapshot(project: Project) -> None:
    (project.catalogs / "auth.json").write_text('{"database": "auth", "tables": {"users": {}}}')
    result = project.generate()
    assert result.code == 1
    assert "auth.json" in result.err
