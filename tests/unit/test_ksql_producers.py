"""A ksqlDB migration is a producer (issue 48): which topics a project's migrations write, read
as `ksql apply` runs them, so that a sink fed by one waits for it rather than refusing a plan."""

from __future__ import annotations

from pathlib import Path

from hephaestus.fleet.ksqltopics import written
from hephaestus.ksql.producers import topics_written
from hephaestus.project import load_project
from tests.unit.conftest import REPO


def run(*texts: str) -> dict[str, str]:
    return written((t, f"f:{i}") for i, t in enumerate(texts, 1))


def test_a_query_writes_its_topic_a_declaration_does_not() -> None:
    assert run(
        "CREATE STREAM CDC (ID INT) WITH (KAFKA_TOPIC='bob.public.users', VALUE_FORMAT='JSON');",
        "CREATE TABLE fact WITH (KAFKA_TOPIC = 'dwh.fact', VALUE_FORMAT='JSON') AS SELECT ID FROM CDC;",
        "create or replace stream `Quiet` as select * from CDC;",
    ) == {"dwh.fact": "f:2", "Quiet": "f:3"}  # no KAFKA_TOPIC: ksqlDB's default, the object's name


def test_insert_into_makes_a_declared_stream_a_producer_and_drop_ends_it() -> None:
    assert run(
        "CREATE STREAM OUT (ID INT) WITH (KAFKA_TOPIC='o''t', PARTITIONS=1, VALUE_FORMAT='JSON');",
        "INSERT INTO out SELECT ID FROM CDC;",
    ) == {"o't": "f:2"}
    assert run("CREATE STREAM X AS SELECT * FROM A;", "DROP STREAM IF EXISTS x;") == {}
    assert run("INSERT INTO NOWHERE SELECT * FROM A;") == {}  # into nothing declared: not known
    # Re-created without a query: declared only, no longer written.
    assert (
        run("CREATE STREAM X AS SELECT * FROM A;", "CREATE OR REPLACE STREAM X (I INT) WITH (KAFKA_TOPIC='X');") == {}
    )


def test_the_shipped_projects_kec_migration_writes_the_fact_invoice_topic() -> None:
    found = topics_written(load_project(REPO / "hephaestus.yaml"))
    assert found["local.manabie.kec.fact_invoice"].startswith("kec V000002__fact_invoice.sql:")


def test_a_project_without_migrations_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "clusters: {c: {url: 'http://127.0.0.1:1', connectors: c}}\n"
        "ksqldb: {k: {url: 'http://127.0.0.1:1', migrations: nowhere}}\n"
    )
    assert topics_written(load_project(tmp_path / "p.yaml")) == {}


def test_a_dropped_connector_leaves_a_stream_of_its_name_and_a_dropped_stream_takes_no_insert() -> None:
    assert run("CREATE STREAM X AS SELECT * FROM A;", "DROP CONNECTOR X;") == {"X": "f:1"}
    assert run("CREATE STREAM X AS SELECT * FROM A;", "DROP STREAM X;", "INSERT INTO X SELECT * FROM A;") == {}
    assert run("DROP TABLE IF EXISTS NEVER;") == {}  # nothing to drop: no error
