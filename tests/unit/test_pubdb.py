"""The publications edge (hephaestus.publications.db; apply's order in reconciler.prepare) through the PostgreSQL seam
(tests/unit/pgfake.py): the statements a read and an alter send, what they make of the
answers, and how a driver error reaches the user.

The catalogue reads are PostgreSQL's (`pg_publication.puballtables`, the view
`pg_publication_tables`, `to_regclass` answering NULL for a table that does not exist); the
`ALTER PUBLICATION … ADD TABLE / DROP TABLE` syntax is PostgreSQL 15's. run.py's upkeep is
tested with these functions replaced (test_core_run.py); here they meet the database."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from hephaestus import pg
from hephaestus.fleet.model import Desired
from hephaestus.project import Database, Project
from hephaestus.publications import db as pubdb
from hephaestus.publications.change import PublicationChange, Published
from hephaestus.reconciler import prepare
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan
from tests.unit.conftest import cleared
from tests.unit.pgfake import Server

ABSENT = (
    "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(format('%%I.%%I', split_part(t, '.', 1), "
    "split_part(t, '.', 2))) IS NULL"
)
PUBLICATION = "SELECT puballtables FROM pg_publication WHERE pubname = %s"
TABLES = "SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = %s"


class Catalogue(Server):
    """A database with some tables and, optionally, one publication over some of them."""

    def __init__(self, tables: set[str], published: set[str] | None = None, all_tables: bool = False) -> None:
        super().__init__(handlers=[self.answer])
        self.tables = tables
        self.published = published  # None: no such publication
        self.all_tables = all_tables
        self.params: list[list[Any]] = []

    def answer(self, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        self.params.append(params)
        if text == ABSENT:
            return [(t,) for t in params[0] if t not in self.tables]
        if text == PUBLICATION:
            return [] if self.published is None or params != ["pub"] else [(self.all_tables,)]
        if text == TABLES:
            return [(t,) for t in sorted(self.published or ())]
        return None


def test_a_read_names_the_publications_tables_and_the_named_tables_that_do_not_exist() -> None:
    db = Catalogue({"public.users", "public.sig"}, {"public.users"})
    with pg.seam(db.connect):
        got = pubdb.read("dbname=bob", "bob", "pub", {"public.users", "public.sig", "public.gone"})
    assert got == Published(True, frozenset({"public.users"}), False, frozenset({"public.gone"}))
    assert db.statements == [ABSENT, PUBLICATION, TABLES]
    assert db.params == [[["public.gone", "public.sig", "public.users"]], ["pub"], ["pub"]], "names sorted"
    assert db.connects == [
        {
            "dsn": "dbname=bob",
            "autocommit": True,
            "connect_timeout": pg.CONNECT_TIMEOUT_S,
            "application_name": "hephaestus publications",
        }
    ]


def test_a_publication_for_all_tables_is_read_as_such() -> None:
    db = Catalogue({"public.users"}, {"public.users", "public.other"}, all_tables=True)
    with pg.seam(db.connect):
        got = pubdb.read("dbname=bob", "bob", "pub", ["public.users"])
    assert got == Published(True, frozenset({"public.users", "public.other"}), True, frozenset())


def test_a_missing_publication_is_read_as_absent_without_listing_its_tables() -> None:
    db = Catalogue({"public.users"})
    with pg.seam(db.connect):
        got = pubdb.read("dbname=bob", "bob", "pub", ["public.users", "public.t"])
    assert got == Published(False, absent=frozenset({"public.t"}))
    assert db.statements == [ABSENT, PUBLICATION]


def test_a_database_that_cannot_be_reached_is_one_line_naming_it() -> None:
    db = Server(refuse='connection to server at "h" failed: Connection refused\n\tIs the server running?')
    with pg.seam(db.connect), pytest.raises(pg.DatabaseError) as raised:
        pubdb.read("dbname=bob", "bob", "pub", ["public.users"])
    assert str(raised.value) == 'database bob: connection to server at "h" failed: Connection refused'


def test_a_driver_error_during_a_read_is_one_line_naming_the_database() -> None:
    def denied(text: str, params: list[Any]) -> None:
        raise psycopg.errors.InsufficientPrivilege("permission denied for table pg_publication\nHINT: ask")

    db = Server(handlers=[denied])
    with pg.seam(db.connect), pytest.raises(pg.DatabaseError) as raised:
        pubdb.read("dbname=bob", "bob", "pub", [])
    assert str(raised.value) == "database bob: permission denied for table pg_publication"


def test_an_alter_adds_then_drops_each_table_as_one_quoted_identifier() -> None:
    db = Server(handlers=[lambda text, params: [] if text.startswith("ALTER PUBLICATION") else None])
    change = PublicationChange("bob", 'my"pub', ("public.t", "sales.Orders"), ("users",), ("src",))
    with pg.seam(db.connect):
        pubdb.alter("dbname=bob", change)
    assert db.statements == [
        'ALTER PUBLICATION "my""pub" ADD TABLE "public"."t", "sales"."Orders"',
        'ALTER PUBLICATION "my""pub" DROP TABLE "public"."users"',
    ]
    assert db.connects[0]["application_name"] == "hephaestus publications"


def test_an_alter_with_nothing_to_add_sends_only_the_drop() -> None:
    db = Server(handlers=[lambda text, params: [] if text.startswith("ALTER PUBLICATION") else None])
    with pg.seam(db.connect):
        pubdb.alter("dbname=bob", PublicationChange("bob", "pub", drop=("public.t",)))
    assert db.statements == ['ALTER PUBLICATION "pub" DROP TABLE "public"."t"']


def refusing(text: str, params: list[Any]) -> None:
    raise psycopg.errors.InsufficientPrivilege("must be owner of publication pub\nDETAIL: x")


def test_a_refused_alter_stops_at_its_first_statement_naming_the_database() -> None:
    db = Server(handlers=[refusing])
    with pg.seam(db.connect), pytest.raises(pg.DatabaseError) as raised:
        pubdb.alter("dbname=bob", PublicationChange("bob", "pub", ("public.t",), ("public.u",)))
    assert str(raised.value) == "database bob: must be owner of publication pub"
    assert db.statements == ['ALTER PUBLICATION "pub" ADD TABLE "public"."t"'], "the drop never sent"


def project(**dbs: str) -> Project:
    return Project("p.yaml", {}, {name: Database(name, dsn) for name, dsn in dbs.items()})


def plan_of(*changes: PublicationChange) -> Plan:
    return Plan("c", (), publications=changes)


def applied(proj: Project, p: Plan) -> tuple[StepResult, ...]:
    return prepare.alter_all(proj, p, cleared(p))


def by_dsn(servers: dict[str, Server]) -> Any:
    return lambda dsn, **options: servers[dsn].connect(dsn, **options)


def test_alter_all_applies_each_change_in_order_and_says_what_it_did() -> None:
    ok = Server(handlers=[lambda text, params: []])
    first = PublicationChange("bob", "pub", ("public.t",), (), ("src",))
    second = PublicationChange("eve", "pub2", (), ("public.u",), ("s2", "s3"))
    with pg.seam(by_dsn({"dbname=bob": ok, "dbname=eve": ok})):
        got = applied(project(bob="dbname=bob", eve="dbname=eve"), plan_of(first, second))
    assert got == (
        StepResult("bob/pub", "publication", True, "add public.t (for src)", wrote=True),
        StepResult("eve/pub2", "publication", True, "drop public.u (for s2, s3)", wrote=True),
    )
    assert ok.statements == [
        'ALTER PUBLICATION "pub" ADD TABLE "public"."t"',
        'ALTER PUBLICATION "pub2" DROP TABLE "public"."u"',
    ]


def test_alter_all_stops_at_the_first_failure_and_runs_nothing_after_it() -> None:
    ok, refused, never = Server(handlers=[lambda text, params: []]), Server(handlers=[refusing]), Server()
    changes = (
        PublicationChange("bob", "pub", ("public.t",), (), ("src",)),
        PublicationChange("eve", "pub", ("public.t",), (), ("s2",)),
        PublicationChange("zed", "pub", ("public.t",), (), ("s3",)),
    )
    servers = {"dbname=bob": ok, "dbname=eve": refused, "dbname=zed": never}
    with pg.seam(by_dsn(servers)):
        got = applied(project(bob="dbname=bob", eve="dbname=eve", zed="dbname=zed"), plan_of(*changes))
    assert got == (
        StepResult("bob/pub", "publication", True, "add public.t (for src)", wrote=True),
        StepResult("eve/pub", "publication", False, "database eve: must be owner of publication pub"),
    )
    assert never.connects == [] and never.statements == []


def test_alter_all_reports_a_database_missing_from_the_project_as_that_changes_failure() -> None:
    with pg.seam(Server().connect):
        (got,) = applied(project(), plan_of(PublicationChange("bob", "pub", ("public.t",), (), ("src",))))
    assert got == StepResult(
        "bob/pub", "publication", False, "database 'bob' is not in p.yaml (databases:): publication upkeep needs it"
    )


POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"


def source(database: str, tables: str) -> Desired:
    config = {
        "connector.class": POSTGRES,
        "database.dbname": database,
        "topic.prefix": database,
        "publication.name": "pub",
        "signal.data.collection": "public.sig",
        "table.include.list": tables,
    }
    return Desired(database, config)


def test_published_reads_each_sources_publication_from_its_database() -> None:
    db = Catalogue({"public.users", "public.sig"}, {"public.users"})
    desired = {"bob": source("bob", "public.users,public.t")}
    with pg.seam(db.connect):
        got = pubdb.published(project(bob="dbname=bob"), desired, {})
    assert got.state == {("bob", "pub"): Published(True, frozenset({"public.users"}), False, frozenset({"public.t"}))}
    assert got.warnings == () and got.problems == {}
    assert db.params[0] == [["public.sig", "public.t", "public.users"]], "captured tables and the signal table"


def test_published_leaves_a_database_the_project_does_not_name_alone_and_stops_one_it_cannot_read() -> None:
    desired = {"aaa": source("aaa", "public.users"), "bob": source("bob", "public.users")}
    with pg.seam(Server(refuse="connection refused").connect):
        got = pubdb.published(project(bob="dbname=bob"), desired, {})
    assert got.state == {}
    assert got.warnings == (
        "publication pub of database aaa not checked (aaa): add aaa to the project's databases for publication upkeep",
    )
    assert got.problems == {
        "bob": {"publication.name": ("cannot read publication pub: database bob: connection refused",)}
    }


def test_alter_all_writes_no_change_the_gate_did_not_pass() -> None:
    """The plan apply holds is the cleared one; a change outside the pass is a defect, never a write."""
    db = Server(handlers=[lambda text, params: []])
    passed, stray = (PublicationChange(d, "pub", ("public.t",), (), ("src",)) for d in ("bob", "eve"))
    with pg.seam(by_dsn({"dbname=bob": db, "dbname=eve": db})):
        got = prepare.alter_all(
            project(bob="dbname=bob", eve="dbname=eve"), plan_of(passed, stray), cleared(plan_of(passed))
        )
    assert got == (
        StepResult("bob/pub", "publication", True, "add public.t (for src)", wrote=True),
        StepResult("eve/pub", "publication", False, "not cleared by the safety gate"),
    )
    assert db.statements == ['ALTER PUBLICATION "pub" ADD TABLE "public"."t"']
