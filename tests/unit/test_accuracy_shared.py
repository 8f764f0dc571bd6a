"""`accuracy --repair` through the PostgreSQL seam (tests/unit/pgfake.py): a sink table two
pipelines fill is never emptied by `--delete-extra` (issue 43, item 1), `--dry-run` shows the
keys and rows and writes nothing (item 7), and the real run does what the dry run showed.

The fake answers accuracy's statements over in-memory tables `{id: name}` (columns `id`,
`name`, key `id`), one per database; a statement it does not know fails the test."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hephaestus import pg
from hephaestus.accuracy import mend, render, sinkdb
from hephaestus.accuracy.model import AccuracyReport, Endpoint
from hephaestus.accuracy.run import AccuracyOptions
from hephaestus.cli import run
from hephaestus.generator.definitions import load_definitions
from hephaestus.generator.model import TableRef
from hephaestus.project import load_project
from hephaestus.safety.gate import Refused
from tests.unit import pgfake

Table = dict[object, str]  # id -> name
SOURCES = ("a", "b")


class Conn(pgfake.Connection):
    """A connection that can end its snapshot and counts the rows a DELETE removed."""

    def rollback(self) -> None:
        pass

    def execute(self, query: Any, params: list[Any] | None = None) -> pgfake.Result:
        result = super().execute(query, params)
        result.rowcount = len(result.rows)  # type: ignore[attr-defined]  # a DELETE answers with its rows
        return result


class Db(pgfake.Server):
    def __init__(self, tables: dict[str, Table], slots: tuple[str, ...] = ()) -> None:
        super().__init__(handlers=[lambda text, params: answer(self, text, params)])
        self.tables = tables
        self.slots = slots
        self.fail_delete = False

    def connect(self, dsn: str, **options: Any) -> pgfake.Connection:
        self.connects.append({"dsn": dsn, **options})
        return Conn(self)


def row_hash(key: object, name: str) -> str:
    return f"{key}:{name}"


def answer(db: Db, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
    """Accuracy's catalogue reads first, then the statements on a table."""
    if text.startswith("SELECT set_config("):
        return [("ok",)]
    if text.startswith("SELECT a.attname, format_type"):
        found = f"{params[0]}.{params[1]}" in db.tables
        return [("id", "text", None), ("name", "text", None)] if found else []
    if text.startswith("SELECT a.attname FROM pg_index"):
        return [("id",)]
    if "FROM pg_replication_slots WHERE database" in text:
        return [(s,) for s in db.slots]
    if text.startswith("SELECT pg_wal_lsn_diff"):
        return [(0,)]
    if text.startswith(("SELECT hashtextextended('hephaestus", "SELECT hash_record_extended(ROW(true")):
        return [(1,)]
    return on_table(db, text, params)


def on_table(db: Db, text: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
    named = re.search(r'FROM "([^"]+)"\."([^"]+)"', text)
    if named is None:
        return None
    rows = db.tables[f"{named[1]}.{named[2]}"]
    if text.startswith("SELECT count(*)"):
        return [(len(rows),)]
    if text.startswith("DELETE FROM"):
        if db.fail_delete:
            raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
        gone = [k for k in params if rows.pop(k, None) is not None]
        return [(k,) for k in gone]
    if " IN (" in text:  # a repair's read-back of some keys
        return [(k, row_hash(k, rows[k])) for k in params if k in rows]
    if "ORDER BY" in text:  # the first keys of a side the other lacks entirely
        return [(k,) for k in sorted(rows, key=str)]
    return [(k, row_hash(k, v)) for k, v in rows.items()]


def definition(database: str, sink_table: str = "users") -> str:
    return textwrap.dedent(f"""\
        cluster: platforms
        database: {database}
        envs: [local]
        orgs: [manabie]
        debezium_version: "3.6"
        naming: literal
        secrets_file: secrets/connect.properties
        converter:
          format: json
        source:
          publication: debezium_publication
          signal_table: public.dbz_signals
          heartbeat_table: public.debezium_heartbeat
          snapshot_mode: initial
        sink_defaults:
          flavour: debezium
          delete: false
        pipelines:
          - source_table: users
            sinks:
              - database: auth
                table: {sink_table}
        """)


def catalog(database: str) -> str:
    columns = [{"name": "id", "type": "text"}, {"name": "name", "type": "text"}]
    return json.dumps({"database": database, "tables": {"public.users": {"columns": columns, "primary_key": ["id"]}}})


PROJECT = """\
clusters:
  platforms:
    url: http://connect.invalid:8083
    connectors: connectors/platforms
    select: ["local_manabie_*"]
databases:
  a: {dsn: "dbname=a"}
  b: {dsn: "dbname=b"}
  auth: {dsn: "dbname=auth"}
audit_log: audit.jsonl
"""


def world(tmp_path: Path, sources: tuple[str, ...], tables: dict[str, Table]) -> dict[str, Db]:
    """A project, a definition per source database replicating `users` into `auth.public.users`,
    and the fake's databases (`tables`: each database's users)."""
    (tmp_path / "definitions").mkdir()
    (tmp_path / "catalogs").mkdir()
    (tmp_path / "connectors" / "platforms").mkdir(parents=True)
    for name in sources:
        (tmp_path / "definitions" / f"{name}.yaml").write_text(definition(name))
    for name in (*sources, "auth"):
        (tmp_path / "catalogs" / f"{name}.json").write_text(catalog(name))
    (tmp_path / "hephaestus.yaml").write_text(PROJECT)
    slots = {name: (f"local_manabie_{name}",) for name in sources}
    return {name: Db({"public.users": rows}, slots.get(name, ())) for name, rows in tables.items()}


def factory(dbs: dict[str, Db]) -> Callable[..., pgfake.Connection]:
    def make(dsn: str, **options: Any) -> pgfake.Connection:
        return dbs[re.search(r"dbname=(\w+)", dsn)[1]].connect(dsn, **options)  # type: ignore[index]

    return make


def accuracy(
    tmp_path: Path, dbs: dict[str, Db], capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    with pg.seam(factory(dbs)):
        code = run(
            ["accuracy", "--project", str(tmp_path / "hephaestus.yaml"), "--definitions", str(tmp_path / "definitions")]
            + list(args)
        )
    out = capsys.readouterr()
    return code, out.out, out.err


def writes(dbs: dict[str, Db]) -> list[str]:
    return [s for db in dbs.values() for s in db.statements if s.startswith(("DELETE", "INSERT", "UPDATE"))]


# Issue 43, item 1: two source databases replicate `users` into one sink table. Every row of the
# sink is some source's: each pair sees the other's rows as extra.
FAN_IN = {"a": {"1": "ann", "2": "bo", "3": "cy"}, "b": {"4": "di", "5": "ed", "6": "flo"}}


def fan_in() -> dict[str, Table]:
    sink = {k: v for rows in FAN_IN.values() for k, v in rows.items()}
    return {**{k: dict(v) for k, v in FAN_IN.items()}, "auth": sink}


def test_delete_extra_on_a_table_two_pipelines_fill_is_refused_naming_it_and_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbs = world(tmp_path, SOURCES, fan_in())
    code, out, err = accuracy(tmp_path, dbs, capsys, "--deep", "--repair", "--delete-extra")
    assert code == 2, (out, err)
    assert len(dbs["auth"].tables["public.users"]) == 6, "a correctly replicated row was deleted"
    assert writes(dbs) == [] and not (tmp_path / "audit.jsonl").exists()
    assert "auth.public.users is written by 2 pipelines" in err
    assert "a.public.users" in err and "b.public.users" in err and "a.yaml" in err and "b.yaml" in err
    assert "refused" in err


def test_the_refusal_holds_when_only_one_of_the_pipelines_is_selected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbs = world(tmp_path, SOURCES, fan_in())
    code, _, err = accuracy(tmp_path, dbs, capsys, "--deep", "--repair", "--delete-extra", "--table", "a.users")
    assert code == 2 and "b.public.users" in err
    assert len(dbs["auth"].tables["public.users"]) == 6 and writes(dbs) == []


def test_the_gate_itself_refuses_a_delete_in_a_shared_table(tmp_path: Path) -> None:
    world(tmp_path, SOURCES, fan_in())
    project = load_project(tmp_path / "hephaestus.yaml")
    defs = load_definitions(tmp_path / "definitions")
    from hephaestus.accuracy.run import shared_tables

    shared = shared_tables(project, defs, AccuracyOptions())
    (pair, table), _ = shared.items()
    with pytest.raises(Refused, match=r"second-writer: auth\.public\.users is written by 2 pipelines"):
        sinkdb.judged(pair.sink, [("4",)], table)


def test_a_second_name_for_the_same_sink_database_is_still_one_table(tmp_path: Path) -> None:
    """A hand-edited project naming the sink database twice (`auth`, `auth2`: one DSN)."""
    world(tmp_path, SOURCES, fan_in())
    (tmp_path / "definitions" / "b.yaml").write_text(definition("b").replace("database: auth", "database: auth2"))
    twice = PROJECT.replace(
        '  auth: {dsn: "dbname=auth"}\n', '  auth: {dsn: "dbname=auth"}\n  auth2: {dsn: "dbname=auth"}\n'
    )
    (tmp_path / "hephaestus.yaml").write_text(twice)
    project = load_project(tmp_path / "hephaestus.yaml")
    from hephaestus.accuracy.run import shared_tables

    shared = shared_tables(project, load_definitions(tmp_path / "definitions"), AccuracyOptions())
    assert {p.sink.database for p in shared} == {"auth", "auth2"}


def test_without_delete_extra_a_shared_table_is_compared_with_a_warning_and_nothing_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbs = world(tmp_path, SOURCES, fan_in())
    code, out, err = accuracy(tmp_path, dbs, capsys, "--deep")
    assert code == 2  # each pair still sees the other's rows: the warning says why
    assert "warning: auth.public.users is written by 2 pipelines" in err and "count as extra" in err
    assert writes(dbs) == []


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(
        [
            "validate",
            "--project",
            str(tmp_path / "hephaestus.yaml"),
            "--definitions",
            str(tmp_path / "definitions"),
            "--catalogs",
            str(tmp_path / "catalogs"),
        ]
    )
    out = capsys.readouterr()
    return code, out.out, out.err


def test_validate_names_a_shared_sink_table_and_every_pipeline_writing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world(tmp_path, SOURCES, fan_in())
    code, out, err = validate(tmp_path, capsys)
    assert code == 0 and out.startswith("ok: 2 definitions"), (out, err)
    (line,) = [x for x in err.splitlines() if x.startswith("warning:")]
    assert line.startswith("warning: sink table auth.public.users is written by 2 pipelines: a.public.users (")
    assert "a.yaml:" in line and "b.yaml:" in line and "at pipelines[0].sinks[0]" in line
    assert "--delete-extra" in line


def test_validate_is_quiet_for_a_table_one_pipeline_fills(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world(tmp_path, ("a",), {})
    code, _, err = validate(tmp_path, capsys)
    assert code == 0 and "warning" not in err


# Issue 43, item 7: the dry run. One source, one sink: 2 missing, 1 different, 2 extra.
def drifted() -> dict[str, Table]:
    source = {"1": "ann", "2": "bo", "3": "cy", "4": "di"}
    sink = {"1": "ann", "3": "CY", "8": "old", "9": "gone"}
    return {"a": source, "auth": sink}


def test_the_dry_run_lists_the_keys_and_rows_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbs = world(tmp_path, ("a",), drifted())
    before = {name: {t: dict(rows) for t, rows in db.tables.items()} for name, db in dbs.items()}
    code, out, err = accuracy(tmp_path, dbs, capsys, "--deep", "--repair", "--delete-extra", "--dry-run")
    assert code == 2, (out, err)  # as `accuracy --deep`: something to repair
    assert "dry run (no signal sent, no row deleted):" in out
    assert "would re-snapshot 3 keys in 1 signal (local_manabie_a_source_connector); would delete 2 extra rows" in out
    assert "signal 1: \"id\" IN (E'2', E'4', E'3')" in out and "delete: 8, 9" in out
    assert writes(dbs) == [] and {n: db.tables for n, db in dbs.items()} == before
    assert not (tmp_path / "audit.jsonl").exists()


def test_the_dry_run_as_json_and_without_delete_extra(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dbs = world(tmp_path, ("a",), drifted())
    code, out, _ = accuracy(tmp_path, dbs, capsys, "--deep", "--repair", "--dry-run", "-o", "json")
    doc = json.loads(out)
    assert code == 2 and doc["dry_run"] is True and doc["exit_code"] == 2
    (table,) = doc["repair"]
    assert table["resnapshot"] == ["2", "4", "3"] and table["extra"] == ["8", "9"] and table["delete_extra"] is False
    assert table["signals"] == ["\"id\" IN (E'2', E'4', E'3')"] and writes(dbs) == []


def test_the_dry_run_of_tables_that_match_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = {"1": "ann"}
    dbs = world(tmp_path, ("a",), {"a": dict(rows), "auth": dict(rows)})
    code, out, _ = accuracy(tmp_path, dbs, capsys, "--deep", "--repair", "--dry-run")
    assert code == 0 and out.endswith("dry run: nothing to repair\n")


def test_dry_run_needs_repair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dbs = world(tmp_path, ("a",), drifted())
    code, _, err = accuracy(tmp_path, dbs, capsys, "--deep", "--dry-run")
    assert code == 1 and "--dry-run need --repair" in err  # a usage error: 2 means drift here


class Snapshotter:
    """Stands in for `snapshot send`: records each signal and copies its keys' source rows to
    the sink, as Debezium's incremental snapshot would; `meanwhile` runs after each signal."""

    def __init__(self, dbs: dict[str, Db], meanwhile: Callable[[], None] = lambda: None) -> None:
        self.dbs = dbs
        self.sent: list[str] = []
        self.meanwhile = meanwhile

    def __call__(self, connector: str, table: str, where: str) -> str:
        self.sent.append(where)
        source, sink = self.dbs["a"].tables["public.users"], self.dbs["auth"].tables["public.users"]
        for key in re.findall(r"E'([^']*)'", where):
            sink[key] = source[key]
        self.meanwhile()
        return f"signal-{len(self.sent)}"


def test_the_real_run_does_what_the_dry_run_showed(tmp_path: Path) -> None:
    dbs = world(tmp_path, ("a",), drifted())
    project = load_project(tmp_path / "hephaestus.yaml")
    defs = load_definitions(tmp_path / "definitions")
    how = mend.RepairOptions(delete_extra=True, timeout_s=1, interval_s=0)
    with pg.seam(factory(dbs)):
        made = mend.plan(project, defs, AccuracyOptions(deep=True), how)
        shown = mend.preview(made)
        assert writes(dbs) == []
        signal = Snapshotter(dbs)
        done = mend.execute(project, made, how, signal)
    (intent,) = shown.tables
    assert signal.sent == [b.filter for b in intent.batches]
    assert done.tables[0].extra == intent.extra and done.tables[0].extra_deleted == 2
    assert done.exit_code == 0 and dbs["auth"].tables == dbs["a"].tables
    assert "would delete 2 extra rows" in render.preview_text(shown)


def test_a_row_the_source_holds_again_before_the_delete_is_not_deleted(tmp_path: Path) -> None:
    """A concurrent writer: the source gets key 9 back while the repair re-snapshots; CDC will
    bring it to the sink, so it is not extra any more."""
    dbs = world(tmp_path, ("a",), drifted())
    project = load_project(tmp_path / "hephaestus.yaml")
    defs = load_definitions(tmp_path / "definitions")
    how = mend.RepairOptions(delete_extra=True, timeout_s=1, interval_s=0)

    def reinsert() -> None:
        dbs["a"].tables["public.users"]["9"] = "gone"

    with pg.seam(factory(dbs)):
        done = mend.repair(project, defs, AccuracyOptions(deep=True), how, Snapshotter(dbs, reinsert))
    assert "9" in dbs["auth"].tables["public.users"] and "8" not in dbs["auth"].tables["public.users"]
    assert done.tables[0].extra_deleted == 1


def test_a_delete_that_fails_midway_is_reported_and_audited_as_failed(tmp_path: Path) -> None:
    dbs = world(tmp_path, ("a",), drifted())
    dbs["auth"].fail_delete = True
    project = load_project(tmp_path / "hephaestus.yaml")
    defs = load_definitions(tmp_path / "definitions")
    how = mend.RepairOptions(delete_extra=True, timeout_s=1, interval_s=0)
    with pg.seam(factory(dbs)):
        done = mend.repair(project, defs, AccuracyOptions(deep=True), how, Snapshotter(dbs))
    assert done.exit_code == 1 and "statement timeout" in (done.tables[0].error or "")
    audit = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in audit if e["action"] == "accuracy-delete-extra"] == ["intent", "failed"]


def test_a_key_with_control_characters_is_shown_escaped_by_the_dry_run() -> None:
    """Keys come from a database: an ESC sequence in one must not rewrite the terminal."""
    from hephaestus.accuracy.repair import RepairPreview, TableIntent

    intent = TableIntent("a.public.users → auth.public.users", "c", (), (), (("\x1b[2Jx",),), True)
    shown = render.preview_text(RepairPreview(AccuracyReport((), True, 0), (intent,)))
    assert "\x1b" not in shown and "delete: \\x1b[2Jx" in shown


@pytest.mark.parametrize("spelling", ["users", "public.users", "PUBLIC.Users"])
def test_spellings_of_one_table_are_one_table(spelling: str) -> None:
    from hephaestus.generator.writers import TableWriter, shared

    one = TableWriter("auth", TableRef.parse("public.users"), "a.public.users", "a.yaml:1")
    other = TableWriter("Auth", TableRef.parse(spelling), "b.public.users", "b.yaml:1")
    (table,) = shared([one, other])
    assert table.writers == (one, other) and shared([one]) == []


def test_a_hostile_table_name_is_one_quoted_identifier_in_the_delete() -> None:
    sink = Endpoint("auth", TableRef("public", 'us"ers; DROP TABLE x; --'))
    text, params = sinkdb.statement(sink, ["id"], [("1",)])
    rendered = text.as_string(pgfake.Connection(pgfake.Server()))  # type: ignore[arg-type]
    assert rendered == 'DELETE FROM "public"."us""ers; DROP TABLE x; --" WHERE ("id") IN ((%s))' and params == ["1"]
