"""heal.causes against real task traces (tests/unit/data/traces, provenance in its README): each
trace gets its rule and its cause text, as a whole and as heal reads it (the first line and the
last `Caused by:` lines, masked); every rule is proven by one trace at least; no permanent rule
matches a transient trace, whatever the order of the rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hephaestus.connect.models import LiveConnector, TaskState
from hephaestus.fleet.causes import RULES, classify, why_lines
from hephaestus.heal.run import observe

TRACES = Path(__file__).parent / "data" / "traces"

# file -> (rule id, cause text); None: no rule knows it (unknown, restarted as transient).
EXPECTED: dict[str, tuple[str, str] | None] = {
    "jdbc-sink-not-null": ("not-null-violation", "not-null constraint violated (column email)"),
    "jdbc-sink-unique": ("unique-violation", "unique constraint healtrace_unique_email_key violated"),
    "jdbc-sink-foreign-key": ("foreign-key-violation", "foreign key healtrace_fk_email_fkey violated"),
    "jdbc-sink-check": ("check-violation", "check constraint healtrace_check_email_check violated"),
    "jdbc-sink-table-missing": ("table-missing", "table healtrace_absent does not exist"),
    "jdbc-sink-alter-disabled": (
        "sink-column-missing",
        "table healtrace_nocol lacks a column the records carry (schema.evolution=none)",
    ),
    "jdbc-sink-column-required": ("sink-column-required", "table healtrace_nocol lacks the required column email"),
    "jdbc-sink-relation-missing": ("relation-missing", "relation healtrace_missing_audit does not exist"),
    "jdbc-sink-column-missing": ("column-missing", "column changed_by does not exist"),
    "jdbc-sink-permission-denied": ("permission-denied", "permission denied for table healtrace_perm"),
    "jdbc-sink-password-failed": ("password-failed", "password authentication failed (user healtrace_pw)"),
    "jdbc-sink-pg-hba": ("pg-hba-rejected", "no pg_hba.conf entry (host 127.0.0.2, user postgres)"),
    "source-replication-denied": (
        "replication-denied",
        "the user may not replicate (it needs the REPLICATION attribute)",
    ),
    "source-column-missing": ("column-missing", "column nope does not exist"),
    "source-relation-missing": ("relation-missing", "relation public.healtrace_gone does not exist"),
    "jdbc-sink-connection-refused": ("connection-refused", "connection refused"),
    "jdbc-sink-socket-timeout": ("timeout", "timed out"),
    "jdbc-sink-connection-closed": ("connection-lost", "the connection to the database was lost"),
    "source-connection-terminated": (
        "connection-terminated",
        "the server ended the connection (administrator command)",
    ),
    "source-connection-lost": ("connection-lost", "the connection to the database was lost"),
    "jdbc-sink-start-wrong-password": ("sink-cannot-connect", RULES[-1].text),
    "jdbc-sink-start-refused": ("sink-cannot-connect", RULES[-1].text),
    "source-publication-disabled": None,
    "kafka-rebalance-commit-failed": ("rebalance", "a consumer group rebalance"),
    "kafka-rebalance-in-progress": ("rebalance", "a consumer group rebalance"),
}
# Written out, not read off RULES: a rule whose kind flips fails here.
TRANSIENT = {
    "connection-refused",
    "connection-terminated",
    "timeout",
    "connection-lost",
    "rebalance",
    "sink-cannot-connect",
}


def trace(name: str) -> str:
    return (TRACES / f"{name}.txt").read_text()


def as_heal_reads_it(raw: str) -> str:
    """What decide() gets: heal's observe() of a connector whose task failed with `raw`."""
    task = TaskState(0, "FAILED", "w1", raw)
    return observe(LiveConnector("c", "sink", "RUNNING", "w1", None, (task,), {"connection.password": "s3cret"})).trace


def test_every_trace_file_is_expected_and_every_expected_file_is_there() -> None:
    assert sorted(p.stem for p in TRACES.glob("*.txt")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_real_trace_gets_its_rule_and_cause(name: str) -> None:
    for text in (trace(name), as_heal_reads_it(trace(name))):
        cause = classify(text)
        assert (cause and (cause.rule, cause.text)) == EXPECTED[name]
        assert cause is None or cause.permanent == (cause.rule not in TRANSIENT)


def test_every_rule_is_proven_by_a_real_trace() -> None:
    proven = {found[0] for found in EXPECTED.values() if found}
    assert proven == {r.id for r in RULES}


def test_no_permanent_rule_matches_a_transient_or_unknown_trace() -> None:
    """Each permanent pattern on its own, not only the first match: a transient rule moved
    below a permanent one still could not turn a restartable failure into a permanent one."""
    calm = [why_lines(trace(n)) for n, found in EXPECTED.items() if not found or found[0] in TRANSIENT]
    for rule in (r for r in RULES if r.kind == "permanent"):
        assert not [w for w in calm if re.search(rule.pattern, w)], rule.id
    assert len(calm) == 10


def test_the_rules_are_data_permanent_first_with_unique_ids_and_known_groups() -> None:
    kinds = [r.kind for r in RULES]
    assert kinds == sorted(kinds), "permanent before transient"  # "permanent" < "transient"
    assert len({r.id for r in RULES}) == len(RULES)
    for r in RULES:
        assert set(re.findall(r"{(\w+)}", r.text)) <= set(re.compile(r.pattern).groupindex), r.id
        assert r.matches and r.text


def test_why_lines_leave_out_frames_and_the_failing_rows_values() -> None:
    # A row's value that reads like a constraint error is data, not the cause.
    raw = trace("jdbc-sink-connection-closed") + '  Detail: Failing row contains (1, "null value in column "x" ...).\n'
    raw += '\tat violates check constraint "frame"\n'
    cause = classify(raw)
    assert cause == classify(trace("jdbc-sink-connection-closed")) and cause is not None
    assert cause.rule == "connection-lost"
    why = why_lines(trace("jdbc-sink-not-null"))
    assert "Detail:" not in why and "\tat " not in why and why.count("Caused by:") == 5


def test_no_trace_is_no_cause() -> None:
    assert classify(None) is None and classify("") is None and classify("boom") is None


def test_the_heal_page_lists_every_rule_with_its_kind_in_order() -> None:
    page = (Path(__file__).parents[2] / "docs" / "heal.md").read_text()
    rows = re.findall(r"^\| `([a-z-]+)` \| (permanent|transient) \|", page, re.M)
    assert rows == [(r.id, r.kind) for r in RULES]


def test_heal_and_status_read_the_same_deciding_trace_of_a_connector() -> None:
    """One task fails transiently, another for good: heal and status both go by the permanent
    cause (before, heal read the first task's trace and restarted what status called permanent)."""
    from hephaestus.fleet.causes import deciding
    from hephaestus.fleet.slots import Limits
    from hephaestus.status.run import _view

    tasks = (
        TaskState(0, "FAILED", "w1", trace("jdbc-sink-connection-refused")),
        TaskState(1, "FAILED", "w1", trace("jdbc-sink-not-null")),
    )
    c = LiveConnector("c", "sink", "RUNNING", "w1", None, tasks, {})
    heal_cause = classify(observe(c).trace)
    assert heal_cause is not None and heal_cause.rule == "not-null-violation"
    assert _view("k", c, {}, Limits()).cause == "not-null constraint violated (column email)"
    transient = LiveConnector("c", "sink", "RUNNING", "w1", None, tasks[:1], {})
    assert classify(observe(transient).trace) == classify(tasks[0].trace)
    assert deciding([None, "", "a", "b"]) == "a" and deciding([None, ""]) == ""
