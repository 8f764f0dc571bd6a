"""Schema drift's comparison (pure): each DDL of issue 45 named by its effect, and the changes
that must not be named (no false alarm on a fleet in step)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hephaestus.drift.model import Capture, LiveColumn, LiveTable, Pair, Report
from hephaestus.drift.read import Shapes, compared
from hephaestus.drift.rules import compare, fits
from hephaestus.generator.model import Column, TableRef, TableSchema

USERS = TableRef("public", "users")
CAT = TableSchema((Column("user_id", "text"), Column("name", "text"), Column("email", "text")), ("user_id",))
PAIR = Pair(
    "bob",
    USERS,
    "auth",
    USERS,
    catalog_source=CAT,
    catalog_sink=CAT,
    sinks=("s1",),
    sources=("src",),
    publication="pub",
    signal_table="public.dbz_signals",
)
OK = Capture(True, True)


def live(*cols: LiveColumn, pk: tuple[str, ...] = ("user_id",)) -> LiveTable:
    return LiveTable(cols, pk)


BASE = (LiveColumn("user_id", "text", False), LiveColumn("name", "text"), LiveColumn("email", "text"))


def codes(found: tuple[object, ...]) -> list[tuple[str, str]]:
    return [(f.code, f.subject) for f in found]  # type: ignore[attr-defined]


def test_a_fleet_in_step_has_no_finding() -> None:
    assert compare(PAIR, live(*BASE), live(*BASE), OK) == ()


def test_a_column_added_on_both_sides_is_not_replicated() -> None:
    phone = LiveColumn("phone", "text")
    found = compare(PAIR, live(*BASE, phone), live(*BASE, phone), OK)
    assert codes(found) == [("column-not-replicated", "users.phone")]
    assert found[0].sinks == ("s1",) and found[0].sources == () and found[0].action == "report"
    assert "does not write it" in found[0].why


def test_a_column_added_at_the_source_only_is_named_as_uncatalogued() -> None:
    found = compare(PAIR, live(*BASE, LiveColumn("phone", "text")), live(*BASE), OK)
    assert codes(found) == [("column-not-replicated", "users.phone")]
    assert "catalog lacks it" in found[0].why


def test_a_catalogued_column_the_sink_table_lacks_is_left_out_on_purpose() -> None:
    pair = replace(PAIR, catalog_sink=TableSchema(CAT.columns[:2], ("user_id",)))
    assert compare(pair, live(*BASE), live(*BASE[:2]), OK) == ()


def test_a_dropped_column_the_sink_requires_fails_the_sink() -> None:
    sink = live(BASE[0], BASE[1], LiveColumn("email", "text", nullable=False))
    found = compare(PAIR, live(*BASE[:2]), sink, OK)
    assert codes(found) == [("sink-write-fails", "users.email")] and found[0].sources == ()
    assert "no longer sends it" in found[0].why and found[0].action == "pause"


@pytest.mark.parametrize("column", [LiveColumn("email", "text", nullable=False, has_default=True), BASE[2]])
def test_a_dropped_column_with_a_default_or_nullable_is_fine(column: LiveColumn) -> None:
    assert compare(PAIR, live(*BASE[:2]), live(BASE[0], BASE[1], column), OK) == ()


def test_a_required_sink_column_never_sent_fails_too() -> None:
    sink = live(*BASE, LiveColumn("tenant", "text", nullable=False))
    found = compare(PAIR, live(*BASE), sink, OK)
    assert codes(found) == [("sink-write-fails", "users.tenant")] and "does not send it" in found[0].why


def test_a_type_that_narrows_fails_but_one_that_widens_does_not() -> None:
    cat = TableSchema((Column("user_id", "text"), Column("n", "integer")), ("user_id",))
    pair = replace(PAIR, catalog_source=cat, catalog_sink=cat)
    sink = live(BASE[0], LiveColumn("n", "integer"))
    assert codes(compare(pair, live(BASE[0], LiveColumn("n", "bigint")), sink, OK)) == [("sink-write-fails", "users.n")]
    assert compare(pair, live(BASE[0], LiveColumn("n", "smallint")), sink, OK) == ()
    # A pair the catalog already had (generated and accepted as it is) is not re-judged.
    assert compare(pair, live(BASE[0], LiveColumn("n", "integer")), live(BASE[0], LiveColumn("n", "text")), OK) == ()


def test_a_changed_primary_key_fails_the_sink() -> None:
    found = compare(PAIR, live(*BASE, pk=("user_id", "name")), live(*BASE), OK)
    assert codes(found) == [("sink-write-fails", "public.users")] and "(user_id, name)" in found[0].why


@pytest.mark.parametrize(
    ("capture", "subject", "words"),
    [
        (Capture(False, True), "public.users", "not in publication pub"),
        (Capture(None, False), "public.users", "publication pub does not exist"),
        (Capture(True, False), "public.dbz_signals", "signal table"),
    ],
)
def test_capture_dropped(capture: Capture, subject: str, words: str) -> None:
    found = compare(PAIR, live(*BASE), live(*BASE), capture)
    assert codes(found) == [("capture-dropped", subject)] and words in found[0].why
    assert found[0].sources == ("src",) and found[0].sinks == ("s1",)


def test_a_renamed_or_missing_table() -> None:
    assert codes(compare(PAIR, None, live(*BASE), OK)) == [("capture-dropped", "public.users")]
    assert codes(compare(PAIR, live(*BASE), None, OK)) == [("sink-write-fails", "public.users")]


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        ("text", "text", True),
        ("integer", "bigint", True),
        ("bigint", "integer", False),
        ("character varying(20)", "text", True),
        ("character varying(20)", "character varying", True),
        ("character varying(20)", "character varying(30)", True),
        ("character varying(30)", "character varying(20)", False),
        ("text", "character varying(20)", False),
        ("text", "integer", False),
        ("integer", "text", False),
        ("numeric", "integer", False),
    ],
)
def test_fits(src: str, dst: str, ok: bool) -> None:
    assert fits(src, dst) is ok


def test_an_unreadable_database_is_unknown_never_fine() -> None:
    report = compared([PAIR], {"bob": Shapes({"public.users": live(*BASE)}), "auth": "cannot read database auth: x"})
    assert codes(report.findings) == [("unknown", "auth")] and report.findings[0].sinks == ("s1",)


def test_compared_reads_capture_from_the_publication() -> None:
    tables = {"public.users": live(*BASE), "public.dbz_signals": live(BASE[0])}
    pubs = {"pub": frozenset({"public.dbz_signals"})}
    report = compared([PAIR], {"bob": Shapes(tables, pubs), "auth": Shapes({"public.users": live(*BASE)})})
    assert codes(report.findings) == [("capture-dropped", "public.users")]
    everything = compared([PAIR], {"bob": Shapes(tables, {"pub": None}), "auth": Shapes(tables)})
    assert everything.findings == () and everything.checked == 1


def test_ignore_is_left_out_of_what_is_shown() -> None:
    pair = replace(PAIR, policy=(("added", "ignore"), ("breaking", "report")))
    phone = LiveColumn("phone", "text")
    found = compare(pair, live(*BASE, phone), live(*BASE, phone), OK)
    assert Report(found).shown == () and Report(found).of("s1") == found


# --- the policy, as a definition and its pipelines say it -----------------------------------

DEFINITION = """
cluster: platforms
database: bob
envs: [local]
orgs: [acme]
schema_changes: {added: ignore}
pipelines:
  - source_table: users
    schema_changes: {breaking: report}
    sinks: [{database: auth}]
  - source_table: students
    sinks: [{database: auth}]
"""


def test_a_pipelines_policy_overrides_its_definitions_over_the_safe_defaults() -> None:
    from hephaestus.generator.definitions import parse_definition
    from hephaestus.yamlsrc import parse_yaml

    d = parse_definition(parse_yaml("bob.yaml", DEFINITION))
    assert d.schema_changes == (("added", "ignore"), ("breaking", "pause"))
    assert d.pipelines[0].schema_changes == (("added", "ignore"), ("breaking", "report"))
    assert d.pipelines[1].schema_changes is None
    plain = parse_definition(parse_yaml("bob.yaml", DEFINITION.replace("schema_changes: {added: ignore}\n", "")))
    assert plain.schema_changes == (("added", "report"), ("breaking", "pause"))


def test_a_topic_pipeline_has_no_schema_policy_and_a_bad_value_is_named() -> None:
    from hephaestus.errors import InputErrors
    from hephaestus.generator.definitions import parse_definition
    from hephaestus.yamlsrc import parse_yaml

    topic = DEFINITION + "  - source_topic: t\n    key: [id]\n    columns: [id]\n    schema_changes: {added: report}\n"
    topic += "    sinks: [{database: auth, table: t}]\n"
    with pytest.raises(InputErrors, match=r"pipelines\[2\]\.schema_changes.*belongs to a source_table pipeline"):
        parse_definition(parse_yaml("bob.yaml", topic))
    with pytest.raises(InputErrors, match=r"schema_changes\.breaking"):
        parse_definition(parse_yaml("bob.yaml", DEFINITION.replace("{breaking: report}", "{breaking: drop}")))
