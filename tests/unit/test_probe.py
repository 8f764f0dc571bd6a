"""The freshness probe (issue 46): its arithmetic and states (probe.model), each sink's route read
from live configs (probe.routes), and how the gate judges the configs that carry it."""

from __future__ import annotations

import math

import pytest

from hephaestus.fleet.lag import HealthSample
from hephaestus.probe.model import Reading, Route, SinkRow, SourceRow, judge
from hephaestus.probe.routes import routes, sink_db
from hephaestus.reconciler.rollout.rules import describe, failures
from hephaestus.safety import effects, fleet
from hephaestus.safety.values import NO_RESOLVER
from hephaestus.settings import RolloutSettings

ROUTE = Route("c", "s1", "src", "bob", "auth", "public", "public.users")
NOW = 1_000_000.0


def read(at_sink: float | None, seq_sink: int = 5, seq_src: int = 5, src_at: float = NOW - 1, **kw: object) -> Reading:
    sink = SinkRow(at_sink, seq_sink, tuple(kw.get("unpublished", ()))) if at_sink is not None else None  # type: ignore[arg-type]
    since = float(kw.get("since", NOW - 3600))  # type: ignore[arg-type]
    return Reading(NOW, NOW + float(kw.get("skew", 0.0)), SourceRow(src_at, seq_src, since), sink)  # type: ignore[arg-type]


def test_fresh_is_the_source_clock_minus_the_probe_time_the_sink_holds() -> None:
    f = judge(ROUTE, read(NOW - 7), 120)
    assert (f.state, f.seconds, f.stale, f.max_s) == ("fresh", 7.0, False, 120)


def test_stale_past_the_threshold_and_exactly_at_it_is_still_fresh() -> None:
    assert judge(ROUTE, read(NOW - 120), 120).state == "fresh"
    f = judge(ROUTE, read(NOW - 121), 120)
    assert (f.state, f.seconds, f.stale) == ("stale", 121.0, True)
    assert "121s old (max 120s)" in f.describe()


def test_clock_skew_never_enters_the_number_and_is_shown() -> None:
    f = judge(ROUTE, read(NOW - 5, skew=-300.0), 120)  # the sink's host reads 5 minutes behind
    assert (f.state, f.seconds) == ("fresh", 5.0)
    assert "clocks: auth reads -300.0s from bob" in f.describe()
    assert "clocks" not in judge(ROUTE, read(NOW - 5, skew=0.4), 120).describe()


def test_a_table_out_of_the_publication_is_stale_for_that_pipeline_only() -> None:
    gone = read(NOW - 2, unpublished=("public.users",))
    f = judge(ROUTE, gone, 120)
    assert (f.state, f.seconds) == ("stale", math.inf) and "not in src's publication" in f.why
    other = Route("c", "s2", "src", "bob", "auth", "public", "public.students")
    assert judge(other, gone, 120).state == "fresh"


def test_no_probe_yet_waits_then_turns_stale() -> None:
    young = judge(ROUTE, read(None, since=NOW - 30), 120)
    assert (young.state, young.seconds, young.stale) == ("waiting", None, False)
    old = judge(ROUTE, read(None, since=NOW - 600), 120)
    assert (old.state, old.seconds, old.stale) == ("stale", math.inf, True)


def test_no_source_row_waits_and_says_the_heartbeat_has_not_run() -> None:
    f = judge(ROUTE, Reading(NOW, NOW, None, None), 120)
    assert f.state == "waiting" and "heartbeat has not run" in f.why and not f.stale


@pytest.mark.parametrize(
    "reading",
    [
        read(NOW - 1, seq_sink=9, seq_src=5),  # the sink's row is ahead of the source's
        read(NOW - 0.5, src_at=NOW - 1),  # a probe newer than the source ever wrote
        read(NOW - 1, src_at=NOW + 60),  # the source's row from the future
    ],
)
def test_a_probe_row_edited_by_hand_is_never_fresh(reading: Reading) -> None:
    f = judge(ROUTE, reading, 120)
    assert f.state == "edited" and f.stale and f.seconds is None


def test_unknown_says_why_and_is_not_stale() -> None:
    f = judge(Route("c", "s", why="its config carries no probe"), Reading(), 120)
    assert (f.state, f.stale, f.why) == ("unknown", False, "its config carries no probe")
    g = judge(ROUTE, Reading(error="database auth: connection refused"), 120)
    assert (g.state, g.why) == ("unknown", "database auth: connection refused")


# --- routes, from live configs -------------------------------------------------------------

SOURCE = {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "topic.prefix": "bob",
    "database.dbname": "${file:/s:bob_dbname}",
    "table.include.list": "public.hephaestus_probe,public.users",
    "transforms": "route",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": r"([^.]+)\.([^.]+)\.([^.]+)",
    "transforms.route.replacement": "local.m.$1.$2.$3",
}
PROBE_TOPIC = "local.m.bob.public.hephaestus_probe"
SINK = {
    "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
    "connection.url": "${file:/s:auth_url}",
    "topics": f"local.m.bob.public.users,{PROBE_TOPIC}",
    "collection.name.format": "${topic}",
    "primary.key.mode": "record_key",
    "primary.key.fields": "user_id,probe_source,probe_sink",
    "insert.mode": "upsert",
    "field.include.list": "user_id,name,hephaestus_probe:probed_at",
    "transforms": "hephaestus_probe_sink,hephaestus_data,hephaestus_probe",
    "transforms.hephaestus_probe_sink.type": "org.apache.kafka.connect.transforms.InsertField$Key",
    "transforms.hephaestus_probe_sink.static.field": "probe_sink",
    "transforms.hephaestus_probe_sink.static.value": "snk",
    "transforms.hephaestus_probe_sink.predicate": "hephaestus_is_probe",
    "predicates": "hephaestus_is_probe",
    "predicates.hephaestus_is_probe.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.hephaestus_is_probe.pattern": r"local\.m\.bob\.public\.hephaestus_probe",
    "transforms.hephaestus_data.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.hephaestus_data.regex": r"local\.m\.bob\.public\.users",
    "transforms.hephaestus_data.replacement": "users",
    "transforms.hephaestus_probe.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.hephaestus_probe.regex": r"local\.m\.bob\.public\.hephaestus_probe",
    "transforms.hephaestus_probe.replacement": "hephaestus_probe",
}


def test_a_carrying_sink_routes_to_its_source_row_and_both_databases() -> None:
    (r,) = routes("c", {"src": SOURCE, "snk": SINK})
    assert r == Route("c", "snk", "src", "bob", "auth", "public", "public.users")


def test_a_sink_whose_tag_names_another_sink_or_no_probe_topic_is_unknown() -> None:
    forged = {**SINK, "transforms.hephaestus_probe_sink.static.value": "someone_else"}
    assert "carries no probe" in routes("c", {"src": SOURCE, "snk": forged})[0].why
    plain = {**SINK, "topics": "local.m.bob.public.users"}
    assert "carries no probe" in routes("c", {"src": SOURCE, "snk": plain})[0].why
    assert "no source on c writes" in routes("c", {"snk": SINK})[0].why


@pytest.mark.parametrize(
    ("url", "database"),
    [
        ("${file:/config/x.properties:auth_url}", "auth"),
        ("jdbc:postgresql://db:5432/eureka?ssl=true", "eureka"),
        ("jdbc:mysql://db/x", ""),
    ],
)
def test_the_sink_database_from_its_url(url: str, database: str) -> None:
    assert sink_db({"connection.url": url}) == database


# --- the gate, over the configs that carry the probe ---------------------------------------

PLAIN = {
    k: v
    for k, v in SINK.items()
    if not k.startswith(("transforms", "predicates")) and k not in ("topics", "collection.name.format")
}
PLAIN.update(topics="local.m.bob.public.users", **{"collection.name.format": "users", "primary.key.fields": "user_id"})
PLAIN["field.include.list"] = "user_id,name"


def codes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(e.code for e in effects.of_update(before, after, NO_RESOLVER))


def test_carrying_the_probe_changes_nothing_the_old_records_meet() -> None:
    assert codes(PLAIN, SINK) == []


def test_a_tenant_filter_that_lets_the_probe_by_is_the_same_filter_for_the_data() -> None:
    tenant = {
        "transforms": "tenant",
        "transforms.tenant.type": "io.debezium.transforms.Filter",
        "transforms.tenant.language": "jsr223.groovy",
        "transforms.tenant.condition": "value == null",
    }
    before = {**PLAIN, **tenant}
    after = {**SINK, **{k: v for k, v in tenant.items() if k != "transforms"}}
    after["transforms"] = "tenant," + SINK["transforms"]
    after.update({"transforms.tenant.predicate": "hephaestus_is_probe", "transforms.tenant.negate": "true"})
    assert codes(before, after) == []
    # A predicate decided per record (a header) cannot be told from the config: judged as changed.
    per_record = {**after, "predicates": "h", "transforms.tenant.predicate": "h"}
    per_record["predicates.h.type"] = "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"
    assert codes(before, per_record) == ["records-filtered"]


def test_a_predicate_that_matches_the_data_topic_is_judged_like_any_transform() -> None:
    wide = {**SINK, "predicates.hephaestus_is_probe.pattern": ".*"}  # the key tag now hits the data
    assert "keys-changed" in codes(PLAIN, wide)


def test_a_router_that_moves_the_data_elsewhere_is_still_target_changed() -> None:
    moved = {**SINK, "transforms.hephaestus_data.replacement": "other"}
    assert "target-changed" in codes(PLAIN, moved)


def test_probe_key_names_are_reserved_but_other_key_fields_are_judged() -> None:
    assert "keys-changed" in codes(PLAIN, {**SINK, "primary.key.fields": "user_id,tenant,probe_source,probe_sink"})


def test_every_sink_of_a_database_writes_the_probe_table_without_being_a_second_writer() -> None:
    other = {
        **SINK,
        "topics": f"local.m.bob.public.students,{PROBE_TOPIC}",
        "primary.key.fields": "student_id,probe_source,probe_sink",
        "transforms.hephaestus_data.regex": r"local\.m\.bob\.public\.students",
        "transforms.hephaestus_data.replacement": "students",
        "transforms.hephaestus_probe_sink.static.value": "snk2",
    }
    before = [fleet.Member("c", "snk", SINK, None)]
    found = fleet.judge(before, [fleet.FleetChange("c", "snk2", other)], NO_RESOLVER, {})
    assert found == {}


# --- the rollout's freshness gate (reconciler.rollout.rules) --------------------------------


GATED = RolloutSettings(max_freshness_s=60)


def _sample(at: float | None, now: float | None, why: str = "") -> HealthSample:
    return HealthSample("s", "RUNNING", ("RUNNING",), probe_at=at, source_now=now, probe_why=why)


def _gate(before: HealthSample, now: HealthSample, r: RolloutSettings = GATED) -> list[tuple[str, bool]]:
    return [(f.why, f.hard) for f in failures(r, {"s": before}, {"s": now}, {"s": "RUNNING"})]


def test_a_probe_written_after_the_change_passes_the_gate() -> None:
    assert _gate(_sample(NOW - 30, NOW), _sample(NOW + 5, NOW + 10)) == []


def test_a_probe_from_before_the_change_waits_then_fails_hard() -> None:
    waiting = _gate(_sample(NOW - 3, NOW), _sample(NOW - 3, NOW + 20))
    assert waiting == [("waiting for a probe written after its change (20s)", False)]
    ((why, hard),) = _gate(_sample(NOW - 3, NOW), _sample(NOW - 3, NOW + 61))
    assert hard and "no probe written after its change arrived in 61s (allowed 60s)" == why


def test_a_probe_not_measured_never_passes_and_an_ungated_rollout_ignores_it() -> None:
    assert _gate(_sample(None, NOW), _sample(None, None, "database auth: refused")) == [
        ("freshness not measured: database auth: refused", False)
    ]
    assert _gate(_sample(None, None), _sample(NOW, NOW)) == [("freshness not measured before its change", False)]
    assert _gate(_sample(NOW - 3, NOW), _sample(NOW - 3, NOW + 600), RolloutSettings()) == []
    # A sink that carries no probe has no probe reading at all: not gated.
    assert _gate(_sample(None, None), _sample(None, None)) == []


def test_the_dry_run_names_the_freshness_gate() -> None:
    assert "a probe after the change within 60s" in describe(GATED, True)
    assert "probe" not in describe(RolloutSettings(), True)


def test_turning_the_probe_off_is_no_data_change_but_a_probe_only_capture_is() -> None:
    assert codes(SINK, PLAIN) == []  # the sink stops reading the probe's topic: no data row lost
    source_off = {**SOURCE, "table.include.list": "public.users"}
    assert codes(SOURCE, source_off) == [] and codes(source_off, SOURCE) == []
    everything = {k: v for k, v in SOURCE.items() if k != "table.include.list"}
    only_probe = {**SOURCE, "table.include.list": "public.hephaestus_probe"}
    assert "capture-dropped" in codes(everything, only_probe)  # every table but the probe's leaves


def test_the_probe_table_leaving_a_publication_is_no_data_change() -> None:
    assert effects.of_publication_drop(["public.hephaestus_probe"]) == ()
    (found,) = effects.of_publication_drop(["public.hephaestus_probe", "public.users"])
    assert found.code == "capture-dropped" and "public.users" in found.why and "probe" not in found.why


# --- edges of the arithmetic (mutation testing found these unpinned) ----------------------


def test_the_newest_probe_arrived_is_fresh_at_zero_and_each_judgement_keeps_route_and_skew() -> None:
    f = judge(ROUTE, read(NOW - 1, src_at=NOW - 1, skew=2.5), 120)  # the sink holds the source's newest
    assert (f.state, f.seconds, f.route, f.skew_s, f.why) == ("fresh", 1.0, ROUTE, 2.5, "")
    at_now = judge(ROUTE, read(NOW, src_at=NOW), 120)
    assert (at_now.state, at_now.seconds) == ("fresh", 0.0)
    for reading in (
        read(NOW - 500, skew=3.0),
        read(None, since=NOW - 10, skew=3.0),
        read(None, since=NOW - 999, skew=3.0),
    ):
        found = judge(ROUTE, reading, 120)
        assert (found.route, found.skew_s) == (ROUTE, 3.0) and found.why, found
    gone = judge(ROUTE, read(NOW - 2, unpublished=("public.users",), skew=3.0), 120)
    assert (gone.route, gone.skew_s) == (ROUTE, 3.0)
    edited = judge(ROUTE, read(NOW - 1, seq_sink=9, skew=3.0), 120)
    assert (edited.route, edited.skew_s) == (ROUTE, 3.0) and "#9" in edited.why


def test_the_boundaries_of_waiting_and_of_a_row_from_the_future() -> None:
    assert judge(ROUTE, read(None, since=NOW - 120), 120).state == "waiting"  # exactly max_s: still waiting
    assert judge(ROUTE, read(None, since=NOW - 121), 120).state == "stale"
    assert judge(ROUTE, read(NOW - 5, src_at=NOW + 1), 120).state == "fresh"  # a second ahead: clocks agree
    assert judge(ROUTE, read(NOW - 5, src_at=NOW + 1.5), 120).state == "edited"
    future = judge(ROUTE, read(NOW - 5, src_at=NOW + 60), 120)
    assert (future.route, "from the future" in future.why) == (ROUTE, True)


def test_how_each_state_reads() -> None:
    assert judge(ROUTE, read(NOW - 7), 120).describe() == "fresh 7s"
    stale = judge(ROUTE, read(NOW - 2, unpublished=("public.users",)), 120).describe()
    assert stale == "stale (never): public.users is not in src's publication: its rows stop at the source"
    assert (
        judge(ROUTE, read(None, since=NOW - 30), 120).describe()
        == "waiting: no probe arrived yet (src probing for 30s)"
    )


def test_a_route_names_its_table_and_the_schema_of_its_probe_table() -> None:
    other = {**SINK, "collection.name.format": "dwh.${topic}"}
    (r,) = routes("c", {"src": SOURCE, "snk": other})
    assert (r.schema, r.table, r.source_db) == ("dwh", "public.users", "bob")
    only_probe = {**SINK, "topics": PROBE_TOPIC}
    (p,) = routes("c", {"src": SOURCE, "snk": only_probe})
    assert (p.table, p.why) == ("", "")
    default = {k: v for k, v in SINK.items() if k != "collection.name.format"}
    assert routes("c", {"src": SOURCE, "snk": default})[0].schema == "public"
    named = {**SOURCE, "database.dbname": "bobdb"}  # a literal dbname is the database
    assert routes("c", {"src": named, "snk": SINK})[0].source_db == "bobdb"


def test_no_source_row_keeps_the_route_and_the_skew() -> None:
    f = judge(ROUTE, Reading(NOW, NOW + 4.0, None, None), 120)
    assert (f.state, f.route, f.skew_s) == ("waiting", ROUTE, 4.0)


def test_a_sink_that_carries_no_probe_is_still_named_by_its_cluster_and_name() -> None:
    plain = {**SINK, "topics": "local.m.bob.public.users"}
    lonely = routes("c", {"snk": SINK})
    for found in (routes("c", {"src": SOURCE, "snk": plain}), lonely):
        (r,) = found
        assert (r.cluster, r.sink, r.source) == ("c", "snk", "") and r.why


def test_a_quote_in_a_name_cannot_leave_the_heartbeat_querys_literals() -> None:
    from hephaestus.generator.probe import _literal

    assert _literal("o'brien") == "'o''brien'" and _literal("") == "''"


def test_a_change_that_drops_the_probe_cannot_slip_past_the_freshness_gate() -> None:
    """Before its change the sink carried the probe; after it, no probe is read for it at all."""
    assert _gate(_sample(NOW - 3, NOW), HealthSample("s", "RUNNING", ("RUNNING",))) == [
        ("its change stops carrying the freshness probe", True)
    ]
    assert _gate(_sample(None, None, "database auth: refused"), HealthSample("s", "RUNNING", ("RUNNING",)))[0][1]
    # A sink that never carried it (Confluent, ksqlDB's) is not gated by it.
    assert _gate(HealthSample("s", "RUNNING", ("RUNNING",)), HealthSample("s", "RUNNING", ("RUNNING",))) == []
