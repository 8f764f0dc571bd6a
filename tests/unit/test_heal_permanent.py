"""A heal run over connectors whose tasks failed with real traces (tests/unit/data/traces),
served by the strict Connect double, with a loopback Slack: a permanent cause is never
restarted, keeps its record's count, is one Slack message naming the cause, and leaves the
run failing (exit 2); a transient one is restarted as before."""

from __future__ import annotations

from pathlib import Path

import httpx

from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.heal.metrics import metrics_of
from hephaestus.heal.run import ClusterHeal, ConnectorHeal, HealOptions, heal_cluster
from hephaestus.project import Cluster
from hephaestus.state.heal import HealFile
from hephaestus.state.records import HealRecord
from tests.connect_double import ConnectDouble
from tests.loopback import slack_receiver

TRACES = Path(__file__).parent / "data" / "traces"
SINK = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t"}


def fleet(**traces: str) -> ConnectDouble:
    """One sink per name, its task FAILED with that trace file."""
    double = ConnectDouble()
    for name, file in traces.items():
        c = double.add(name, SINK)
        c.task_states, c.trace = ["FAILED"], (TRACES / f"{file}.txt").read_text()
    return double


def run(tmp_path: Path, double: ConnectDouble, webhook: str | None = None, dry_run: bool = False) -> ClusterHeal:
    cluster = Cluster("c", "http://c.test", tmp_path)
    client = ConnectClient(cluster.url, transport=httpx.MockTransport(double), retry=RetryPolicy.immediate(1))
    with HealFile(tmp_path / "heal.json") as store:
        options = HealOptions(dry_run=dry_run, restart_wait_s=0.0)
        return heal_cluster(client, cluster, store, options, webhook, now=lambda: 1000.0)


def records(tmp_path: Path) -> dict[str, HealRecord]:
    with HealFile(tmp_path / "heal.json") as store:
        return store.load("c")


def by_name(result: ClusterHeal) -> dict[str, ConnectorHeal]:
    return {i.name: i for i in result.items}


def test_a_permanent_failure_is_not_restarted_a_transient_one_is(tmp_path: Path) -> None:
    double = fleet(bad="jdbc-sink-not-null", flaky="jdbc-sink-connection-refused")
    with slack_receiver() as slack:
        result = run(tmp_path, double, slack.url)
        items = by_name(result)
        assert double.writes() == [("POST", "/connectors/flaky/restart")]
        assert (items["bad"].verdict, items["bad"].cause, items["bad"].healed) == (
            "permanent",
            "not-null-violation",
            None,
        )
        assert items["bad"].reason.startswith("FAILED; permanent: not-null constraint violated (column email)")
        assert (items["flaky"].verdict, items["flaky"].cause) == ("restart", "connection-refused")
        assert items["flaky"].reason == "FAILED (connection refused); restart 1 of 10"
        assert result.still_failing and result.notified == ("bad",)
        (text,) = slack.texts()
        assert "`bad`" in text and "a permanent error, not restarted" in text
        assert "not-null constraint violated (column email)" in text and "PSQLException" in text
        assert records(tmp_path) == {"bad": HealRecord(notified=0), "flaky": HealRecord(count=1, last_restart=1000.0)}
        # The next run: still not restarted, no second message, the count still 0.
        again = run(tmp_path, fleet(bad="jdbc-sink-not-null"), slack.url)
        assert by_name(again)["bad"].verdict == "permanent" and again.notified == () and len(slack.texts()) == 1
    assert records(tmp_path)["bad"] == HealRecord(notified=0)


def test_a_dry_run_names_the_permanent_cause_and_writes_nothing(tmp_path: Path) -> None:
    double = fleet(src="source-replication-denied")
    result = run(tmp_path, double, dry_run=True)
    (item,) = result.items
    assert (item.verdict, item.cause) == ("permanent", "replication-denied")
    assert double.writes() == [] and result.still_failing and not (tmp_path / "heal.json").exists()


def test_the_metrics_count_permanent_failures(tmp_path: Path) -> None:
    result = run(tmp_path, fleet(a="jdbc-sink-pg-hba", b="jdbc-sink-table-missing", c="jdbc-sink-socket-timeout"))
    assert sorted(i.verdict for i in result.items) == ["permanent", "permanent", "restart"]
    path = tmp_path / "heal.prom"
    assert metrics_of([result], now=1.0).write_textfile(path)
    text = path.read_text()
    assert 'hephaestus_heal_permanent{cluster="c"} 2.0' in text
    assert 'hephaestus_heal_failed_connectors{cluster="c"} 2.0' in text  # c is healed by its restart
