"""Warehouse accuracy on the real stack: replicate with Debezium, then prove (and break) the match.

Sink tables are tampered with directly in PostgreSQL; the report must name the table, the delta
and, with --deep, exactly the keys touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hephaestus.accuracy.bisect import DeepOptions
from hephaestus.accuracy.run import AccuracyOptions, run_accuracy
from hephaestus.generator.definitions import load_definitions
from hephaestus.project import load_project
from tests.loopback import slack_receiver
from tests.stack.fleet import Fleet, make_fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until

USERS, STUDENTS, LOCATIONS = 40, 12, 5


@pytest.fixture
def bob(bob_fleet: Fleet) -> Iterator[Fleet]:
    yield bob_fleet


def count(fleet: Fleet, db: str, table: str, where: str = "TRUE") -> int:
    return int(read_rows(fleet.stack.dsn(fleet.dbs[db]), f"SELECT count(*) FROM {table} WHERE {where}")[0][0])


def replicate(fleet: Fleet) -> None:
    """Seed bob, reconcile, and wait until every sink holds every row (read back, not trusted)."""
    execute(
        fleet.stack.dsn(fleet.dbs["bob"]),
        f"""
        INSERT INTO users (user_id, name, email, internal_note)
            SELECT 'u-' || g, 'name ' || g, g || '@example.com', 'private' FROM generate_series(1, {USERS}) g;
        INSERT INTO students (student_id, current_grade) SELECT 's-' || g, g % 12 FROM generate_series(1, {STUDENTS}) g;
        INSERT INTO locations (location_id, name) SELECT 'l-' || g, 'room ' || g FROM generate_series(1, {LOCATIONS}) g;
    """,
    )
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    expected = {
        ("auth", "users"): USERS,
        ("eureka", "users"): USERS,
        ("eureka", "students"): STUDENTS,
        ("fatima", "students"): STUDENTS,
        ("fatima", "locations"): LOCATIONS,
    }
    for (db, table), n in expected.items():
        wait_until(lambda: count(fleet, db, table) == n, timeout=180, message=f"{n} rows in {db}.{table}")


def row(report: dict[str, Any], sink_db: str, table: str) -> dict[str, Any]:
    (found,) = [t for t in report["tables"] if t["sink"]["database"] == sink_db and t["sink"]["table"] == table]
    return found


def test_replicated_tables_match_then_tampering_is_named_with_its_delta_and_keys(
    bob: Fleet, connect: ConnectClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    replicate(bob)
    code, report = bob.accuracy()
    assert code == 0, json.dumps(report, indent=1)
    assert [t["verdict"] for t in report["tables"]] == ["match"] * 5
    users = row(report, bob.dbs["auth"], "public.users")
    assert users["source"]["rows"] == users["sink"]["rows"] == USERS
    assert users["slot"] == bob.slot() and isinstance(users["lag_bytes"], int)
    assert users["source"]["filter"] == users["sink"]["filter"] == "deleted_at IS NULL"

    # A soft delete, then a purge at the source: the sink keeps the row (deletes are dropped) with
    # deleted_at set, so the default filter still compares equal.
    source = bob.stack.dsn(bob.dbs["bob"])
    execute(source, "UPDATE users SET deleted_at = now() WHERE user_id = 'u-40'")
    for sink_db in ("auth", "eureka"):
        wait_until(
            lambda: count(bob, sink_db, "users", "deleted_at IS NOT NULL") == 1,
            timeout=120,
            message=f"soft delete in {sink_db}.users",
        )
    execute(source, "DELETE FROM users WHERE user_id = 'u-40'")
    assert bob.accuracy()[0] == 0

    auth = bob.stack.dsn(bob.dbs["auth"])
    execute(auth, "DELETE FROM users WHERE user_id IN ('u-3', 'u-7')")
    execute(auth, "UPDATE users SET name = 'tampered' WHERE user_id = 'u-5'")
    textfile = bob.root / "metrics" / "accuracy.prom"
    with slack_receiver() as slack:
        monkeypatch.setenv("HEPHAESTUS_SLACK_WEBHOOK", slack.url)
        code, report = bob.accuracy("--metrics-textfile", str(textfile))
    assert code == 2
    users = row(report, bob.dbs["auth"], "public.users")
    assert (users["verdict"], users["delta"], users["sink"]["rows"]) == ("mismatch", -2, USERS - 3)
    assert [t["verdict"] for t in report["tables"]].count("match") == 4
    (message,) = slack.texts()
    assert f"{bob.dbs['bob']}.public.users → {bob.dbs['auth']}.public.users" in message and "delta -2" in message
    assert f'sink_database="{bob.dbs["auth"]}"' in textfile.read_text()

    # The job Helm and cron run, with the text report.
    code, text = bob.cli(
        "job",
        "run",
        "dwh_accuracy",
        "--project",
        str(bob.root / "hephaestus.yaml"),
        "--definitions",
        str(bob.root / "definitions"),
        "--table",
        f"{bob.dbs['auth']}.users",
    )
    assert code == 2
    (line,) = [x for x in text.splitlines() if bob.dbs["auth"] in x]
    assert line.split()[-1] == "MISMATCH" and f" {USERS - 1} " in line and f" {USERS - 3} " in line and " -2 " in line

    code, report = bob.accuracy("--deep")
    assert code == 2
    deep = row(report, bob.dbs["auth"], "public.users")["deep"]
    assert deep["missing"] == {"total": 2, "keys": ["u-3", "u-7"]}
    assert deep["different"] == {"total": 1, "keys": ["u-5"]}
    assert deep["extra"] == {"total": 0, "keys": []}
    others = [t for t in report["tables"] if t["sink"]["database"] != bob.dbs["auth"]]
    assert all(t["verdict"] == "match" and t["deep"]["different"]["total"] == 0 for t in others), (
        "replicated rows must hash alike on both sides (types cast to text, same session settings)"
    )


def test_tenant_filter_restricts_the_source_count(
    tmp_path: Path,
    stack2: Stack,
    fresh_db: Callable[..., str],
    connect2: ConnectClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fleet = make_fleet(tmp_path, stack2, fresh_db, capsys, ["lmsdwh"], {"lmsdwh": connect2})
    dwh = stack2.dsn(fleet.dbs["lmsdwh"])
    execute(
        dwh,
        "INSERT INTO dim_user (user_id, name, resource_path) SELECT 'j-' || g, 'J', '-2147483645' "
        "FROM generate_series(1, 6) g; INSERT INTO dim_user (user_id, name, resource_path) "
        "SELECT 'o-' || g, 'O', '-1' FROM generate_series(1, 4) g",
    )
    assert fleet.reconcile()[0] == 0
    wait_until(lambda: count(fleet, "tokyo_jprep_dwh", "dim_user") == 6, timeout=180, message="6 partner rows")
    code, report = fleet.accuracy("--deep", "--table", "dim_user")
    assert code == 0, json.dumps(report, indent=1)
    (only,) = report["tables"]
    assert (only["source"]["rows"], only["sink"]["rows"]) == (6, 6)
    assert "resource_path" in only["source"]["filter"] and only["sink"]["filter"] == ""


def pair_project(root: Path, stack: Stack, src: str, dst: str, table: str) -> None:
    """A project comparing `table` of two databases, with no connectors."""
    (root / "defs").mkdir()
    (root / "defs" / "src.yaml").write_text(
        f"cluster: c\ndatabase: {src}\nenvs: [local]\norgs: [manabie]\n"
        f"pipelines:\n  - source_table: {table}\n    sinks: [{{database: {dst}}}]\n"
    )
    (root / "hephaestus.yaml").write_text(
        "clusters: {c: {connectors: c}}\ndatabases:\n"
        + "".join(
            f"  {db}: {{dsn: 'host={stack.pg_host} port={stack.pg_port} user={stack.pg_user} dbname={db}'}}\n"
            for db in (src, dst)
        )
    )


def test_deep_on_composite_keys_and_differing_collations(
    tmp_path: Path, stack: Stack, fresh_db: Callable[..., str]
) -> None:
    """No connectors: two tables filled alike, then tampered; small segments force real bisection
    through the SQL (row-wise ranges, the bucket CASE, "C" ordering across collations)."""
    src, dst = fresh_db("auth"), fresh_db("auth")
    ddl = (
        "CREATE TABLE grades (org int, student text {collate}, term date, score numeric(5,2), "
        "noted_at timestamptz, PRIMARY KEY (org, student))"
    )
    execute(stack.dsn(src), ddl.format(collate=""))
    execute(stack.dsn(dst), ddl.format(collate='COLLATE "und-x-icu"'))
    fill = (
        "INSERT INTO grades SELECT g % 7, (CASE WHEN g % 2 = 0 THEN 'S' ELSE 's' END) || g, "
        "date '2026-01-01' + g % 90, (g % 1000) / 10.0, timestamptz '2026-01-01 00:00+09' + g * interval '1 min' "
        "FROM generate_series(1, 3000) g"
    )
    for db in (src, dst):
        execute(stack.dsn(db), fill)
    execute(
        stack.dsn(dst),
        "DELETE FROM grades WHERE (org, student) IN ((1, 's1'), (5, 'S2000'));"
        "UPDATE grades SET score = score + 1 WHERE (org, student) = (3, 's1011');"
        "INSERT INTO grades VALUES (9, 'new', NULL, NULL, NULL)",
    )
    pair_project(tmp_path, stack, src, dst, "grades")
    options = AccuracyOptions(deep=True, deep_options=DeepOptions(factor=4, threshold=40, limit=10))
    report = run_accuracy(load_project(tmp_path / "hephaestus.yaml"), load_definitions(tmp_path / "defs"), options)
    (result,) = report.results
    assert result.error is None and result.verdict == "mismatch" and report.exit_code == 2
    assert result.diff is not None and result.counts is not None
    assert (result.counts.source, result.counts.sink) == (3000, 2999)
    assert result.diff.missing.keys == ((1, "s1"), (5, "S2000"))
    assert result.diff.extra.keys == ((9, "new"),)
    assert result.diff.different.keys == ((3, "s1011"),)
    assert result.diff.queries > 4, "small segments must have made it bisect"


NATIVE_DDL = """CREATE TABLE kinds (id int PRIMARY KEY, b boolean, i2 smallint, i8 bigint, n numeric, t text,
    v varchar(20), c char(5), d date, tm time, ts timestamp, tz timestamptz, u uuid, by bytea, j jsonb,
    f float8, widened {widened})"""
NATIVE_FILL = """INSERT INTO kinds SELECT g, g % 2 = 0, g % 100, g::bigint * 1000000007, g / 7.0,
    't' || g, 'v' || g, 'c' || g % 10,
    date '2026-01-01' + g, time '00:00' + g * interval '1 s', timestamp '2026-01-01' + g * interval '1 ms',
    timestamptz '2026-01-01 00:00+09' + g * interval '1 ms', md5(g::text)::uuid, decode(md5(g::text), 'hex'),
    jsonb_build_object('g', g, 'tags', jsonb_build_array('a', g)), g / 3.0, g FROM generate_series(1, 600) g"""
# One row per column changed in the sink (the key is the row's id), and changes PostgreSQL's
# equality calls no change: numeric scale, char padding, jsonb key order.
NATIVE_CHANGES = {
    "b": "b = NOT b",
    "i2": "i2 = i2 + 1",
    "i8": "i8 = i8 + 1",
    "n": "n = n + 0.0000001",
    "t": "t = t || ' '",
    "v": "v = upper(v)",
    "c": "c = 'x'",
    "d": "d = d + 1",
    "tm": "tm = tm + interval '1 us'",
    "ts": "ts = ts + interval '1 us'",
    "tz": "tz = tz + interval '1 us'",
    "u": "u = '00000000-0000-0000-0000-000000000000'",
    "by": "by = by || '\\x00'::bytea",
    "j": "j = j || '{\"x\": 1}'",
    "f": "f = f + 1e-9",
    "widened": "widened = widened + 1",
}


def test_deep_hashes_values_natively_and_finds_a_change_in_every_type(
    tmp_path: Path, stack: Stack, fresh_db: Callable[..., str]
) -> None:
    """Columns of one built-in type on both sides hash as values (hash_record_extended), the
    others (float8, int widened to bigint) as text: every kind of change is still found, by key."""
    import psycopg

    from hephaestus.accuracy import db as accuracy_db
    from hephaestus.accuracy import run

    src, dst = fresh_db("auth"), fresh_db("auth")
    execute(stack.dsn(src), NATIVE_DDL.format(widened="int"))
    execute(stack.dsn(dst), NATIVE_DDL.format(widened="bigint"))
    for db in (src, dst):
        execute(stack.dsn(db), NATIVE_FILL)
    with psycopg.connect(stack.dsn(src)) as a, psycopg.connect(stack.dsn(dst)) as b:
        assert run._hashes(accuracy_db.hash_probe(a), accuracy_db.hash_probe(b)) == (False, True), (
            "the native path is under test"
        )
    pair_project(tmp_path, stack, src, dst, "kinds")

    def deep() -> Any:
        options = AccuracyOptions(deep=True, deep_options=DeepOptions(factor=4, threshold=40, limit=100))
        (result,) = run_accuracy(
            load_project(tmp_path / "hephaestus.yaml"), load_definitions(tmp_path / "defs"), options
        ).results
        assert result.error is None, result.error
        return result

    assert deep().verdict == "match"
    execute(
        stack.dsn(dst),
        "UPDATE kinds SET n = n::numeric(40, 30) WHERE id = 1; UPDATE kinds SET c = c || ' ' "
        "WHERE id = 2; UPDATE kinds SET j = jsonb_build_object('tags', j->'tags', 'g', j->'g')",
    )
    assert deep().verdict == "match", "equal values by PostgreSQL's equality are no difference"
    changed = {}
    for i, (column, assignment) in enumerate(NATIVE_CHANGES.items()):
        changed[10 + i * 37] = column
        execute(stack.dsn(dst), f"UPDATE kinds SET {assignment} WHERE id = {10 + i * 37}")
    result = deep()
    assert result.verdict == "mismatch" and result.diff.different.keys == tuple((k,) for k in sorted(changed)), (
        "missed: " + ", ".join(c for k, c in changed.items() if (k,) not in result.diff.different.keys)
    )
