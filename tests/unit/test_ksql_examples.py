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


def point_at(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Both shipped ksqlDB clusters (lmsdwh, kec) on one stub: their names never overlap."""
    monkeypatch.setenv("HEPHAESTUS_LMSDWH_KSQL_URL", url)
    monkeypatch.setenv("HEPHAESTUS_KEC_KSQL_URL", url)


def test_the_examples_apply_cleanly_once(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with ksqldb_stub() as stub:
        point_at(monkeypatch, stub.url)
        assert cli(capsys, "ksql", "init")[0] == 0
        code, out = cli(capsys, "ksql", "apply", "--all")
        assert code == 0, out
        assert "migrated 1 bob cdc streams (2 statements)" in out and "migrated 2 dim user (4 statements)" in out
        assert "migrated 1 invoicemgmt cdc streams (2 statements)" in out
        assert "migrated 2 fact invoice (4 statements)" in out
        assert cli(capsys, "ksql", "apply", "--all")[1].count("no eligible migrations") == 2
        assert cli(capsys, "ksql", "validate")[0] == 0
        assert {
            "LMSDWH_MIGRATION_EVENTS",
            "LMSDWH_MIGRATION_SCHEMA_VERSIONS",
            "BOB_USERS",
            "BOB_STUDENTS",
            "BOB_USERS_LATEST",
            "BOB_STUDENTS_LATEST",
            "DIM_USER",
            "KEC_MIGRATION_EVENTS",
            "INVOICES_LATEST",
            "PAYMENTS_LATEST",
            "PAID_BY_INVOICE",
            "FACT_INVOICE",
        } <= set(stub.sources)
        # The kec sink is hephaestus's (definitions/kec.yaml), not ksqlDB's.
        assert set(stub.connectors) == {"LMSDWH_DIM_USER_SINK"}
        sink = stub.connectors["LMSDWH_DIM_USER_SINK"]
        props = next(
            r.body["streamsProperties"]
            for r in stub.requests
            if r.path == "/ksql" and "CREATE TABLE IF NOT EXISTS DIM_USER" in r.body["ksql"]
        )
    assert props == {"auto.offset.reset": "earliest"}
    assert sink["collection.name.format"] == "public.dim_user"  # from DEFINE
    assert sink["connection.password"] == "${file:secrets/connect.properties:lmsdwh_password}"


def test_the_cdc_streams_read_the_topics_the_generator_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = json.loads((REPO / "connectors/platforms/source/local_manabie_bob_source_connector.json").read_text())
    tables = source["config"]["table.include.list"].split(",")
    topics = {f"local.manabie.bob.{t}" for t in tables}
    with ksqldb_stub() as stub:
        point_at(monkeypatch, stub.url)
        cli(capsys, "ksql", "init")
        cli(capsys, "ksql", "apply", "--until", "1")
        assert {stub.sources["BOB_USERS"].topic, stub.sources["BOB_STUDENTS"].topic} <= topics


def test_the_kec_stack_is_one_format_end_to_end(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ksqlDB reads the topics the kec source writes and writes the topic the kec sink reads, in
    JSON both ways; the sink's columns are what the ksqlDB payload carries."""
    connectors = REPO / "connectors/kec"
    source = json.loads((connectors / "source/local_manabie_invoicemgmt_source_connector.json").read_text())
    sink = json.loads((connectors / "sink/local_manabie_kec_to_kec_dwh_fact_invoice_sink_connector.json").read_text())
    captured = {f"local.manabie.invoicemgmt.{t}" for t in source["config"]["table.include.list"].split(",")}
    with ksqldb_stub() as stub:
        point_at(monkeypatch, stub.url)
        cli(capsys, "ksql", "init")
        assert cli(capsys, "ksql", "apply", "--all")[0] == 0
        streams = {stub.sources[n].topic for n in ("INVOICEMGMT_INVOICES", "INVOICEMGMT_PAYMENTS")}
        fact = stub.sources["FACT_INVOICE"]
    assert streams == captured
    assert fact.topic == sink["config"]["topics"]
    assert source["config"]["value.converter"] == sink["config"]["value.converter"].replace(
        "storage.StringConverter", "json.JsonConverter"
    )
    text = (REPO / "ksql_migrations/kec/V000002__fact_invoice.sql").read_text()
    assert "VALUE_FORMAT = 'JSON'" in text and "AVRO" not in text
    payload = text[text.index("STRUCT(`invoice_id`") : text.index("AS `payload`")]
    assert sink["config"]["field.include.list"].split(",") == [
        f
        for f in ("invoice_id", "student_id", "amount_cents", "paid_cents", "status", "resource_path")
        if f"`{f}`" in payload
    ]


def test_no_example_reads_json_topics_as_avro() -> None:
    for path in sorted((REPO / "ksql_migrations").glob("*/V*.sql")):
        assert "'AVRO'" not in path.read_text(), path


def test_the_ksqldb_owned_sink_is_never_deleted_by_the_reconciler(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ksqldb_stub() as stub:
        point_at(monkeypatch, stub.url)
        cli(capsys, "ksql", "init")
        cli(capsys, "ksql", "apply", "--all")
        live = {
            name: Live(name, {k: str(v) for k, v in config.items()}, "sink") for name, config in stub.connectors.items()
        }
    steps = plan("lmsdwh", {}, live, Policy(max_deletes=100, max_delete_share=1.0)).steps
    assert [(s.name, s.action) for s in steps] == [("LMSDWH_DIM_USER_SINK", "unmanaged")]
    assert "JdbcSinkConnector" in steps[0].connector_class  # a JDBC sink, yet not deleted


def test_a_dry_run_of_the_examples_shows_placeholders_not_secrets(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ksqldb_stub() as stub:
        point_at(monkeypatch, stub.url)
        cli(capsys, "ksql", "init")
        code, out = cli(capsys, "ksql", "apply", "--all", "--dry-run")
    assert code == 0 and "V000002__dim_user.sql (version 2, 4 statements)" in out
    assert "'connection.password' = '${file:secrets/connect.properties:lmsdwh_password}'" in out
    assert "'collection.name.format' = 'public.dim_user'" in out
    assert Path(REPO / "ksql_migrations/lmsdwh/V000002__dim_user.sql").is_file()
