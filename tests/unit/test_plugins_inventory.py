"""`hephaestus plugins` (issue 50) against the strict Connect double: each worker asked at its own
address (statuses name the workers), skew between them, a pin a worker holds nothing for, a
worker that answers without versions or not at all, and the version each connector and task
runs; the exit code a cron reads (1 on any of those, 0 otherwise)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from hephaestus.cli import run
from hephaestus.connect import ConnectClient, RetryPolicy
from hephaestus.fleet.plugins import Workers
from hephaestus.plugins import report
from hephaestus.project import Cluster
from tests.connect_double import ConnectDouble, error, serve

PG = "io.debezium.connector.postgresql.PostgresConnector"
CLUSTER = Cluster("c", "http://lb:8083", Path("connectors/c"))


def source(**extra: str) -> dict[str, str]:
    return {"connector.class": PG, "slot.name": "s", **extra}


class TwoWorkers:
    """Two workers of one cluster, each its own double; the cluster URL reaches w1."""

    def __init__(self) -> None:
        self.w1, self.w2 = ConnectDouble(), ConnectDouble()
        for d in (self.w1, self.w2):
            d.worker_id = "w1:8083"
            d.task_workers = ["w1:8083", "w2:8083"]
        self.asked: list[str] = []

    def factory(self, cluster: Cluster) -> ConnectClient:
        host = httpx.URL(cluster.url).host
        double = {"lb": self.w1, "w1": self.w1, "w2": self.w2}[host]

        def handle(request: httpx.Request) -> httpx.Response:
            self.asked.append(f"{request.url.host} {request.url.path}")
            return double(request)

        return ConnectClient(cluster.url, transport=httpx.MockTransport(handle), retry=RetryPolicy.immediate(1))

    def read(self) -> report.ClusterPlugins:
        from hephaestus.plugins.run import report as read

        (found,) = read([CLUSTER], self.factory)
        return found


def test_each_worker_is_asked_at_its_own_address() -> None:
    w = TwoWorkers()
    w.w1.add("src", source(), type="source").task_states = ["RUNNING", "RUNNING"]
    found = w.read()
    assert "w1 /connector-plugins" in w.asked and "w2 /connector-plugins" in w.asked
    assert sorted(found.workers.held) == ["w1:8083", "w2:8083"] and found.problems == ()
    (runs,) = found.runs
    assert (runs.name, runs.plugin, runs.version, runs.tasks) == (
        "src",
        PG,
        "3.5.0.Final",
        ((0, "3.5.0.Final"), (1, "3.5.0.Final")),
    )


def test_a_cluster_running_nothing_is_read_at_its_url() -> None:
    w = TwoWorkers()
    found = w.read()
    assert list(found.workers.held) == ["lb:8083"] and found.runs == ()


def test_skew_between_workers_is_an_error_naming_both() -> None:
    w = TwoWorkers()
    w.w1.add("src", source(), type="source").task_states = ["RUNNING", "RUNNING"]
    w.w2.plugins.append((PG, "source", "3.6.1.Final"))  # installed on one worker only
    (problem,) = w.read().problems
    assert problem == f"c: {PG} differs between workers (w1:8083: 3.5.0.Final; w2:8083: 3.5.0.Final, 3.6.1.Final)"


def test_a_pin_a_worker_holds_nothing_for_names_the_worker() -> None:
    w = TwoWorkers()
    w.w1.plugins.append((PG, "source", "3.6.1.Final"))
    pinned = source(**{"connector.plugin.version": "3.6.1.Final"})
    w.w1.add("src", pinned, type="source").task_states = ["RUNNING", "RUNNING"]
    problems = w.read().problems
    assert f"c: src: connector.plugin.version=3.6.1.Final: worker w2:8083 holds no {PG} that fits" in problems


def test_a_pin_that_is_no_version_is_named() -> None:
    w = TwoWorkers()
    w.w1.add("src", source(**{"connector.plugin.version": "[3.6"}), type="source")
    assert (
        "c: src: connector.plugin.version: '[3.6' is not a version nor a range such as [3.5,3.6)" in w.read().problems
    )


def test_a_worker_that_does_not_answer_is_named_never_taken_as_empty() -> None:
    w = TwoWorkers()
    w.w1.add("src", source(), type="source").task_states = ["RUNNING", "RUNNING"]
    w.w2.faults.append(lambda req, d: error(503, "starting"))
    found = w.read()
    assert "w2:8083" not in found.workers.held
    assert any(p.startswith("c: worker w2:8083 not read: ") for p in found.problems), found.problems


def test_a_worker_before_kip_891_answers_without_versions() -> None:
    w = TwoWorkers()
    w.w1.add("src", source(), type="source").task_states = ["RUNNING", "RUNNING"]
    for d in (w.w1, w.w2):
        d.plugins = [(c, t, "") for c, t, _ in d.plugins]
        d.versions = False
    found = w.read()
    assert (
        "c: worker w1:8083 lists no plugin versions (Connect before 4.1): versions cannot be checked" in found.problems
    )
    assert found.runs[0].version == "" and "src: " + PG + " ?; task 0 ?, task 1 ?" in report.text([found])


def test_tasks_running_another_version_than_their_connector_are_named() -> None:
    found = report.ClusterPlugins(
        "c",
        "u",
        Workers("c", {"w1": {PG: frozenset({"3.6.1.Final"})}}),
        (report.Runs("src", PG, "3.6.1.Final", ((0, "3.6.1.Final"), (1, "3.5.2.Final"))),),
    )
    assert found.problems == (f"c: src runs {PG} 3.6.1.Final but a task runs 3.5.2.Final",)


@pytest.fixture
def served(tmp_path: Path) -> tuple[ConnectDouble, Path]:
    double = ConnectDouble()
    with serve(double) as url:
        double.worker_id = httpx.URL(url).netloc.decode()
        (tmp_path / "c").mkdir()
        (tmp_path / "hephaestus.yaml").write_text(f"clusters: {{c: {{url: '{url}', connectors: c}}}}\n")
        yield double, tmp_path / "hephaestus.yaml"


def test_the_command_prints_each_worker_and_exits_0_without_a_problem(
    served: tuple[ConnectDouble, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    double, project = served
    double.add("src", source(), type="source")
    assert run(["plugins", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert f"source     {PG}  3.5.0.Final" in out and "src: " + PG + " 3.5.0.Final; task 0 3.5.0.Final" in out
    assert out.rstrip().endswith("no skew, every pin held by every worker")
    assert run(["plugins", "--project", str(project), "-o", "json"]) == 0
    (cluster,) = json.loads(capsys.readouterr().out)["clusters"]
    assert cluster["connectors"] == [
        {
            "name": "src",
            "class": PG,
            "version": "3.5.0.Final",
            "tasks": [{"id": 0, "version": "3.5.0.Final"}],
            "pins": {},
        }
    ]
    assert cluster["skew"] == [] and cluster["errors"] == []


def test_the_command_exits_1_on_a_pin_the_worker_lacks(
    served: tuple[ConnectDouble, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    double, project = served
    double.add("src", source(**{"connector.plugin.version": "3.9.0.Final"}), type="source")
    assert run(["plugins", "--project", str(project)]) == 1
    assert "error: c: src: connector.plugin.version=3.9.0.Final: worker" in capsys.readouterr().out


def test_status_names_skew_as_an_error_and_the_exporter_says_which_version_each_task_runs(
    served: tuple[ConnectDouble, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    double, project = served
    double.add("src", source(), type="source")
    assert run(["status", "--project", str(project), "-o", "json"]) in (0, 2)  # no plugin error
    assert not [e for e in json.loads(capsys.readouterr().out)["clusters"][0]["errors"] if "plugins" in e]

    double.add("pinned", source(**{"connector.plugin.version": "3.9.0.Final"}), type="source")
    textfile = tmp_path / "m.prom"
    assert run(["status", "--project", str(project), "-o", "json", "--metrics-textfile", str(textfile)]) == 1
    (cluster,) = json.loads(capsys.readouterr().out)["clusters"]
    assert any(
        e.startswith("plugins: c: pinned: connector.plugin.version=3.9.0.Final: worker") for e in cluster["errors"]
    )
    page = textfile.read_text()
    assert (
        'hephaestus_task_plugin_version{cluster="c",connector="src",kind="source",task="0",version="3.5.0.Final"} 1'
        in page
    )
    assert 'hephaestus_plugin_skew{cluster="c"} 0' in page


def test_skew_is_one_in_the_exporter_and_unknown_is_no_sample() -> None:
    from hephaestus.status.metrics import status_metrics
    from hephaestus.status.model import ClusterView

    def page(skewed: tuple[str, ...] | None) -> str:
        from prometheus_client import generate_latest

        return generate_latest(status_metrics([ClusterView("c", "u", (), skewed=skewed)], now=0).registry).decode()

    assert 'hephaestus_plugin_skew{cluster="c"} 1' in page((PG,))
    assert "plugin_skew" not in page(None)


@pytest.mark.parametrize("hostile", ["evil.example:80/steal", "user:pw@evil:80", "http://evil:80", "evil", "w1:8083 x"])
def test_a_worker_id_that_is_no_host_port_is_never_asked(hostile: str) -> None:
    w = TwoWorkers()
    w.w1.task_workers = [hostile]
    w.w1.add("src", source(), type="source")
    found = w.read()
    assert found.workers.unread == {hostile: "its worker id is not a host:port: not asked"}
    assert not [a for a in w.asked if "evil" in a or "user" in a]
