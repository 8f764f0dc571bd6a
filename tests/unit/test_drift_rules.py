"""Schema drift's comparison (pure): each DDL of issue 45 named by its effect, and the changes
that must not be named (no false alarm on a fleet in step)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hephaestus.drift.model import Capture, DriftReport, Finding, LiveColumn, LiveTable, Pair
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
    assert DriftReport(found).shown == () and DriftReport(found).of("s1") == found


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


# --- pinned: every finding's words, to the letter (from mutation testing) ---------------------


def test_every_finding_says_exactly_what_and_where() -> None:
    def why(src: LiveTable | None, dst: LiveTable | None, pair: Pair = PAIR) -> list[str]:
        return [f.describe() for f in compare(pair, src, dst, OK)]

    assert why(None, live(*BASE)) == [
        "capture-dropped public.users: bob.public.users no longer exists (dropped or renamed) (affects s1)"
    ]
    assert why(live(*BASE), None) == [
        "sink-write-fails public.users: sink table auth.public.users does not exist (affects s1)"
    ]
    assert why(live(*BASE, pk=()), live(*BASE, pk=("user_id", "name"))) == [
        "sink-write-fails public.users: primary key changed: source (none), catalog (user_id), "
        "sink (user_id, name) (affects s1)"
    ]
    assert why(live(*BASE, pk=("user_id", "name")), live(*BASE, pk=())) == [
        "sink-write-fails public.users: primary key changed: source (user_id, name), catalog (user_id), "
        "sink (none) (affects s1)"
    ]
    no_key = replace(PAIR, catalog_source=TableSchema(CAT.columns, ("user_id", "name")))
    assert "catalog (user_id, name)" in why(live(*BASE), live(*BASE), no_key)[0]
    assert (
        "catalog (none)" in why(live(*BASE), live(*BASE), replace(PAIR, catalog_source=TableSchema(CAT.columns, ())))[0]
    )
    required = live(BASE[0], BASE[1], LiveColumn("email", "text", nullable=False))
    assert why(live(*BASE[:2]), required) == [
        "sink-write-fails users.email: auth.public.users.email is NOT NULL without a default and the source no longer "
        "sends it (affects s1)"
    ]
    assert why(live(*BASE), live(*BASE, LiveColumn("t", "text", nullable=False))) == [
        "sink-write-fails users.t: auth.public.users.t is NOT NULL without a default and the source does not send it "
        "(affects s1)"
    ]
    phone = LiveColumn("phone", "text")
    assert why(live(*BASE, phone), live(*BASE, phone)) == [
        "column-not-replicated users.phone: source and sink tables have it; the sink does not write it "
        "(catalog refresh, then generate) (affects s1)"
    ]
    assert why(live(*BASE, phone), live(*BASE)) == [
        "column-not-replicated users.phone: the catalog lacks it and auth.public.users has no such column (affects s1)"
    ]


def test_a_narrowing_names_both_types_and_a_length_is_not_a_change_of_type() -> None:
    cat = TableSchema(
        (Column("user_id", "text"), Column("n", "bigint"), Column("v", "character varying")), ("user_id",)
    )
    pair = replace(PAIR, catalog_source=cat, catalog_sink=cat)
    src = live(BASE[0], LiveColumn("n", "numeric"), LiveColumn("v", "character varying(20)"))
    dst = live(BASE[0], LiveColumn("n", "bigint"), LiveColumn("v", "character varying(10)"))
    (f,) = compare(pair, src, dst, OK)
    assert f.describe() == "sink-write-fails users.n: type narrows: source numeric, sink bigint (affects s1)"
    assert f.pipeline == "bob.public.users->auth.public.users"


def test_fits_equal_lengths_across_the_char_types() -> None:
    assert fits("character(20)", "character varying(20)") and not fits("character(21)", "character varying(20)")
    assert fits("smallint", "bigint") and not fits("bigint", "smallint")


def test_a_finding_with_no_connector_says_so() -> None:
    assert Finding("unknown", "p", "s", "why").describe() == "unknown s: why (affects no connector)"
    assert Finding("unknown", "p", "s", "why", sources=("src",)).describe() == "unknown s: why (affects src)"


# --- which pairs: a catalog that cannot describe one is unknown --------------------------------


def _defs(text: str = DEFINITION) -> list[object]:
    from hephaestus.generator.definitions import parse_definition
    from hephaestus.yamlsrc import parse_yaml

    return [parse_definition(parse_yaml("bob.yaml", text))]


def _catalogs(**tables: dict[str, TableSchema]) -> dict[str, object]:
    from hephaestus.generator.model import Catalog

    return {
        db: Catalog(f"{db}.json", db, {TableRef("public", n): t for n, t in ts.items()}) for db, ts in tables.items()
    }


def test_pairs_take_the_runs_policies_and_name_what_no_catalog_describes() -> None:
    from hephaestus.drift.pipelines import pairs

    runs = {"local_acme_bob_to_auth_users_sink_connector", "local_acme_bob_source_connector"}
    catalogs = _catalogs(bob={"users": CAT, "students": CAT}, auth={"users": CAT})
    found, unknown = pairs(_defs(), catalogs, lambda c, n: c == "platforms" and n in runs)  # type: ignore[arg-type]
    (p,) = found
    assert (p.name, p.sinks, p.sources, p.publication, p.signal_table) == (
        "bob.public.users->auth.public.users",
        ("local_acme_bob_to_auth_users_sink_connector",),
        ("local_acme_bob_source_connector",),
        "debezium_publication",
        "public.dbz_signals",
    )
    assert p.policy == (("added", "ignore"), ("breaking", "report")) and unknown == []
    every = lambda c, n: True  # noqa: E731
    found, unknown = pairs(_defs(), _catalogs(bob={"users": CAT}, auth={"users": CAT}), every)  # type: ignore[arg-type]
    assert [f.describe() for f in unknown] == [
        "unknown public.students: bob.json has no table public.students "
        "(affects local_acme_bob_to_auth_students_sink_connector)"
    ]
    assert found[0].policy == (("added", "ignore"), ("breaking", "report"))
    _, unknown = pairs(_defs(), _catalogs(auth={"users": CAT, "students": CAT}), every)  # type: ignore[arg-type]
    assert [f.why for f in unknown] == ["no catalog for database bob"] * 2
    _, unknown = pairs(_defs(), _catalogs(bob={"users": CAT, "students": CAT}, auth={}), every)  # type: ignore[arg-type]
    assert [f.why for f in unknown] == ["auth.json has no table public.users", "auth.json has no table public.students"]
    plain = _defs(DEFINITION.replace("schema_changes: {added: ignore}\n", ""))
    both = _catalogs(bob={"users": CAT, "students": CAT}, auth={"users": CAT, "students": CAT})
    found, _ = pairs(plain, both, every)  # type: ignore[arg-type]
    assert [p.policy for p in found] == [
        (("added", "report"), ("breaking", "report")),
        (("added", "report"), ("breaking", "pause")),
    ]


def test_a_column_the_sink_writes_that_its_table_lost_fails_the_sink() -> None:
    (f,) = compare(PAIR, live(*BASE), live(*BASE[:2]), OK)
    assert f.describe() == (
        "sink-write-fails users.email: auth.public.users has no column email, which the sink writes (affects s1)"
    )
    # The source dropped it too: nothing sends it, nothing fails.
    assert compare(PAIR, live(*BASE[:2]), live(*BASE[:2]), OK) == ()


def test_in_step_means_compared_and_not_broken() -> None:
    report = DriftReport(compare(PAIR, live(*BASE), live(*BASE[:2]), OK), compared=frozenset({"s1", "src"}))
    assert not report.in_step("s1") and report.in_step("src") and not report.in_step("elsewhere")
    assert DriftReport(compared=frozenset({"s1"})).in_step("s1")
