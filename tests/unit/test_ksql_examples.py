"""The shipped ksql_migrations/ and the project file's `ksqldb:` section, applied as they are
(the URL redirected to the contract stub by its url_env)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hephaestus.cli import run
from hephaestus.reconciler.plan import Live, Policy, plan
from tests.ksqldb_stub import ksqldb_stub
from tests.unit.conftest import REPO

PROJECT = str(REPO / "hephaestus.yaml")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = run([*args, "--project", PROJECT])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_examples_apply_cleanly_once(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with ksqldb_stub() as stub:
        monkeypatch.setenv("HEPHAESTUS_LMSDWH_KSQL_URL", stub.url)
        assert cli(capsys, "ksql", "init")[0] == 0
        code, out = cli(capsys, "ksql", "apply", "--all")
        assert code == 0, out
        assert "migrated 1 bob cdc streams (2 statements)" in out and "migrated 2 dim user (4 statements)" in out
        assert cli(capsys, "ksql", "apply", "--all")[1].count("no eligible migrations") == 1
        assert cli(capsys, "ksql", "validate")[0] == 0
        assert {"LMSDWH_MIGRATION_EVENTS", "LMSDWH_MIGRATION_SCHEMA_VERSIONS", "BOB_USERS", "BOB_STUDENTS",
                "BOB_USERS_LATEST", "BOB_STUDENTS_LATEST", "DIM_USER"} <= set(stub.sources)
        sink = stub.connectors["LMSDWH_DIM_USER_SINK"]
        props = next(r.body["streamsProperties"] for r in stub.requests
                     if r.path == "/ksql" and "CREATE TABLE IF NOT EXISTS DIM_USER" in r.body["ksql"])
    assert props == {"auto.offset.reset": "earliest"}
    assert sink["table.name.format"] == "public.dim_user"  # from DEFINE
    assert sink["connection.password"] == "${file:secrets/connect.properties:lmsdwh_password}"


def test_the_cdc_streams_read_the_topics_the_generator_names(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    source = json.loads((REPO / "connectors/platforms/source/local_manabie_bob_source_connector.json").read_text())
    tables = source["config"]["table.include.list"].split(",")
    topics = {f"local.manabie.bob.{t}" for t in tables}
    with ksqldb_stub() as stub:
        monkeypatch.setenv("HEPHAESTUS_LMSDWH_KSQL_URL", stub.url)
        cli(capsys, "ksql", "init")
        cli(capsys, "ksql", "apply", "--until", "1")
        assert {stub.sources["BOB_USERS"].topic, stub.sources["BOB_STUDENTS"].topic} <= topics


def test_the_ksqldb_owned_sink_is_never_deleted_by_the_reconciler(capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with ksqldb_stub() as stub:
        monkeypatch.setenv("HEPHAESTUS_LMSDWH_KSQL_URL", stub.url)
        cli(capsys, "ksql", "init")
        cli(capsys, "ksql", "apply", "--all")
        live = {name: Live(name, {k: str(v) for k, v in config.items()}, "sink")
                for name, config in stub.connectors.items()}
    steps = plan("lmsdwh", {}, live, Policy(max_deletes=100, max_delete_share=1.0)).steps
    assert [(s.name, s.action) for s in steps] == [("LMSDWH_DIM_USER_SINK", "unmanaged")]
    assert "JdbcSinkConnector" in steps[0].connector_class  # a JDBC sink, yet not deleted


def test_a_dry_run_of_the_examples_shows_placeholders_not_secrets(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with ksqldb_stub() as stub:
        monkeypatch.setenv("HEPHAESTUS_LMSDWH_KSQL_URL", stub.url)
        cli(capsys, "ksql", "init")
        code, out = cli(capsys, "ksql", "apply", "--all", "--dry-run")
    assert code == 0 and "V000002__dim_user.sql (version 2, 4 statements)" in out
    assert "'connection.password' = '${file:secrets/connect.properties:lmsdwh_password}'" in out
    assert "'table.name.format' = 'public.dim_user'" in out
    assert Path(REPO / "ksql_migrations/lmsdwh/V000002__dim_user.sql").is_file()
