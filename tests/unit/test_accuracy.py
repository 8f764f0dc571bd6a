"""Accuracy without a database: which pairs, filters, slots, verdicts, reports, and input errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hephaestus.accuracy import pairs, publish, render
from hephaestus.accuracy.model import (
    AccuracyReport,
    Counts,
    Endpoint,
    Filters,
    KeyDiff,
    KeyList,
    TablePair,
    TableResult,
    judge,
)
from hephaestus.errors import HephaestusError, InputError
from hephaestus.generator.definitions import load_definitions
from hephaestus.generator.model import AccuracySpec, TableRef, TenantFilter
from tests.loopback import slack_receiver
from tests.unit.conftest import REPO, Project


def pair(delete: bool = False, tenant: TenantFilter | None = None, spec: AccuracySpec = AccuracySpec()) -> TablePair:
    return TablePair(
        Endpoint("bob", TableRef("public", "users")),
        Endpoint("auth", TableRef("public", "users")),
        delete,
        tenant,
        spec,
        "bob.yaml:9 at pipelines[0].sinks[0]",
    )


def test_every_pipeline_sink_is_a_pair_in_definition_order() -> None:
    found = pairs.table_pairs(load_definitions(REPO / "definitions"))
    assert [p.name for p in found] == [
        "bob.public.users → auth.public.users",
        "bob.public.users → eureka.public.users",
        "bob.public.students → eureka.public.students",
        "bob.public.students → fatima.public.students",
        "bob.public.locations → fatima.public.locations",
        "invoicemgmt.expect.fact_invoice → kec_dwh.public.fact_invoice",
        "lmsdwh.public.dim_user → tokyo_jprep_dwh.public.dim_user",
        "lmsdwh.public.fact_student_enrollment → tokyo_jprep_dwh.public.fact_student_enrollment",
    ]
    assert found[6].tenant_filter == TenantFilter("resource_path", ("-2147483645",))
    assert found[5].source.query.startswith("SELECT i.invoice_id") and not found[0].source.query
    assert found[5].origin.endswith("kec.yaml:35 at pipelines[2].sinks[0]"), found[5].origin
    assert "bob.yaml:" in found[0].origin and found[0].origin.endswith("at pipelines[0].sinks[0]")


@pytest.mark.parametrize(
    "name, count",
    [
        ("users", 2),
        ("public.students", 2),
        ("auth.users", 1),
        ("eureka.public.students", 1),
        ("dim_user", 1),
        ("bob.locations", 1),
    ],
)
def test_table_option_names_either_side(name: str, count: int) -> None:
    found = pairs.table_pairs(load_definitions(REPO / "definitions"))
    assert len(pairs.select(found, [name])) == count


def test_unknown_table_is_an_input_error() -> None:
    found = pairs.table_pairs(load_definitions(REPO / "definitions"))
    with pytest.raises(InputError, match="'nope'"):
        pairs.select(found, ["users", "nope"])


def test_soft_delete_default_compares_live_rows_only_when_both_tables_have_deleted_at() -> None:
    both = ("user_id", "deleted_at")
    assert pairs.filters(pair(), both, both) == Filters("deleted_at IS NULL", "deleted_at IS NULL")
    assert pairs.filters(pair(), both, ("user_id",)) == Filters("", "")
    assert pairs.filters(pair(delete=True), both, both) == Filters("", ""), "deletes propagate: every row"


def test_explicit_filters_override_the_default_per_side() -> None:
    spec = AccuracySpec(source_filter="true", sink_filter="name <> 'x'")
    assert pairs.filters(pair(spec=spec), ("deleted_at",), ("deleted_at",)) == Filters("true", "name <> 'x'")


def test_tenant_filter_narrows_the_source_side_only() -> None:
    got = pairs.filters(pair(tenant=TenantFilter("resource_path", ("1", "2"))), ("deleted_at",), ("deleted_at",))
    assert got.source == "(deleted_at IS NULL) AND (\"resource_path\"::text IN ('1', '2'))"
    assert got.sink == "deleted_at IS NULL"


def test_slot_candidates_follow_env_org_and_the_clusters_select() -> None:
    (bob, _, _) = load_definitions(REPO / "definitions")
    assert len(pairs.slot_candidates(bob, None, None)) == 6
    assert pairs.slot_candidates(bob, "stag", "jprep") == ["stag_jprep_bob"]
    assert pairs.slot_candidates(bob, None, None, ["local_manabie_*"]) == ["local_manabie_bob"]
    assert pairs.slot_candidates(bob, "uat", None) == ["uat_manabie_bob", "uat_jprep_bob"]


def test_pick_slot_takes_the_one_that_exists() -> None:
    assert pairs.pick_slot("bob", ["a_b_bob", "c_d_bob"], ["c_d_bob", "other"]) == "c_d_bob"
    assert pairs.pick_slot("bob", ["a_b_bob"], ["other"]) is None
    with pytest.raises(InputError, match="several replication slots"):
        pairs.pick_slot("bob", ["a_b_bob", "c_d_bob"], ["a_b_bob", "c_d_bob"])


def diff(missing: int = 0, extra: int = 0, different: int = 0) -> KeyDiff:
    return KeyDiff(
        KeyList(missing, tuple((f"m{i}",) for i in range(missing))), KeyList(extra, ()), KeyList(different, ()), 3
    )


@pytest.mark.parametrize(
    "counts, found, lag, expected",
    [
        (Counts(10, 10), None, 0, ("match", 0)),
        (Counts(10, 9), None, 0, ("mismatch", 0)),
        (Counts(10, 9), None, None, ("mismatch", 0)),  # no slot: nothing says rows are in flight
        (Counts(10, 9), None, 500, ("within_tolerance", 2)),
        (Counts(10, 7), None, 500, ("mismatch", 2)),
        (Counts(10, 10), diff(different=1), 0, ("mismatch", 0)),  # same counts, other values
        (Counts(10, 10), diff(), 0, ("match", 0)),
    ],
)
def test_verdict_tolerance_applies_only_while_the_slot_lags(
    counts: Counts, found: KeyDiff | None, lag: int | None, expected: tuple[str, int]
) -> None:
    assert judge(AccuracySpec(tolerance_rows=2), counts, found, lag) == expected


def test_percent_tolerance_is_of_the_source_count_and_the_larger_form_wins() -> None:
    spec = AccuracySpec(tolerance_rows=3, tolerance_percent=1.0)
    assert judge(spec, Counts(1000, 990), None, 1) == ("within_tolerance", 10)
    assert judge(spec, Counts(100, 97), None, 1) == ("within_tolerance", 3)


def result(verdict: str, counts: Counts | None = Counts(3, 2), **kw: object) -> TableResult:
    return TableResult(pair(), verdict, counts, Filters("deleted_at IS NULL", ""), "local_manabie_bob", 0, **kw)  # type: ignore[arg-type]


def test_exit_code_error_beats_mismatch_beats_match() -> None:
    assert AccuracyReport((result("match"),), False, 0).exit_code == 0
    assert AccuracyReport((result("match"), result("within_tolerance")), False, 0).exit_code == 0
    assert AccuracyReport((result("mismatch"), result("match")), False, 0).exit_code == 2
    assert AccuracyReport((result("mismatch"), result("error", None)), False, 0).exit_code == 1
    assert AccuracyReport((), False, 0).exit_code == 0


def test_text_report_names_table_delta_and_keys() -> None:
    report = AccuracyReport((result("mismatch", diff=diff(missing=2)),), True, 0.5)
    out = render.text(report)
    assert out.splitlines()[0].split() == ["TABLE", "SOURCE", "SINK", "DELTA", "LAG", "VERDICT"]
    assert "bob.public.users → auth.public.users" in out and " -1 " in out and "MISMATCH" in out
    assert "missing (in the source, not in the sink): 2: m0, m1" in out
    assert out.rstrip().endswith("1 mismatch (0.50s)")


def test_json_report_carries_filters_lag_and_keys() -> None:
    doc = json.loads(render.as_json(AccuracyReport((result("mismatch", diff=diff(missing=1)),), True, 0.5)))
    (row,) = doc["tables"]
    assert row["source"] == {"database": "bob", "table": "public.users", "filter": "deleted_at IS NULL", "rows": 3}
    assert row["delta"] == -1 and row["lag_bytes"] == 0 and row["slot"] == "local_manabie_bob"
    assert row["deep"]["missing"] == {"total": 1, "keys": ["m0"]}
    assert doc["exit_code"] == 2 and doc["summary"]["mismatch"] == 1


def test_lag_is_shown_in_binary_units() -> None:
    assert [render.lag_text(v) for v in (None, 0, 2048, 5 * 2**20)] == ["?", "0 B", "2.0 KiB", "5.0 MiB"]


def test_slack_gets_mismatches_and_errors_without_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hephaestus.project import SecretRef, load_project

    (tmp_path / "hephaestus.yaml").write_text("clusters: {c: {connectors: c}}\nslack: {webhook_env: HOOK}\n")
    project = load_project(tmp_path / "hephaestus.yaml")
    assert project.slack_webhook == SecretRef(env="HOOK")
    bad = AccuracyReport(
        (result("mismatch", diff=diff(missing=2)), result("error", None, error="boom"), result("match", Counts(2, 2))),
        True,
        0,
    )
    with slack_receiver() as slack:
        monkeypatch.setenv("HOOK", slack.url)
        assert publish.notify(project, bad)
        assert not publish.notify(project, AccuracyReport((result("match", Counts(1, 1)),), False, 0))
    (text,) = slack.texts()
    assert "1 mismatch, 1 error of 3 tables" in text and "delta -1" in text and "2 missing" in text
    assert "boom" in text and "m0" not in text


# --- the CLI: inputs are checked before any database is touched -------------------------------


def write(root: Path, databases: str) -> list[str]:
    (root / "defs").mkdir()
    (root / "defs" / "bob.yaml").write_text(
        textwrap.dedent("""
        cluster: platforms
        database: bob
        envs: [local]
        orgs: [manabie]
        pipelines:
          - source_table: users
            sinks: [{database: auth}, {database: eureka}]
        """)
    )
    (root / "hephaestus.yaml").write_text(f"clusters: {{platforms: {{connectors: c}}}}\ndatabases: {databases}\n")
    return ["accuracy", "--project", str(root / "hephaestus.yaml"), "--definitions", str(root / "defs")]


def test_a_database_missing_from_the_project_file_is_named(project: Project, tmp_path: Path) -> None:
    args = write(tmp_path, "{bob: {dsn: 'host=127.0.0.1 port=9 dbname=bob'}}")
    result = project.cli(*args)
    assert result.code == 1
    assert "database 'auth'" in result.err and "database 'eureka'" in result.err
    assert "hephaestus.yaml at databases.auth" in result.err and "bob.yaml:8" in result.err


def test_an_unreachable_database_is_an_error_row_and_exit_1(project: Project, tmp_path: Path) -> None:
    args = write(
        tmp_path,
        "{bob: {dsn: 'host=127.0.0.1 port=9 dbname=bob'}, auth: {dsn: 'dbname=auth'}, eureka: {dsn: 'dbname=eureka'}}",
    )
    result = project.cli(*args, "--table", "auth.users", "-o", "json")
    assert result.code == 1
    (row,) = json.loads(result.out)["tables"]
    assert row["verdict"] == "error" and "cannot connect to database bob" in row["error"]


@pytest.mark.parametrize("failing", ["bob", "auth"])
def test_when_one_side_cannot_connect_the_other_connection_is_closed(
    failing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sides connect at once: the one that made it must not leak (a cron run per hour
    would exhaust max_connections), and the failure is this table's error row."""
    from hephaestus.accuracy import db, run

    opened: list[Closable] = []

    def connect(dsn: str, database: str) -> Closable:
        if database == failing:
            raise HephaestusError(f"cannot connect to database {database}: refused")
        opened.append(Closable())
        return opened[-1]

    monkeypatch.setattr(db, "connect", connect)
    job = run.CompareJob(pair(), "dsn-bob", "dsn-auth", (), run.AccuracyOptions())
    result = run.compare(job)
    assert result.verdict == "error" and result.error == f"cannot connect to database {failing}: refused"
    assert len(opened) == 1 and opened[0].closed


class Closable:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_an_unset_password_variable_fails_before_connecting(project: Project, tmp_path: Path) -> None:
    args = write(
        tmp_path,
        "{bob: {dsn: 'dbname=bob', password: {env: HEPH_NO_SUCH_VAR}}, "
        "auth: {dsn: 'dbname=auth'}, eureka: {dsn: 'dbname=eureka'}}",
    )
    result = project.cli(*args)
    assert result.code == 1 and "HEPH_NO_SUCH_VAR" in result.err


# --- the definitions' accuracy block: validated, and ignored by the generator ------------------


def test_accuracy_block_is_parsed_merged_with_defaults_and_generates_nothing_new(project: Project) -> None:
    project.generate()
    before = project.files()
    bob = project.definitions / "bob.yaml"
    text = bob.read_text().replace("sink_defaults:\n", "sink_defaults:\n  accuracy: {tolerance: {rows: 5}}\n")
    text = text.replace(
        "      - database: auth\n",
        "      - database: auth\n        accuracy: {source_filter: \"name <> 'x'\", tolerance: {percent: 0.5}}\n",
    )
    bob.write_text(text)
    assert project.generate("--check").code == 0, "the generator must ignore accuracy options"
    assert project.files() == before
    sinks = [s for d in load_definitions(project.definitions) for p in d.pipelines for s in p.sinks]
    assert sinks[0].accuracy == AccuracySpec("name <> 'x'", None, 0, 0.5)  # the sink's tolerance replaces
    assert sinks[1].accuracy == AccuracySpec(None, None, 5, 0.0)


def test_a_bad_tolerance_is_named_with_its_line(project: Project) -> None:
    bob = project.definitions / "bob.yaml"
    bob.write_text(
        bob.read_text().replace(
            "      - database: auth\n", "      - database: auth\n        accuracy: {tolerance: {rows: -1}}\n"
        )
    )
    result = project.generate()
    assert result.code == 1 and "bob.yaml:" in result.err and "tolerance" in result.err


def test_the_text_table_folds_only_the_verdict_column_and_prints_names_as_text() -> None:
    """rich draws it: at a terminal's width only the VERDICT column (and the details under a
    row) wraps; colour only when asked; a name or error with markup or escapes is plain text."""
    report = AccuracyReport(
        (result("mismatch", diff=diff(missing=2)), result("error", None, error="boom [bold]x[/] \x1b[31mred")),
        True,
        0.5,
    )
    wide = render.text(report)
    header, row, detail = wide.splitlines()[:3]
    assert detail.strip() == "missing (in the source, not in the sink): 2: m0, m1"
    assert detail.index("missing") == header.index("VERDICT") == row.index("MISMATCH")  # under its row's verdict
    assert "error: boom [bold]x[/] \\x1b[31mred" in wide and "\x1b" not in wide
    narrow = render.text(report, width=90)
    assert max(len(line) for line in narrow.splitlines()) <= 90
    assert narrow.splitlines()[1] == row  # the figures' line is whole
    assert len([line for line in narrow.splitlines() if line.startswith(" ")]) > 2  # details folded
    assert "\x1b[" not in narrow and "\x1b[1;31mMISMATCH" in render.text(report, width=90, colour=True)
    too_narrow = render.text(report, width=40)
    assert too_narrow == wide  # narrower than the figures: whole lines, the terminal wraps them
