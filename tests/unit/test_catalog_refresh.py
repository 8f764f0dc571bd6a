"""`catalog refresh` (issue 45), offline through the PostgreSQL edge's seam: the catalogs read
again from the live databases the project names; a change shows in words and in the file, and
`generate` follows it (a sink's field list widens); an unchanged file is left alone; --check
writes nothing and exits 2; a database that cannot be read writes nothing at all and prints no
secret."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hephaestus import pg, pgschema
from hephaestus.cli import run
from hephaestus.generator.catalogs import catalog_json
from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema
from tests.unit.pgfake import Connection, Server, on

CANARY = "s3cr3t-canary-pw"
BASE = TableSchema((Column("user_id", "text"), Column("name", "text")), ("user_id",))
PHONE = TableSchema((*BASE.columns, Column("phone", "text")), ("user_id",))
DEFINITION = """\
cluster: platforms
database: bob
envs: [local]
orgs: [manabie]
pipelines:
  - source_table: users
    sinks:
      - database: auth
"""
SINK = "connectors/platforms/sink/local_manabie_bob_to_auth_users_sink_connector.json"


def catalog(db: str, **tables: TableSchema) -> Catalog:
    return Catalog(f"{db}.json", db, {TableRef("public", n): t for n, t in tables.items()})


def server_of(found: Catalog) -> Server:
    """A database answering the dump's two queries as PostgreSQL would for `found`."""
    tables = sorted(found.tables.items())
    columns = [(r.schema, r.table, c.name, c.type) for r, t in tables for c in t.columns]
    keys = [(r.schema, r.table, k) for r, t in tables for k in t.primary_key]
    return Server(handlers=[on(r"FROM information_schema\.columns", columns), on(r"FROM pg_index", keys)])


@dataclass
class World:
    root: Path
    capsys: pytest.CaptureFixture[str]

    @property
    def catalogs(self) -> Path:
        return self.root / "catalogs"

    def cli(self, *args: str) -> tuple[int, str, str]:
        code = run(list(args))
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def refresh(self, *args: str) -> tuple[int, str, str]:
        return self.cli("catalog", "refresh", *self._where(), "--catalogs", str(self.catalogs), *args)

    def generate(self) -> tuple[int, str, str]:
        where = [*self._where(), "--definitions", str(self.root / "definitions"), "--catalogs", str(self.catalogs)]
        return self.cli("generate", *where, "--out", str(self.out))

    @property
    def out(self) -> Path:
        return self.root / "connectors"

    def _where(self) -> list[str]:
        return ["--project", str(self.root / "hephaestus.yaml")]

    def fields(self) -> list[str]:
        config = json.loads((self.root / SINK).read_text())["config"]
        # The probe's own fields (generator.probe) are not the table's columns.
        return [f for f in str(config["field.include.list"]).split(",") if not f.startswith("hephaestus_probe:")]


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> World:
    """bob and auth in the project, their catalogs and a third catalog (`other`) of a database
    the project does not name. The canary is both passwords: inside bob's DSN (given by env, the
    one place the project file allows a password in a DSN) and auth's `password:`."""
    monkeypatch.setenv("REFRESH_BOB_DSN", f"host=10.0.0.9 user=postgres password={CANARY} dbname=bob")
    monkeypatch.setenv("REFRESH_AUTH_PW", CANARY)
    auth = "{dsn: 'host=10.0.0.9 user=postgres dbname=auth', password: {env: REFRESH_AUTH_PW}}"
    (tmp_path / "hephaestus.yaml").write_text(
        "clusters: {platforms: {url: 'http://c', connectors: connectors/platforms}}\n"
        f"databases:\n  bob: {{dsn_env: REFRESH_BOB_DSN}}\n  auth: {auth}\n"
    )
    (tmp_path / "catalogs").mkdir()
    for db in ("bob", "auth", "other"):
        (tmp_path / "catalogs" / f"{db}.json").write_text(catalog_json(catalog(db, users=BASE)))
    (tmp_path / "definitions").mkdir()
    (tmp_path / "definitions" / "bob.yaml").write_text(DEFINITION)
    return World(tmp_path, capsys)


@contextmanager
def live(**found: Catalog | str) -> Iterator[list[str]]:
    """The live databases: a catalog each, or the message a refused connection raises. Yields
    the databases connected to, in order."""
    servers = {db: server_of(c) if isinstance(c, Catalog) else Server(refuse=c) for db, c in found.items()}
    read: list[str] = []

    def connect(dsn: str, **options: Any) -> Connection:
        read.append(options["dbname"])
        return servers[options["dbname"]].connect(dsn, **options)

    with pg.seam(connect):
        yield read


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_a_new_column_is_written_and_generate_widens_the_sink(world: World) -> None:
    code, _, err = world.generate()
    assert code == 0, err
    assert world.fields() == ["user_id", "name"]
    with live(bob=catalog("bob", users=PHONE), auth=catalog("auth", users=PHONE)):
        code, out, err = world.refresh()
    assert code == 0, err
    assert f"{world.catalogs / 'bob.json'}: public.users +phone (text)\n" in out
    assert f"{world.catalogs / 'auth.json'}: public.users +phone (text)\n" in out
    assert "warning: " in err and "database other is not in" in err and "2 catalogs read, 2 rewritten" in err
    assert (world.catalogs / "bob.json").read_text() == catalog_json(catalog("bob", users=PHONE))
    code, _, err = world.generate()
    assert code == 0, err
    assert world.fields() == ["user_id", "name", "phone"]


def test_a_column_only_the_source_has_is_not_written_to_the_sink(world: World) -> None:
    """field.include.list is source ∩ sink: the refresh shows the column, generate holds back."""
    with live(bob=catalog("bob", users=PHONE), auth=catalog("auth", users=BASE)):
        code, out, _ = world.refresh()
    assert code == 0 and f"{world.catalogs / 'auth.json'}: unchanged\n" in out
    assert world.generate()[0] == 0 and world.fields() == ["user_id", "name"]


def test_an_unchanged_catalog_is_left_alone(world: World) -> None:
    before = snapshot(world.catalogs)
    with live(bob=catalog("bob", users=BASE), auth=catalog("auth", users=BASE)):
        code, out, err = world.refresh()
    assert code == 0 and snapshot(world.catalogs) == before
    assert out.count(": unchanged\n") == 2 and "2 catalogs read, 0 rewritten" in err


def test_a_hand_formatted_catalog_is_rewritten_as_dump_writes_it(world: World) -> None:
    bob = world.catalogs / "bob.json"
    bob.write_text(json.dumps(json.loads(bob.read_text())))  # same tables, one line
    with live(bob=catalog("bob", users=BASE)):
        code, out, _ = world.refresh("--database", "bob")
    assert code == 0 and out == f"{bob}: reformatted\n"
    assert bob.read_text() == catalog_json(catalog("bob", users=BASE))


def test_check_writes_nothing_and_exits_2_when_stale(world: World) -> None:
    before = snapshot(world.catalogs)
    with live(bob=catalog("bob", users=PHONE), auth=catalog("auth", users=BASE)):
        code, out, err = world.refresh("--check")
    assert code == 2 and "public.users +phone (text)" in out and "2 catalogs read, 1 stale" in err
    assert snapshot(world.catalogs) == before
    with live(bob=catalog("bob", users=BASE), auth=catalog("auth", users=BASE)):
        assert world.refresh("--check")[0] == 0


def test_an_unreadable_database_writes_nothing_and_prints_no_secret(world: World) -> None:
    before = snapshot(world.catalogs)
    # libpq may echo what it was given: the message carries the password, the edge redacts it.
    refused = f'connection to server at "10.0.0.9" failed: password={CANARY} rejected\nDETAIL: more'
    with live(auth=refused, bob=catalog("bob", users=PHONE)) as read:
        code, out, err = world.refresh()
    assert code == 1 and read == ["auth"]  # auth first (name order): bob is never read
    assert err.startswith("error: cannot read schema of database 'auth': connection to server")
    assert err.count("\n") == 1  # the one error line (nothing else is printed before all is read)
    assert CANARY not in out + err and out == ""
    assert snapshot(world.catalogs) == before


def test_one_unreadable_database_of_several_writes_none(world: World) -> None:
    """Read all, then write: bob's change, read before auth failed, is not written either."""
    before = snapshot(world.catalogs)
    with live(bob=catalog("bob", users=PHONE), auth="FATAL: no such database") as read:
        code, _, err = world.refresh("--database", "bob", "--database", "auth")
    assert code == 1 and read == ["bob", "auth"] and "database 'auth'" in err
    assert snapshot(world.catalogs) == before


def test_a_database_named_but_not_in_the_project_is_an_input_error(world: World) -> None:
    with live() as read:
        code, out, err = world.refresh("--database", "nowhere")
    assert code == 1 and read == [] and out == ""
    where = f"{world.root / 'hephaestus.yaml'} at databases.nowhere"
    assert err == f"error: {where}: database 'nowhere' is not in the project file (databases: auth, bob)\n"


def test_a_catalog_named_whose_database_is_not_in_the_project_is_an_error(world: World) -> None:
    code, _, err = world.refresh("--database", "other")
    assert code == 1 and "at databases.other:" in err


def test_only_the_named_database_is_read(world: World) -> None:
    with live(auth=catalog("auth", users=PHONE)) as read:
        code, out, err = world.refresh("--database", "auth", "--database", "auth")
    assert code == 0 and read == ["auth"] and "1 catalogs read, 1 rewritten" in err
    assert out == f"{world.catalogs / 'auth.json'}: public.users +phone (text)\n"


def test_a_database_without_a_catalog_gets_one_when_named(world: World) -> None:
    (world.catalogs / "auth.json").unlink()
    with live(auth=catalog("auth", users=BASE, roles=BASE)):
        code, out, _ = world.refresh("--database", "auth")
    assert code == 0 and out == f"{world.catalogs / 'auth.json'}: new catalog (2 tables)\n"
    assert (world.catalogs / "auth.json").read_text() == catalog_json(catalog("auth", users=BASE, roles=BASE))


def test_a_renamed_table_makes_generate_name_the_definition_and_field(world: World) -> None:
    assert world.generate()[0] == 0
    generated = snapshot(world.out / "platforms" / "sink")
    with live(bob=catalog("bob", accounts=BASE), auth=catalog("auth", users=BASE)):
        code, out, _ = world.refresh()
    assert code == 0 and f"{world.catalogs / 'bob.json'}: public.accounts added; public.users gone\n" in out
    code, _, err = world.generate()
    assert code == 1 and snapshot(world.out / "platforms" / "sink") == generated
    bob = world.root / "definitions" / "bob.yaml"
    assert f"{bob}:6 at pipelines[0].source_table: table public.users not in {world.catalogs / 'bob.json'}" in err


def test_a_catalog_that_cannot_be_written_is_one_error_line(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, data: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(pgschema, "save_json", refuse)
    with live(auth=catalog("auth", users=PHONE)):
        code, _, err = world.refresh("--database", "auth")
    assert code == 1 and err == f"error: cannot write catalog {world.catalogs / 'auth.json'}: Permission denied\n"


def test_no_catalogs_and_none_named_says_so(world: World) -> None:
    for path in world.catalogs.iterdir():
        path.unlink()
    code, out, _ = world.refresh()
    assert code == 0 and out == f"no catalogs in {world.catalogs} (name a database with --database)\n"
