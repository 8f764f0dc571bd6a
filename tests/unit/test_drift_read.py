"""Schema drift read end to end through the PostgreSQL fake (tests/unit/pgfake.py): the shipped
definition and catalogs beside a project file, one session per database, the three reads (columns,
primary keys, publications) answered as PostgreSQL does; a database that refuses is unknown; a
database the project does not name is said, not compared; no definitions: nothing compared."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from hephaestus import pg
from hephaestus.drift.read import schema_report
from hephaestus.project import load_project
from tests.unit.pgfake import Server

REPO = Path(__file__).resolve().parents[2]
SINK = "local_manabie_bob_to_auth_users_sink_connector"
SOURCE = "local_manabie_bob_source_connector"
USERS = [  # bob.public.users as information_schema lists it: name, type, nullable, has a default
    ("user_id", "text", False, False),
    ("name", "text", True, False),
    ("email", "text", True, False),
    ("resource_path", "text", True, False),
    ("created_at", "timestamp with time zone", False, True),
    ("updated_at", "timestamp with time zone", False, True),
    ("deleted_at", "timestamp with time zone", True, False),
    ("internal_note", "text", True, False),
]


def columns(table: str, cols: list[tuple[str, str, bool, bool]]) -> list[tuple[Any, ...]]:
    return [(table, *c) for c in cols]


def strict(pattern: str, rows: list[tuple[Any, ...]], asked: list[str]) -> Any:
    """Answers `pattern` only when asked for exactly `asked` (sorted, as one array), with the rows of those."""

    def answer(text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
        if not re.search(pattern, text):
            return None
        assert params == [asked], params
        return [r for r in rows if r[0] in asked]

    return answer


def bob(extra: list[tuple[str, str, bool, bool]] | None = None, published: bool = True) -> Server:
    rows = columns("public.users", [*USERS, *(extra or [])]) + columns(
        "public.dbz_signals", [("id", "text", False, False)]
    )
    rows += columns("public.other", [("x", "text", False, False)])  # never asked for
    pubs = [
        ("debezium_publication", False, t) for t in ("public.dbz_signals", *(("public.users",) if published else ()))
    ]
    tables = ["public.dbz_signals", "public.users"]
    return Server(
        handlers=[
            strict(r"FROM information_schema\.columns", rows, tables),
            strict(r"WHERE i\.indisprimary", [("public.users", "user_id")], tables),
            strict(r"FROM pg_publication p", pubs, ["debezium_publication"]),
        ]
    )


def auth(extra: list[tuple[str, str, bool, bool]] | None = None) -> Server:
    sink = [c for c in USERS if c[0] != "internal_note"] + list(extra or [])
    return Server(
        handlers=[
            strict(r"FROM information_schema\.columns", columns("public.users", sink), ["public.users"]),
            strict(r"WHERE i\.indisprimary", [("public.users", "user_id")], ["public.users"]),
            strict(r"FROM pg_publication p", [], []),
        ]
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "definitions", tmp_path / "definitions")
    shutil.copytree(REPO / "catalogs", tmp_path / "catalogs")
    names = ("bob", "auth", "eureka", "fatima", "lmsdwh", "tokyo_jprep_dwh", "invoicemgmt", "kec_dwh")
    dbs = "\n".join(f"  {n}: {{dsn: 'host=fake dbname={n}'}}" for n in names if n != "fatima")
    (tmp_path / "hephaestus.yaml").write_text(
        "clusters:\n  platforms: {url: 'http://p', connectors: connectors/platforms}\n" + f"databases:\n{dbs}\n"
    )
    return tmp_path / "hephaestus.yaml"


def report(project: Path, servers: dict[str, Server], runs: frozenset[str] = frozenset({SINK, SOURCE})) -> Any:
    def factory(dsn: str, **options: Any) -> Any:
        return servers[dsn.rsplit("dbname=", 1)[1].split()[0]].connect(dsn, **options)

    with pg.seam(factory):
        return schema_report(load_project(project), lambda cluster, name: cluster == "platforms" and name in runs)


def test_a_pipeline_in_step_is_compared_and_has_no_finding(project: Path) -> None:
    servers = {"bob": bob(), "auth": auth()}
    found = report(project, servers)
    assert found.findings == () and found.pipelines == ("bob.public.users->auth.public.users",)
    assert [len(s.connects) for s in servers.values()] == [1, 1]  # one session per database


def test_an_added_column_and_a_table_out_of_its_publication_are_named(project: Path) -> None:
    phone = [("phone", "text", True, False)]
    found = report(project, {"bob": bob(phone, published=False), "auth": auth(phone)})
    assert [(f.code, f.subject) for f in found.findings] == [
        ("capture-dropped", "public.users"),
        ("column-not-replicated", "users.phone"),
    ]
    assert found.findings[0].sources == (SOURCE,) and found.findings[1].sinks == (SINK,)


def test_a_database_that_refuses_is_unknown(project: Path) -> None:
    found = report(project, {"bob": bob(), "auth": Server(refuse="password authentication failed")})
    (f,) = found.findings
    assert (f.code, f.subject) == ("unknown", "auth") and "cannot read database auth" in f.why


def test_a_database_the_project_does_not_name_is_said_not_compared(project: Path) -> None:
    runs = frozenset({"local_manabie_bob_to_fatima_students_sink_connector", SOURCE})
    found = report(project, {"bob": bob()}, runs)
    assert found.findings == () and found.pipelines == ()
    assert found.unchecked == ("schema drift of database fatima not checked: add it to the project's databases",)


def test_a_catalog_that_does_not_parse_is_one_unknown_naming_it(project: Path) -> None:
    (project.parent / "catalogs" / "auth.json").write_text("{")
    (f,) = report(project, {}).findings
    assert (f.code, f.pipeline) == ("unknown", "*") and "auth.json" in f.why


def test_no_definitions_compares_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.rmtree(project.parent / "definitions")
    monkeypatch.chdir(project.parent)
    assert report(project, {}).findings == () and report(project, {}).pipelines == ()


def test_definitions_in_the_working_directory_when_none_are_beside_the_project_file(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart mounts the project file apart from the image's /app, which holds them."""
    app = tmp_path_factory.mktemp("app")
    for folder in ("definitions", "catalogs"):
        shutil.move(str(project.parent / folder), str(app / folder))
    monkeypatch.chdir(app)
    assert report(project, {"bob": bob(), "auth": auth()}).pipelines == ("bob.public.users->auth.public.users",)


def test_a_required_sink_column_counts_its_default_and_the_sessions_are_named(project: Path) -> None:
    required = [("tenant", "text", False, False)]
    servers = {"bob": bob(), "auth": auth(required)}
    (f,) = report(project, servers).findings
    assert (f.code, f.subject, f.sinks, f.sources) == ("sink-write-fails", "users.tenant", (SINK,), ())
    assert report(project, {"bob": bob(), "auth": auth([("tenant", "text", False, True)])}).findings == ()
    assert servers["auth"].connects[0]["application_name"] == "hephaestus schema"


def test_a_source_database_that_refuses_names_it(project: Path) -> None:
    (f,) = report(project, {"bob": Server(refuse="boom"), "auth": auth()}).findings
    assert (f.code, f.subject, f.sinks, f.sources) == ("unknown", "bob", (SINK,), (SOURCE,))
    assert f.why.startswith("cannot read database bob: ") and "boom" in f.why


def test_a_publication_for_all_tables_and_one_that_is_gone(project: Path) -> None:
    every = bob()
    every.handlers[2] = strict(
        r"FROM pg_publication p", [("debezium_publication", True, None)], ["debezium_publication"]
    )
    assert report(project, {"bob": every, "auth": auth()}).findings == ()
    gone = bob()
    gone.handlers[2] = strict(r"FROM pg_publication p", [], ["debezium_publication"])
    (f,) = report(project, {"bob": gone, "auth": auth()}).findings
    assert (f.code, f.why) == ("capture-dropped", "publication debezium_publication does not exist in bob")


def test_the_old_layout_reads_catalogs_from_schemas(project: Path) -> None:
    (project.parent / "catalogs").rename(project.parent / "schemas")
    assert report(project, {"bob": bob(), "auth": auth()}).pipelines == ("bob.public.users->auth.public.users",)


def test_definitions_that_do_not_parse_are_one_unknown_for_every_cluster(project: Path) -> None:
    (project.parent / "definitions" / "bob.yaml").write_text("cluster: [")
    (f,) = report(project, {}).findings
    assert (f.code, f.pipeline, f.subject) == ("unknown", "*", "definitions")
    assert f.why.startswith("cannot compare schemas: ") and "bob.yaml" in f.why
