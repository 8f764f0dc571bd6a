"""The data-warehouse (KEC) stack offline: `source_topic:` pipelines (ksqlDB's output into a
warehouse), their checks, and accuracy against a declared expectation (its SQL only; the
stack test runs it on PostgreSQL)."""

from __future__ import annotations

import json

import pytest

from hephaestus.accuracy import pairs, queries
from hephaestus.accuracy.db import TableInfo
from hephaestus.accuracy.model import Endpoint, Filters, TablePair
from hephaestus.accuracy.run import keyed_expectation, table_queries
from hephaestus.errors import HephaestusError
from hephaestus.generator.model import AccuracySpec, TableRef
from tests.unit.conftest import Project

SINK = "kec/sink/local_manabie_kec_to_kec_dwh_fact_invoice_sink_connector.json"
HEAD = """cluster: kec
database: invoicemgmt
envs: [local]
orgs: [manabie]
secrets_file: s.properties
"""
TOPIC = """  - source_topic: "{env}.{org}.kec.fact_invoice"
    key: [INVOICE_ID]
    columns: [INVOICE_ID, STUDENT_ID, PAID_CENTS, NOT_IN_TABLE, RESOURCE_PATH]
    sinks:
      - database: kec_dwh
        table: fact_invoice
"""


def only_kec(project: Project, text: str) -> tuple[int, str]:
    for path in project.definitions.glob("*.yaml"):
        path.unlink()
    (project.definitions / "kec.yaml").write_text(text)
    result = project.generate()
    return result.code, result.err


def config(project: Project) -> dict[str, str]:
    return json.loads(project.files()[SINK])["config"]  # type: ignore[no-any-return]


def test_the_shipped_example_captures_for_ksqldb_and_sinks_its_topic(project: Project) -> None:
    assert project.generate().code == 0
    files = project.files()
    source = json.loads(files["kec/source/local_manabie_invoicemgmt_source_connector.json"])["config"]
    assert source["table.include.list"] == "public.invoices,public.payments"
    assert not [f for f in files if f.startswith("kec/sink/") and "invoicemgmt_to" in f]  # sinks: []
    sink = config(project)
    assert sink["topics"] == "local.manabie.kec.fact_invoice"
    assert sink["primary.key.mode"] == "record_value" and sink["primary.key.fields"] == "invoice_id"
    assert sink["key.converter"] == "org.apache.kafka.connect.storage.StringConverter"
    assert "key.converter.schemas.enable" not in sink and "transforms" not in sink  # flat rows: no unwrap
    assert sink["delete.enabled"] == "false" and sink["collection.name.format"] == "fact_invoice"


def test_fields_are_the_topics_the_table_has_spelled_as_the_record_spells_them(project: Project) -> None:
    code, err = only_kec(project, HEAD + "pipelines:\n" + TOPIC)
    assert code == 0, err
    sink = config(project)
    assert sink["field.include.list"] == "INVOICE_ID,STUDENT_ID,PAID_CENTS,RESOURCE_PATH"
    assert sink["primary.key.fields"] == "INVOICE_ID"
    assert "local_manabie_invoicemgmt_source_connector" not in str(project.files())  # no table: no source


def test_a_tenant_filter_on_a_topic_sink_reads_the_flat_row(project: Project) -> None:
    text = HEAD + "pipelines:\n" + TOPIC + "        tenant_filter: {field: resource_path, values: ['7']}\n"
    assert only_kec(project, text)[0] == 0
    assert config(project)["transforms.tenant.condition"] == "value == null || ['7'].contains(value?.RESOURCE_PATH)"


def test_a_confluent_topic_sink_does_not_quote_upper_case_names(project: Project) -> None:
    assert only_kec(project, HEAD + "pipelines:\n" + TOPIC + "        flavour: confluent\n")[0] == 0
    sink = config(project)
    assert sink["pk.mode"] == "record_value" and sink["quote.sql.identifiers"] == "never"
    assert sink["table.name.format"] == "fact_invoice" and "transforms" not in sink


@pytest.mark.parametrize(
    "pipeline, field, message",
    [
        ("  - sinks: []\n", "pipelines[0]", "reads either source_table"),
        ("  - {source_table: invoices, source_topic: t, sinks: []}\n", "pipelines[0]", "not both"),
        ("  - {source_table: invoices, key: [a], sinks: []}\n", "pipelines[0].key", "belongs to a source_topic"),
        (
            "  - {source_topic: t, key: [invoice_id], sinks: []}\n",
            "pipelines[0].columns",
            "missing required key 'columns'",
        ),
        (
            "  - {source_topic: t, key: [invoice_id], columns: [invoice_id], sinks: [{database: kec_dwh}]}\n",
            "pipelines[0].sinks[0]",
            "names the warehouse table",
        ),
        (
            "  - {source_topic: 'a b', key: [x], columns: [x], sinks: []}\n",
            "pipelines[0].source_topic",
            "does not match",
        ),
        (
            "  - {source_topic: '{envs}.t', key: [x], columns: [x], sinks: []}\n",
            "pipelines[0].source_topic",
            "does not match",
        ),
    ],
)
def test_a_malformed_pipeline_names_its_field(project: Project, pipeline: str, field: str, message: str) -> None:
    code, err = only_kec(project, HEAD + "pipelines:\n" + pipeline)
    assert code == 1 and project.files() == {}
    assert "kec.yaml:" in err and f"at {field}" in err and message in err, err


@pytest.mark.parametrize(
    "change, field, message",
    [
        (("key: [INVOICE_ID]", "key: [STUDENT_ID]"), "pipelines[0].key", "is not the primary key of"),
        (("columns: [INVOICE_ID, ", "columns: ["), "pipelines[0].columns", "missing from columns"),
        (("table: fact_invoice", "table: nope"), "pipelines[0].sinks[0].table", "not in"),
        (
            ("table: fact_invoice", "table: fact_invoice\n        delete: true"),
            "pipelines[0].sinks[0].delete",
            "deletes cannot reach the table",
        ),
    ],
)
def test_a_topic_sink_that_cannot_work_is_refused(
    project: Project, change: tuple[str, str], field: str, message: str
) -> None:
    code, err = only_kec(project, HEAD + "pipelines:\n" + TOPIC.replace(*change))
    assert code == 1 and project.files() == {}
    assert f"at {field}" in err and message in err, err


def test_delete_from_sink_defaults_is_refused_on_a_topic_sink(project: Project) -> None:
    code, err = only_kec(project, HEAD + "sink_defaults: {delete: true}\npipelines:\n" + TOPIC)
    assert code == 1 and "at pipelines[0].sinks[0].delete" in err


def test_an_expectation_may_not_hold_a_second_statement(project: Project) -> None:
    text = HEAD + "pipelines:\n" + TOPIC + "        accuracy: {expect: 'SELECT 1; DROP TABLE x'}\n"
    code, err = only_kec(project, text)
    assert code == 1 and "at pipelines[0].sinks[0].accuracy.expect" in err


EXPECT = "SELECT invoice_id, paid_cents FROM t WHERE note LIKE 'a%' -- trailing comment"
PAIR = TablePair(
    Endpoint("invoicemgmt", TableRef(pairs.EXPECT, "fact_invoice"), EXPECT),
    Endpoint("kec_dwh", TableRef("public", "fact_invoice")),
    False,
    None,
    AccuracySpec(expect=EXPECT),
    "kec.yaml:34 at pipelines[2].sinks[0]",
)
SINK_TABLE = TableInfo(("invoice_id", "student_id", "paid_cents"), {}, ("invoice_id",))


def test_an_expectation_is_keyed_by_the_sink_tables_primary_key() -> None:
    src = keyed_expectation(PAIR, TableInfo(("paid_cents", "invoice_id"), {}, ()), SINK_TABLE)
    assert src.primary_key == ("invoice_id",)
    with pytest.raises(HephaestusError, match="returns no invoice_id"):
        keyed_expectation(PAIR, TableInfo(("paid_cents",), {}, ()), SINK_TABLE)


def test_an_expectation_is_compared_as_a_subquery_over_the_shared_columns() -> None:
    src = keyed_expectation(PAIR, TableInfo(("invoice_id", "paid_cents"), {}, ()), SINK_TABLE)
    a, b = table_queries(PAIR, src, SINK_TABLE, Filters("", ""), deep=True)
    assert a.columns == b.columns == ("invoice_id", "paid_cents") and a.key == b.key == ("invoice_id",)
    text = queries.count(a)[0].as_string(None)
    # The comment ends at the newline; `%` is doubled for psycopg and reaches PostgreSQL as one.
    assert text == f"SELECT count(*) FROM ({EXPECT.replace('%', '%%')}\n) AS heph_expected WHERE TRUE"
    assert queries.count(b)[0].as_string(None) == 'SELECT count(*) FROM "public"."fact_invoice" WHERE TRUE'


def test_only_topic_sinks_with_an_expectation_are_compared(project: Project) -> None:
    from hephaestus.generator.definitions import load_definitions

    only_kec(project, HEAD + "pipelines:\n" + TOPIC)
    assert pairs.table_pairs(load_definitions(project.definitions)) == []
    only_kec(project, HEAD + "pipelines:\n" + TOPIC + "        accuracy: {expect: 'SELECT 1 AS invoice_id'}\n")
    (pair,) = pairs.table_pairs(load_definitions(project.definitions))
    assert str(pair.source) == "invoicemgmt.expect.fact_invoice" and pair.source.query == "SELECT 1 AS invoice_id"
    assert pair.tenant_filter is None and pairs.filters(pair, ["invoice_id"], ["invoice_id"]) == Filters("", "")
