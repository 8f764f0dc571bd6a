"""`catalog refresh` (issue 45): the catalogs read again from the live databases the project
names; a change shows in words and in the file, an unchanged file is left alone, --check writes
nothing and exits 2, a database that cannot be read writes nothing at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hephaestus import pgschema
from hephaestus.cli import run
from hephaestus.generator.catalogdiff import changes
from hephaestus.generator.catalogs import catalog_json
from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema
from hephaestus.pg import DatabaseError

USERS = TableRef("public", "users")
BASE = TableSchema((Column("user_id", "text"), Column("name", "text")), ("user_id",))
CANARY = "s3cr3t-canary-pw"


def catalog(db: str, **tables: TableSchema) -> Catalog:
    return Catalog(f"{db}.json", db, {TableRef("public", n): t for n, t in tables.items()})


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REFRESH_CANARY_PW", CANARY)
    (tmp_path / "catalogs").mkdir()
    for db in ("bob", "auth"):
        (tmp_path / "catalogs" / f"{db}.json").write_text(catalog_json(catalog(db, users=BASE)))
    (tmp_path / "catalogs" / "other.json").write_text(catalog_json(catalog("other", users=BASE)))
    dsn = "host=127.0.0.1 user=postgres"
    pw = "password: {env: REFRESH_CANARY_PW}"
    (tmp_path / "hephaestus.yaml").write_text(
        "clusters: {c: {url: 'http://c', connectors: connectors/c}}\n"
        f"databases:\n  bob: {{dsn: '{dsn} dbname=bob', {pw}}}\n  auth: {{dsn: '{dsn} dbname=auth', {pw}}}\n"
    )
    return tmp_path


def live(monkeypatch: pytest.MonkeyPatch, found: dict[str, Catalog | Exception]) -> None:
    def dump(dsn: str, database: str) -> Catalog:
        got = found[database]
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(pgschema, "dump", dump)


def refresh(root: Path, *args: str) -> tuple[int, str]:
    base = ["catalog", "refresh", "--project", str(root / "hephaestus.yaml"), "--catalogs", str(root / "catalogs")]
    code = run([*base, *args])
    out = CAPTURED[0].readouterr()
    return code, out.out + out.err


CAPTURED: list[pytest.CaptureFixture[str]] = []


@pytest.fixture(autouse=True)
def _captured(capsys: pytest.CaptureFixture[str]) -> None:
    CAPTURED[:] = [capsys]


PHONE = TableSchema((*BASE.columns, Column("phone", "text")), ("user_id",))


def test_a_new_column_is_written_and_named_and_an_unchanged_file_left_alone(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live(monkeypatch, {"bob": catalog("bob", users=PHONE), "auth": catalog("auth", users=BASE)})
    auth = project / "catalogs" / "auth.json"
    before = auth.stat().st_mtime_ns
    code, out = refresh(project)
    assert code == 0, out
    assert "bob.json: public.users +phone (text)" in out and "other is not in" in out
    written = json.loads((project / "catalogs" / "bob.json").read_text())
    assert [c["name"] for c in written["tables"]["public.users"]["columns"]] == ["user_id", "name", "phone"]
    assert auth.stat().st_mtime_ns == before and "2 catalogs read, 1 rewritten" in out


def test_check_writes_nothing_and_exits_2(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live(monkeypatch, {"bob": catalog("bob", users=PHONE), "auth": catalog("auth", users=BASE)})
    before = (project / "catalogs" / "bob.json").read_text()
    code, out = refresh(project, "--check")
    assert code == 2 and "1 stale" in out
    assert (project / "catalogs" / "bob.json").read_text() == before
    live(monkeypatch, {"bob": catalog("bob", users=BASE), "auth": catalog("auth", users=BASE)})
    assert refresh(project, "--check")[0] == 0


def test_an_unreadable_database_writes_nothing_and_shows_no_secret(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live(
        monkeypatch,
        {"bob": catalog("bob", users=PHONE), "auth": DatabaseError("cannot read schema of database 'auth'")},
    )
    before = (project / "catalogs" / "bob.json").read_text()
    code, out = refresh(project)
    assert code == 1 and "auth" in out and CANARY not in out
    assert (project / "catalogs" / "bob.json").read_text() == before


def test_a_database_named_but_not_in_the_project_is_an_input_error(project: Path) -> None:
    code, out = refresh(project, "--database", "nowhere")
    assert code == 1 and "databases.nowhere" in out and "hephaestus.yaml" in out


def test_only_the_named_database_is_read(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live(monkeypatch, {"auth": catalog("auth", users=PHONE)})
    code, out = refresh(project, "--database", "auth")
    assert code == 0 and "auth.json: public.users +phone (text)" in out and "1 catalogs read" in out


def test_changes_in_words() -> None:
    old = catalog("bob", users=BASE, gone=BASE)
    new_users = TableSchema((Column("user_id", "bigint"), Column("phone", "text")), ("user_id", "phone"))
    new = catalog("bob", users=new_users, fresh=BASE)
    assert changes(old, new) == (
        "public.fresh added",
        "public.gone gone",
        "public.users +phone (text), -name, ~user_id (text -> bigint), primary key (user_id) -> (user_id, phone)",
    )
    assert changes(old, old) == ()
