"""The exporter's loop: what a scrape says before the first check, of a cluster not checked for
two intervals, of a worker still starting; clusters checked concurrently; --listen and
--interval refused when they make no sense. Connect is the loopback double; the clock is
injected (no test waits out an interval)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hephaestus.cli import run
from hephaestus.fleet.topics import unresolved
from hephaestus.kafka import Span
from hephaestus.project import load_project
from hephaestus.state import schema
from hephaestus.status import exporter
from hephaestus.status.exporter import Exporter
from tests.connect_double import ConnectDouble

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def page(e: Exporter) -> Samples:
    return samples(generate_latest(e.page().registry).decode())


UP_A = ("hephaestus_cluster_up", (("cluster", "a"),))
UP_B = ("hephaestus_cluster_up", (("cluster", "b"),))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def project(served: tuple[ConnectDouble, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    schema.forget()
    double, url = served
    double.connectors.clear()
    double.starting = 0
    double.add("s1", {"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "t"})
    (tmp_path / "c").mkdir()
    path = tmp_path / "hephaestus.yaml"
    path.write_text(
        f"clusters:\n  a: {{url: '{url}', connectors: c, select: ['s*']}}\n"
        f"  b: {{url: '{url}', connectors: c, select: ['x*'], rollout: {{lag_budget: 500}}}}\n"
    )
    monkeypatch.chdir(tmp_path)
    yield path


def test_a_scrape_before_the_first_check_says_every_cluster_is_down(project: Path) -> None:
    found = page(Exporter(load_project(project), 60))
    assert found[UP_A] == 0 and found[UP_B] == 0
    assert found[("hephaestus_status_last_check_timestamp_seconds", ())] == 0  # never
    assert not [n for n, _ in found if n.startswith("hephaestus_connector_")]


def test_a_cluster_not_checked_within_two_intervals_reads_down(project: Path) -> None:
    clock = Clock()
    e = Exporter(load_project(project), 60, clock=clock)
    e.check_all()
    sink = ("hephaestus_connector_healthy", (("cluster", "a"), ("connector", "s1"), ("kind", "sink")))
    assert page(e)[UP_A] == 1 and page(e)[sink] == 1
    clock.now += 120  # two intervals: still fresh
    assert page(e)[UP_A] == 1
    e.check_cluster(e.project.clusters["b"])  # b checked again, a not
    clock.now += 1
    found = page(e)
    assert found[UP_A] == 0 and found[UP_B] == 1
    assert sink not in found, "a stale cluster's connector gauges are left out, not shown old"


def test_a_worker_still_starting_is_down_at_once_without_waiting(
    project: Path, served: tuple[ConnectDouble, str]
) -> None:
    double, _ = served
    double.starting = 1_000  # GET /health answers 503 until further notice
    double.log.clear()
    e = Exporter(load_project(project), 60)
    found = samples(generate_latest(e.check_all().registry).decode())
    assert found[UP_A] == 0 and found[UP_B] == 0
    assert [p for m, p in double.log if p == "/health"], "asked once"
    assert not [p for m, p in double.log if p == "/connectors"], "a starting worker's listing is not trusted"


def test_clusters_are_checked_concurrently(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each listing waits for the other: a sequential check would break the barrier.
    barrier = threading.Barrier(2, timeout=10)
    real = exporter.listings

    def listings(clusters: Any, **kw: Any) -> Any:
        barrier.wait()
        return real(clusters, **kw)

    monkeypatch.setattr(exporter, "listings", listings)
    found = samples(generate_latest(exporter.check(load_project(project)).registry).decode())
    assert found[UP_A] == 1 and found[UP_B] == 1


def test_the_rollout_lag_budget_and_the_state_series_are_exported(project: Path) -> None:
    found = samples(generate_latest(exporter.check(load_project(project)).registry).decode())
    assert found[("hephaestus_rollout_lag_budget_records", (("cluster", "b"),))] == 500
    assert ("hephaestus_rollout_lag_budget_records", (("cluster", "a"),)) not in found
    labels = (("cluster", "a"), ("connector", "s1"), ("kind", "sink"))
    states = {
        dict(k[1])["state"]: v for k, v in found.items() if k[0] == "hephaestus_connector_state" and k[1][:3] == labels
    }
    assert states["RUNNING"] == 1 and sum(states.values()) == 1 and "FAILED" in states


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_endpoint_answers_cluster_up_0_while_the_first_check_hangs(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = exporter.listings

    def hung(clusters: Any, **kw: Any) -> Any:
        release.wait(10)
        return real(clusters, **kw)

    monkeypatch.setattr(exporter, "listings", hung)
    stop, port = threading.Event(), free_port()
    server = threading.Thread(
        target=exporter.serve, args=(load_project(project), "127.0.0.1", port, 60, stop), daemon=True
    )
    server.start()
    try:
        text = _scrape(port)
        assert samples(text)[UP_A] == 0 and samples(text)[UP_B] == 0
    finally:
        release.set()
        stop.set()
        server.join(10)


def _scrape(port: int) -> str:
    for _ in range(100):
        try:
            return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        except httpx.ConnectError:
            threading.Event().wait(0.05)  # the server is starting
    raise AssertionError("the exporter never listened")


@pytest.mark.parametrize("interval", ["nan", "inf", "-inf", "0", "4", "3601", "1e9"])
def test_an_interval_that_is_not_finite_and_bounded_is_refused(
    project: Path, interval: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["exporter", "--project", str(project), "--interval", interval]) == 1
    assert "--interval" in capsys.readouterr().err


@pytest.mark.parametrize("listen", ["9401", "host:", "host:0", "host:65536", "a:b:9401", "[::1]:x", ":-1"])
def test_a_listen_address_that_is_not_host_port_is_refused(
    project: Path, listen: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["exporter", "--project", str(project), "--listen", listen]) == 1
    assert "--listen" in capsys.readouterr().err


@pytest.mark.parametrize(
    "listen, expected",
    [(":9401", ("0.0.0.0", 9401)), ("127.0.0.1:80", ("127.0.0.1", 80)), ("[::1]:9401", ("::1", 9401))],
)
def test_listen_takes_host_and_port(listen: str, expected: tuple[str, int]) -> None:
    from hephaestus.commands.status import Listen

    assert Listen().convert(listen, None, None) == expected


def test_unresolved_counts_what_was_parked_since_the_last_replay_or_purge() -> None:
    spans = [Span("dlq", 0, 0, 10), Span("dlq", 1, 5, 8), Span("dlq", 2, 0, 4)]
    assert unresolved(spans, {}) == 10 + 3 + 4
    # Partition 0 replayed up to 7; partition 1's replay is older than a purge that moved its
    # start to 5; partition 2 replayed to its end.
    assert unresolved(spans, {("dlq", 0): 7, ("dlq", 1): 2, ("dlq", 2): 4}) == 3 + 3 + 0
    assert unresolved(spans, {("other", 0): 9}) == 17, "another topic's offsets count for nothing"
    assert unresolved([Span("dlq", 0, 0, 3)], {("dlq", 0): 9}) == 0, "never negative"
