"""Issue 43, item 8: a rollout killed mid-way (kill -9: a pod evicted, a node gone), and the run
after it. The killed run is a real `hephaestus reconcile` process, killed with SIGKILL by the
strict Connect double on loopback when a given request arrives; the re-run goes through the
CLI in process.

What a killed run leaves: the connectors it wrote, an intent in the audit journal before each
write (outcomes are journalled once a run's writes settled: there are none), and nothing else
(the configs before the run were held in its memory only; the lock dies with it). The re-run
judges what the killed run wrote and never judged before it writes anything: a failed canary
is not forgotten, the rest of the fleet is not written past it, and reverting in git (the
rollback that remains) goes first; nothing is written twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from hephaestus.safety import seal
from tests.connect_double import ConnectDouble, error
from tests.unit.conftest import Project
from tests.unit.test_rollout_sealed import NAMES, Fleet, said, sink

ROLLOUT = "rollout: {canary: 1, waves: [50, 100], analysis_s: 0.3, interval_s: 0.1}\n"


class Killed(Fleet):
    def __init__(self, project: Project, double: ConnectDouble, url: str) -> None:
        super().__init__(project, double, url)
        self.settings(ROLLOUT)
        self.sent: list[tuple[str, str]] = []  # every write any run sent, in order

    def killed_at(self, when: Callable[[httpx.Request, list[tuple[str, str]]], bool]) -> None:
        """A reconcile process, killed with SIGKILL when `when` says so of a request (given
        the writes sent before it); that request never reaches the double."""
        proc: subprocess.Popen[str] | None = None

        def fault(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
            if proc is not None and proc.poll() is None and when(request, self.sent):
                proc.kill()  # SIGKILL: no finally, no atexit, no journal flush
                proc.wait()
                return error(500, "nobody is listening")
            if request.method != "GET" and not request.url.path.endswith("/validate"):
                self.sent.append((request.method, request.url.path))
            return None

        self.double.faults.append(fault)
        env = {k: v for k, v in os.environ.items() if k != seal.KEY_ENV}
        command = [sys.executable, "-m", "hephaestus", "reconcile", "--project", str(self.file), "--auto-approve"]
        proc = subprocess.Popen(
            command, cwd=self.project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL, f"it ended before the request to kill it at: {out}{err}"

    def again(self, *args: str) -> Any:
        return self.reconcile("--auto-approve", *args)

    def journal(self) -> list[dict[str, Any]]:
        path = self.project.root / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def killed(project: Project, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Killed]:
    double, url = served
    double.connectors.clear()
    double.on_start.clear()
    double.faults.clear()
    monkeypatch.delenv("HEPH_C_URL", raising=False)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    monkeypatch.chdir(project.root)
    yield Killed(project, double, url)
    double.faults.clear()


def put(name: str) -> tuple[str, str]:
    return ("PUT", f"/connectors/{name}/config")


def test_a_run_killed_between_its_failed_canary_and_the_rollback(killed: Killed) -> None:
    killed.double.on_start["s0"] = ["RUNNING", "FAILED"]  # ready, then FAILED at the canary's gate
    killed.killed_at(lambda request, sent: request.method == "PUT" and sent == [put("s0")])
    assert killed.tasks() == ["2", "1", "1", "1"]  # the canary's change landed; its rollback never did
    entries = [(e["connector"], e["outcome"], e["reason"]) for e in killed.journal()]
    assert entries == [("s0", "intent", ""), ("s0", "intent", "rollback")]  # intents only
    dead = killed.journal()[0]["run_id"]

    # The same commit again (a Job's retry, cron): the canary's verdict is found again, nothing written.
    got = killed.again()
    assert got.code == 1 and killed.double.writes() == [], said(got)
    assert (
        f"nothing applied: s0: RUNNING, tasks ['FAILED']: written by run {dead}, which ended before its rollout "
        "judged it: nothing is written while it fails" in said(got)
    )
    assert killed.tasks() == ["2", "1", "1", "1"]

    # The rollback that is left: revert in git. The revert is the only write, and goes first.
    for n in NAMES:
        killed.git(n, sink(n))
    killed.double.on_start.clear()
    got = killed.again("-o", "json")
    assert got.code == 0, said(got)
    assert killed.double.writes() == [put("s0")] and killed.tasks() == ["1"] * 4
    assert killed.sent == [put("s0"), put("s0")]  # the change and the revert: s1-s3 never written
    assert killed.again().code == 0 and killed.double.writes() == []  # settled: nothing judged or written


def test_a_run_killed_mid_wave_is_judged_then_goes_on_and_writes_nothing_twice(killed: Killed) -> None:
    killed.double.on_start["s1"] = ["RUNNING", "FAILED"]  # its first sample RUNNING, then FAILED
    # killed once wave 1 (s1, s2) is written, at the first read of its readiness
    killed.killed_at(lambda request, sent: request.method == "GET" and put("s2") in sent and put("s1") in sent)
    assert killed.tasks() == ["2", "2", "2", "1"]
    dead = killed.journal()[0]["run_id"]

    got = killed.again()  # s1 was never judged: it is now, and fails
    assert got.code == 1 and killed.double.writes() == [], said(got)
    assert f"nothing applied: s1: RUNNING, tasks ['FAILED']: written by run {dead}" in said(got)

    killed.double.connectors["s1"].task_states = ["RUNNING"]  # restarted (heal, or by hand): healthy again
    got = killed.again()
    assert got.code == 0, said(got)
    assert killed.double.writes() == [put("s3")] and killed.tasks() == ["2"] * 4
    assert sorted(killed.sent) == [put(n) for n in NAMES]  # each written once, over the three runs
    judged = [(e["connector"], e["detail"]) for e in killed.journal() if e["action"] == "judge"]
    assert judged == [(n, f"passed the rollout gate, after run {dead} ended before judging it") for n in NAMES[:3]]


def test_a_run_killed_between_two_waves_after_its_canary_passed(killed: Killed) -> None:
    killed.settings(ROLLOUT, ", write_concurrency: 1")  # a wave's writes one after the other
    killed.killed_at(lambda request, sent: request.method == "PUT" and sent == [put("s0")])
    assert killed.tasks() == ["2", "1", "1", "1"]
    got = killed.again()
    assert got.code == 0, said(got)
    assert sorted(killed.double.writes()) == [put(n) for n in NAMES[1:]] and killed.tasks() == ["2"] * 4
    assert sorted(killed.sent) == [put(n) for n in NAMES]  # each written once
    assert [e["connector"] for e in killed.journal() if e["action"] == "judge"] == ["s0"]


# --- the re-run's rules, with a journal a crash left (in process) -------------------------------


def crashed(killed: Killed, *names: str, run: str = "dead0000") -> None:
    """What a run killed after writing `names` leaves: their change in Connect, an intent each."""
    entries = []
    for n in names:
        killed.double.connectors[n].config["tasks.max"] = "2"
        entries.append({"cluster": "c", "connector": n, "action": "update", "outcome": "intent", "run_id": run})
    (killed.project.root / "audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))


def test_a_connector_the_plan_writes_again_is_not_judged_first(killed: Killed) -> None:
    crashed(killed, "s0")
    killed.double.connectors["s0"].config["tasks.max"] = "1"  # the write never landed: planned again
    killed.double.on_start["s0"] = ["RUNNING", "FAILED"]
    got = killed.again()
    assert got.code == 1 and killed.double.writes() == [put("s0"), put("s0")]  # canary, then rollback
    assert "written by run" not in said(got)


def test_a_connector_gone_since_is_not_judged(killed: Killed) -> None:
    crashed(killed, "s0")
    for n in NAMES:
        killed.git(n, sink(n, "2"))
    del killed.double.connectors["s0"]
    killed.ungit("s0")
    got = killed.again()
    assert got.code == 0 and sorted(killed.double.writes()) == [put(n) for n in NAMES[1:]], said(got)
    assert [e for e in killed.journal() if e["action"] == "judge"] == []


def test_with_on_failure_continue_nothing_is_judged_first(killed: Killed) -> None:
    crashed(killed, "s0")
    killed.double.connectors["s0"].task_states = ["FAILED"]
    got = killed.again("--on-failure", "continue")
    assert got.code == 1 and sorted(killed.double.writes()) == [put(n) for n in NAMES[1:]]  # s0 is unhealthy
    assert "written by run" not in said(got)


def test_a_dry_run_judges_nothing_and_journals_nothing(killed: Killed) -> None:
    crashed(killed, "s0")
    killed.double.connectors["s0"].task_states = ["FAILED"]
    before = (killed.project.root / "audit.jsonl").read_text()
    assert killed.reconcile("--dry-run").code == 0
    assert (killed.project.root / "audit.jsonl").read_text() == before


def test_what_a_rename_writes_again_is_not_judged_and_the_rest_is(killed: Killed) -> None:
    crashed(killed, "s0", "s1")
    killed.ungit("s0")
    killed.git("s0b", sink("s0", "2"), renamed_from="s0")  # s0 goes on as s0b: written again
    got = killed.again()
    assert got.code == 0, said(got)
    assert [e["connector"] for e in killed.journal() if e["action"] == "judge"] == ["s1"]


def test_a_paused_connector_is_judged_on_the_state_git_gives_it(killed: Killed) -> None:
    crashed(killed, "s0")
    killed.git("s0", sink("s0", "2"), state="paused")
    killed.double.connectors["s0"].state = "PAUSED"
    killed.double.connectors["s0"].task_states = ["PAUSED"]
    got = killed.again()
    assert got.code == 0, said(got)
    assert [e["connector"] for e in killed.journal() if e["action"] == "judge"] == ["s0"]


def test_every_failing_connector_and_the_runs_that_wrote_them_are_named(killed: Killed) -> None:
    crashed(killed, "s1", run="deadbbbb")
    path = killed.project.root / "audit.jsonl"
    crashed(killed, "s0", run="deadaaaa")
    path.write_text(
        path.read_text() + json.dumps(killed.journal()[0] | {"connector": "s1", "run_id": "deadbbbb"}) + "\n"
    )
    for n in ("s0", "s1"):
        killed.double.connectors[n].task_states = ["FAILED"]
    got = killed.again()
    assert got.code == 1 and killed.double.writes() == []
    assert "nothing applied: s0: RUNNING, tasks ['FAILED'] (and 1 more): written by run deadaaaa, deadbbbb, " in said(
        got
    )


def test_with_nothing_left_unsettled_the_cluster_is_not_read_again(killed: Killed) -> None:
    killed.double.log.clear()
    assert killed.again("--canary", "1", "--analysis-window", "0").code == 0
    listings = [p for m, p in killed.double.log if (m, p) == ("GET", "/connectors")]
    crashed(killed, "s3")  # in sync for the next run, so not written again: judged first
    killed.git("s3", sink("s3", "2"))
    for n in NAMES[:3]:
        killed.git(n, sink(n, "3"))
    killed.double.log.clear()
    assert killed.again("--canary", "1", "--analysis-window", "0").code == 0
    again = [p for m, p in killed.double.log if (m, p) == ("GET", "/connectors")]
    assert len(again) == len(listings) + 3  # its listing, then a baseline and one sample of s3
