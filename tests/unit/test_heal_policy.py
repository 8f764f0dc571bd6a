"""Heal's restart policy (pure): Strimzi's backoff, a budget, grace for UNASSIGNED, reset, notify."""

from __future__ import annotations

from hephaestus.heal.policy import HealConfig, Observed, Record, backoff_s, decide

MIN = 60.0
CFG = HealConfig(max_restarts=3, unassigned_grace_s=300)


def failed(name: str = "c") -> Observed:
    return Observed(name, "RUNNING", ("FAILED",), "boom")


def test_backoff_is_strimzis_sequence() -> None:
    assert [backoff_s(n, HealConfig()) / MIN for n in range(10)] == [0, 2, 6, 12, 20, 30, 42, 56, 60, 60]


def test_first_failure_restarts_at_once_then_backs_off() -> None:
    d1 = decide(failed(), None, 1000, CFG)
    assert d1.verdict == "restart" and d1.record == Record(count=1, last_restart=1000) and not d1.notify
    d2 = decide(failed(), d1.record, 1000 + 60, CFG)
    assert d2.verdict == "backoff" and "restart 2 in 60s" in d2.reason
    assert d2.notify, "failing again after a restart is reported"
    d3 = decide(failed(), d2.record, 1000 + 2 * MIN, CFG)
    assert d3.verdict == "restart" and d3.record is not None and d3.record.count == 2 and not d3.notify


def test_budget_exhausted_once() -> None:
    rec = Record(count=3, last_restart=0, notified=1)
    d = decide(failed(), rec, 10_000, CFG)
    assert d.verdict == "exhausted" and d.notify
    again = decide(failed(), d.record, 20_000, CFG)
    assert again.verdict == "exhausted" and not again.notify


def test_one_message_when_relapse_and_exhaustion_coincide() -> None:
    cfg = HealConfig(max_restarts=1)
    d1 = decide(failed(), None, 0, cfg)
    d2 = decide(failed(), d1.record, 10, cfg)
    d3 = decide(failed(), d2.record, 10_000, cfg)
    assert (d1.verdict, d2.verdict, d3.verdict) == ("restart", "exhausted", "exhausted")
    assert [d.notify for d in (d1, d2, d3)] == [False, True, False]


def test_failed_connector_itself_counts() -> None:
    assert decide(Observed("c", "FAILED", ()), None, 0, CFG).verdict == "restart"


def test_unassigned_gets_a_grace_period() -> None:
    seen = Observed("c", "RUNNING", ("UNASSIGNED",))
    d1 = decide(seen, None, 0, CFG)
    assert d1.verdict == "grace" and d1.record is not None and d1.record.unassigned_since == 0
    assert decide(seen, d1.record, 299, CFG).verdict == "grace"
    assert decide(seen, d1.record, 301, CFG).verdict == "restart"


def test_paused_stopped_and_excluded_left_alone() -> None:
    for state in ("PAUSED", "STOPPED"):
        assert decide(Observed("c", state, ("FAILED",)), None, 0, CFG).verdict == "skipped"
    cfg = HealConfig(exclude=("legacy_*",))
    assert decide(failed("legacy_x"), None, 0, cfg).verdict == "skipped"


def test_count_resets_once_healthy_for_the_backoff() -> None:
    rec = Record(count=2, last_restart=0)
    running = Observed("c", "RUNNING", ("RUNNING",))
    kept = decide(running, rec, 5 * MIN, CFG)
    assert kept.verdict == "healthy" and kept.record == rec
    assert decide(running, rec, 6 * MIN, CFG).record is None


def test_metrics_of_a_run(tmp_path: object) -> None:
    from pathlib import Path

    from hephaestus.heal.metrics import metrics_of
    from hephaestus.heal.run import ClusterHeal, ConnectorHeal

    items = (
        ConnectorHeal("a", "restart", "", healed=True, failed_tasks=(0,)),
        ConnectorHeal("b", "exhausted", "", failed_tasks=(0, 1)),
        ConnectorHeal("c", "healthy", ""),
    )
    path = Path(str(tmp_path)) / "heal.prom"
    assert metrics_of([ClusterHeal("p", "u", items)], now=5.0).write_textfile(path)
    text = path.read_text()
    assert 'hephaestus_heal_restarts{cluster="p"} 1.0' in text
    assert 'hephaestus_heal_failed_connectors{cluster="p"} 1.0' in text
    assert 'hephaestus_heal_failed_tasks{cluster="p"} 3.0' in text
    assert 'hephaestus_heal_budget_exhausted{cluster="p"} 1.0' in text
    assert "hephaestus_heal_last_run_timestamp_seconds 5.0" in text
