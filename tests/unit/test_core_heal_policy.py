"""Heal's restart policy at its edges: exact decisions (verdict, record, reason, notify) at the
boundaries of the grace period, the backoff and the budget (mutation-tested core)."""

from __future__ import annotations

from hephaestus.heal.policy import Decision, HealConfig, Observed, Record, decide

CFG = HealConfig(max_restarts=3, unassigned_grace_s=300, backoff_unit_s=60)


def failed(name: str = "c") -> Observed:
    return Observed(name, "RUNNING", ("RUNNING", "FAILED"), "boom")


def running(name: str = "c") -> Observed:
    return Observed(name, "RUNNING", ("RUNNING",))


# --- left alone --------------------------------------------------------------------------


def test_paused_or_stopped_is_skipped_and_keeps_its_record() -> None:
    rec = Record(count=2, last_restart=5.0)
    assert decide(Observed("c", "PAUSED", ("FAILED",)), rec, 10, CFG) == Decision(
        "c", "skipped", rec, "paused or excluded: left alone"
    )
    assert decide(Observed("c", "STOPPED", ()), None, 10, CFG) == Decision(
        "c", "skipped", None, "stopped or excluded: left alone"
    )


def test_an_excluded_connector_is_skipped_whatever_its_state() -> None:
    cfg = HealConfig(exclude=("other", "legacy_*"))
    rec = Record(count=1)
    assert decide(failed("legacy_a"), rec, 0, cfg) == Decision(
        "legacy_a", "skipped", rec, "running or excluded: left alone"
    )
    assert decide(failed("mine"), None, 0, cfg).verdict == "restart"


# --- healthy -------------------------------------------------------------------------------


def test_healthy_without_history_is_forgotten() -> None:
    assert decide(running(), None, 100, CFG) == Decision("c", "healthy", None, "running")
    assert decide(running(), Record(count=0, last_restart=99.0), 100, CFG).record is None
    assert decide(running(), Record(count=2, last_restart=None), 100, CFG).record is None


def test_healthy_within_the_backoff_keeps_the_count_but_not_the_unassigned_mark() -> None:
    rec = Record(count=1, last_restart=1000.0, unassigned_since=900.0, notified=1)
    kept = decide(running(), rec, 1100, CFG)  # backoff of restart 1: 2 units = 120 s
    assert kept == Decision(
        "c",
        "healthy",
        Record(count=1, last_restart=1000.0, notified=1),
        "running since restart 1; the count resets after 120s",
    )


def test_healthy_for_exactly_the_backoff_resets() -> None:
    rec = Record(count=1, last_restart=1000.0)
    assert decide(running(), rec, 1119.9, CFG).record == rec
    assert decide(running(), rec, 1120, CFG) == Decision("c", "healthy", None, "running")


# --- UNASSIGNED ----------------------------------------------------------------------------


def test_an_unassigned_connector_gets_the_grace_too() -> None:
    seen = Observed("c", "UNASSIGNED", ())
    d = decide(seen, None, 1000, CFG)
    assert d == Decision("c", "grace", Record(unassigned_since=1000), "UNASSIGNED for 0s (grace 300s)")
    later = decide(seen, d.record, 1100, CFG)
    assert later == Decision("c", "grace", Record(unassigned_since=1000), "UNASSIGNED for 100s (grace 300s)")


def test_grace_ends_exactly_at_the_grace_period_and_the_restart_clears_the_mark() -> None:
    seen = Observed("c", "RUNNING", ("UNASSIGNED",))
    rec = Record(unassigned_since=1000)
    assert decide(seen, rec, 1299.5, CFG).verdict == "grace"
    d = decide(seen, rec, 1300, CFG)
    assert d == Decision(
        "c",
        "restart",
        Record(count=1, last_restart=1300, unassigned_since=None),
        "UNASSIGNED for 300s; restart 1 of 3",
        False,
    )


def test_failed_wins_over_unassigned() -> None:
    d = decide(Observed("c", "UNASSIGNED", ("FAILED",)), None, 50, CFG)
    assert d == Decision("c", "restart", Record(count=1, last_restart=50), "FAILED; restart 1 of 3", False)
    d = decide(Observed("c", "FAILED", ("UNASSIGNED",)), None, 50, CFG)
    assert d.verdict == "restart" and d.reason == "FAILED; restart 1 of 3"


# --- failing: backoff, budget, notifications -----------------------------------------------


def test_restart_after_the_backoff_counts_up() -> None:
    rec = Record(count=1, last_restart=0, notified=1)
    d = decide(failed(), rec, 120, CFG)
    assert d == Decision("c", "restart", Record(count=2, last_restart=120, notified=1), "FAILED; restart 2 of 3", False)


def test_backoff_until_the_last_fraction_of_a_second() -> None:
    rec = Record(count=1, last_restart=0, notified=1)
    d = decide(failed(), rec, 119.5, CFG)
    assert d == Decision("c", "backoff", rec, "FAILED; restart 2 in 0s", False)
    d = decide(failed(), rec, 60, CFG)
    assert d == Decision("c", "backoff", rec, "FAILED; restart 2 in 60s", False)


def test_the_first_relapse_is_notified_once() -> None:
    rec = Record(count=1, last_restart=0)  # never notified: notified == -1
    d = decide(failed(), rec, 60, CFG)
    assert d == Decision("c", "backoff", Record(count=1, last_restart=0, notified=1), "FAILED; restart 2 in 60s", True)
    # Already notified at a count of 0 (e.g. a record written by an older run): no relapse.
    quiet = decide(failed(), Record(count=1, last_restart=0, notified=0), 60, CFG)
    assert quiet.verdict == "backoff" and not quiet.notify and quiet.record == Record(1, 0, None, 0)


def test_a_relapse_past_the_backoff_restarts_and_notifies() -> None:
    d = decide(failed(), Record(count=1, last_restart=0), 500, CFG)
    assert d == Decision("c", "restart", Record(count=2, last_restart=500, notified=1), "FAILED; restart 2 of 3", True)


def test_exhausted_budget_is_notified_once_per_count() -> None:
    rec = Record(count=3, last_restart=0, notified=1)
    d = decide(failed(), rec, 10_000, CFG)
    assert d == Decision(
        "c", "exhausted", Record(count=3, last_restart=0, notified=3), "FAILED; restart budget of 3 exhausted", True
    )
    assert decide(failed(), d.record, 20_000, CFG).notify is False
    over = decide(failed(), Record(count=4, last_restart=0, notified=3), 10, CFG)
    assert over.verdict == "exhausted" and over.notify


# --- permanent causes (heal.causes): never restarted, the count kept, one message ----------

NOT_NULL = (
    "org.apache.kafka.connect.errors.ConnectException: Exiting WorkerSinkTask due to unrecoverable exception.\n"
    'Caused by: org.postgresql.util.PSQLException: ERROR: null value in column "email" of relation "users" '
    "violates not-null constraint"
)
REFUSED = "Caused by: org.postgresql.util.PSQLException: Connection to db:5432 refused. Check that the hostname"
PERMANENT_REASON = "FAILED; permanent: not-null constraint violated (column email); no restart fixes it"


def broken(trace: str = NOT_NULL, state: str = "RUNNING") -> Observed:
    return Observed("c", state, ("RUNNING", "FAILED"), trace)


def test_a_permanent_cause_is_not_restarted_and_notified_once() -> None:
    d = decide(broken(), None, 100, CFG)
    assert d == Decision(
        "c", "permanent", Record(notified=0), f"{PERMANENT_REASON} (0 of 3 restarts spent)", True, d.cause
    )
    assert d.cause is not None and (d.cause.rule, d.cause.kind) == ("not-null-violation", "permanent")
    again = decide(broken(), d.record, 10_000, CFG)
    assert (again.verdict, again.record, again.notify) == ("permanent", Record(notified=0), False)


def test_a_permanent_cause_keeps_what_earlier_restarts_spent() -> None:
    rec = Record(count=2, last_restart=50.0, notified=-1)  # restarted twice for another cause, no message yet
    d = decide(broken(), rec, 60, CFG)  # within the backoff: no matter, nothing is restarted
    assert d.verdict == "permanent" and d.notify and d.reason == f"{PERMANENT_REASON} (2 of 3 restarts spent)"
    assert d.record == Record(count=2, last_restart=50.0, notified=2)
    told = Record(count=2, last_restart=50.0, notified=2)  # a relapse message went out at this count
    assert decide(broken(), told, 60, CFG) == Decision("c", "permanent", told, d.reason, False, d.cause)


def test_permanent_wins_over_an_exhausted_budget_and_is_found_on_a_failed_connector() -> None:
    d = decide(broken(state="FAILED"), Record(count=3, last_restart=0, notified=3), 10_000, CFG)
    assert d.verdict == "permanent" and not d.notify and d.record == Record(count=3, last_restart=0, notified=3)


def test_a_permanent_trace_does_not_matter_unless_failed() -> None:
    assert decide(Observed("c", "PAUSED", ("FAILED",), NOT_NULL), None, 0, CFG).verdict == "skipped"
    assert decide(Observed("c", "RUNNING", ("UNASSIGNED",), NOT_NULL), None, 0, CFG).verdict == "grace"
    assert decide(Observed("c", "RUNNING", ("RUNNING",), NOT_NULL), None, 0, CFG).verdict == "healthy"


def test_an_episode_ends_when_healthy_and_the_next_one_is_notified_again() -> None:
    first = decide(broken(), None, 0, CFG)
    healthy = decide(running(), first.record, 10, CFG)
    assert healthy.record is None
    assert decide(broken(), healthy.record, 20, CFG).notify


def test_a_transient_cause_is_restarted_and_named() -> None:
    d = decide(broken(REFUSED), None, 5, CFG)
    assert d == Decision(
        "c", "restart", Record(count=1, last_restart=5), "FAILED (connection refused); restart 1 of 3", False, d.cause
    )
    assert d.cause is not None and (d.cause.rule, d.cause.permanent) == ("connection-refused", False)
    assert decide(failed(), None, 5, CFG).cause is None  # "boom": unknown, restarted as before


def test_a_mendable_permanent_cause_is_restarted_once_its_schema_is_in_step_again() -> None:
    from pathlib import Path

    from hephaestus.heal.policy import HealConfig, Observed, decide

    trace = (Path(__file__).parent / "data" / "traces" / "jdbc-sink-alter-disabled.txt").read_text()
    held = decide(Observed("s", "RUNNING", ("FAILED",), trace), None, 0.0, HealConfig())
    assert held.verdict == "permanent"
    mended = decide(Observed("s", "RUNNING", ("FAILED",), trace, mended=True), None, 0.0, HealConfig())
    assert mended.verdict == "restart" and "the schema is in step again" in mended.reason
    unique = (Path(__file__).parent / "data" / "traces" / "jdbc-sink-unique.txt").read_text()
    assert decide(Observed("s", "RUNNING", ("FAILED",), unique, mended=True), None, 0.0, HealConfig()).verdict == (
        "permanent"
    )
