"""Issue 29's findings, each through the CLI against the strict Connect double on loopback:
refused with zero writes (counted by the double), or done as it should be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from hephaestus.classes import DEBEZIUM_SINK, POSTGRES_SOURCE
from hephaestus.state.ownership import OwnershipFile, OwnershipUnavailable, claims_of
from tests.connect_double import ConnectDouble, error
from tests.unit.conftest import Project

ROUTE = {
    "transforms": "route",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
    "transforms.route.replacement": "local.org.$1.$2.$3",
}
SRC = {
    "connector.class": POSTGRES_SOURCE,
    "database.hostname": "db",
    "database.dbname": "bob",
    "slot.name": "local_org_bob",
    "topic.prefix": "bob",
    "plugin.name": "pgoutput",
    "snapshot.mode": "initial",
    **ROUTE,
}
SNK = {
    "connector.class": DEBEZIUM_SINK,
    "connection.url": "jdbc:postgresql://db/auth",
    "topics": "local.org.bob.public.users",
    "insert.mode": "upsert",
    "primary.key.mode": "record_key",
    "primary.key.fields": "id",
    "collection.name.format": "users",
}


class World:
    def __init__(self, project: Project, double: ConnectDouble, url: str) -> None:
        self.project, self.double, self.url = project, double, url
        self.file = project.root / "hephaestus.yaml"
        self.file.write_text(
            f"clusters:\n  c:\n    url: {url}\n    url_env: HEPH_C_URL\n    connectors: connectors/c\n"
            "    timeout_s: 2\n"
            "policy: {stability_window_s: 0}\n"
        )

    def git(self, name: str, config: dict[str, str], kind: str = "sink", **extra: Any) -> None:
        folder = self.project.root / "connectors/c" / kind
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config, **extra}))

    def ungit(self, name: str, kind: str = "sink") -> None:
        (self.project.root / "connectors/c" / kind / f"{name}.json").unlink()

    def live(
        self, name: str, config: dict[str, str], kind: str = "sink", own: bool = True, state: str = "RUNNING"
    ) -> None:
        self.double.add(name, config, state=state, type=kind)
        if own:
            self.store().claim("default", "c", claims_of([name], "*", "created", "r0"))

    def store(self) -> OwnershipFile:
        return OwnershipFile(self.project.root / ".hephaestus/ownership.json")

    def cli(self, *args: str) -> Any:
        self.double.log.clear()
        return self.project.cli(*args, "--project", str(self.file))

    def reconcile(self, *args: str) -> Any:
        return self.cli("reconcile", *args)


@pytest.fixture
def world(project: Project, served: tuple[ConnectDouble, str], monkeypatch: pytest.MonkeyPatch) -> World:
    double, url = served
    double.connectors.clear()
    double.on_start.clear()
    double.faults.clear()
    monkeypatch.delenv("HEPH_C_URL", raising=False)
    monkeypatch.delenv("HEPHAESTUS_PLAN_KEY", raising=False)
    (project.root / "connectors/c/sink").mkdir(parents=True)
    return World(project, double, url)


def refused(out: Any, world: World, *words: str, code: int = 2) -> None:
    assert out.code == code, out.out + out.err
    assert world.double.writes() == [], "nothing is written when the gate refuses"
    for w in words:
        assert w in out.out + out.err, out.out + out.err


# --- effects through every kind of step ---------------------------------------------------------


def test_a_snapshot_mode_written_always_with_a_space_is_a_resnapshot(world: World) -> None:
    world.live("src", SRC, "source")
    world.git("src", {**SRC, "snapshot.mode": "always "}, "source")
    refused(world.reconcile("--auto-approve"), world, "resnapshot: snapshot.mode=always reads every table")
    ok = world.reconcile("--auto-approve", "--allow-destructive=resnapshot")
    assert ok.code == 0 and world.double.connectors["src"].config["snapshot.mode"] == "always "


def test_a_sink_pointed_at_another_database_is_a_target_change(world: World) -> None:
    world.live("snk", SNK)
    world.git("snk", {**SNK, "connection.url": "jdbc:postgresql://db/other"})
    refused(world.reconcile("--auto-approve"), world, "target-changed: connection.url: another database")


def test_a_sink_renamed_without_renamed_from_while_its_key_changes(world: World) -> None:
    world.live("old", SNK)
    world.git("new", {**SNK, "primary.key.fields": "id,org"})
    refused(world.reconcile("--auto-approve"), world, "keys-changed: takes over the table old wrote")


def test_a_source_rename_applied_with_target_new_is_a_second_writer(world: World) -> None:
    world.live("old", SRC, "source")
    world.git("new", SRC, "source")
    out = world.reconcile("--auto-approve", "--target", "new")
    refused(out, world, "second-writer: replication slot local_org_bob is also c/old's", "never allowed")
    refused(world.reconcile("--auto-approve", "--target", "new", "--allow-destructive"), world, "never allowed")


def test_stopping_a_source_that_drops_its_slot_on_stop(world: World) -> None:
    dropping = {**SRC, "slot.drop.on.stop": "true"}
    world.live("src", dropping, "source")
    world.git("src", dropping, "source", state="stopped")
    refused(world.reconcile("--auto-approve"), world, "destructive state of src (slot-dropped: slot.drop.on.stop=true")


def test_a_new_source_on_a_live_sources_slot(world: World) -> None:
    world.live("a", SRC, "source")
    world.git("a", SRC, "source")
    world.git("b", {**SRC, "transforms.route.replacement": "other.$1.$2.$3"}, "source")
    refused(world.reconcile("--auto-approve"), world, "create b refused: second-writer: replication slot local_org_bob")


def test_a_rename_never_overwrites_a_connector_it_does_not_own(world: World) -> None:
    world.live("old", SNK)
    world.live("new", {**SNK, "topics": "theirs"}, own=False)
    world.git("new", SNK, renamed_from="old")
    refused(world.reconcile("--auto-approve", "--allow-destructive"), world, "not-owned: new already runs")
    assert world.double.connectors["new"].config["topics"] == "theirs" and "old" in world.double.connectors


# --- the sealed plan ------------------------------------------------------------------------


def saved(world: World, *args: str) -> Path:
    path = world.project.root / "plan.json"
    out = world.reconcile("--dry-run", "--out", str(path), *args)
    assert out.code in (0, 2) and "sealed into" in out.out, out.out + out.err  # a refused plan is sealed too
    return path


def test_an_edited_plan_is_refused_with_zero_writes(world: World) -> None:
    world.live("snk", SNK)
    world.git("snk", {**SNK, "primary.key.fields": "id,x"})
    path = saved(world)
    assert "DESTRUCTIVE" in world.project.cli("reconcile", "--dry-run", "--project", str(world.file)).out
    doc = json.loads(path.read_text())
    doc["body"]["options"]["allow_destructive"] = "all"  # issue 29: read as consent, then applied
    path.write_text(json.dumps(doc))
    refused(world.reconcile("--plan", str(path)), world, "edited or truncated", code=1)
    path.write_text(path.read_text()[:100])
    refused(world.reconcile("--plan", str(path)), world, "invalid JSON", code=1)


def test_a_refused_plan_saved_stays_refused_when_applied(world: World) -> None:
    world.live("snk", SNK)
    world.git("snk", {**SNK, "primary.key.fields": "id,x"})
    path = world.project.root / "plan.json"
    dry = world.reconcile("--dry-run", "--out", str(path))
    assert dry.code == 2 and "keys-changed" in dry.out
    refused(world.reconcile("--plan", str(path)), world, "destructive update of snk (keys-changed")
    saved(world, "--allow-destructive=keys-changed")
    done = world.reconcile("--plan", str(path))
    assert done.code == 0 and world.double.writes() == [("PUT", "/connectors/snk/config")]


def test_a_scope_flag_with_a_plan_is_an_error(world: World) -> None:
    world.git("snk", SNK)
    path = saved(world)
    for flag in (
        ["--cluster", "c"],
        ["--target", "x"],
        ["--force"],
        ["--allow-destructive"],
        ["--deploy-custom-sinks"],
    ):
        out = world.reconcile("--plan", str(path), *flag)
        refused(out, world, "cannot be given with --plan", code=1)
    refused(world.reconcile("--plan", str(path), "--dry-run", "--out", str(path)), world, code=1)


def test_a_plan_made_against_another_connect_is_foreign(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.git("snk", SNK)
    path = saved(world)
    world.double.kafka_cluster_id = "another-kafka"
    refused(world.reconcile("--plan", str(path)), world, "a foreign plan", code=1)
    world.double.kafka_cluster_id = "dbl-kafka-cluster-0"
    monkeypatch.setenv("HEPH_C_URL", world.url.replace("127.0.0.1", "localhost"))
    refused(world.reconcile("--plan", str(path)), world, "was made against", "a foreign plan", code=1)


def test_a_password_rotated_between_plan_and_apply_is_noticed(world: World) -> None:
    world.live("snk", {**SNK, "connection.password": "old-pw-1"})
    # git holds a placeholder (never the value: every command refuses a plaintext one)
    world.git("snk", {**SNK, "connection.password": "${file:/opt/connect/secrets.properties:pw}", "batch.size": "5"})
    path = saved(world)
    assert "old-pw-1" not in path.read_text()
    world.double.connectors["snk"].config["connection.password"] = "rotated-pw-2"
    refused(world.reconcile("--plan", str(path)), world, "stale plan: the live config or state of snk changed")


def test_a_plan_applies_those_steps_and_no_others(world: World) -> None:
    world.git("a", SNK)
    path = saved(world)
    world.git("b", {**SNK, "topics": "other"})  # a file added since: the plan is stale, not extended
    refused(world.reconcile("--plan", str(path)), world, "is stale", "b.json")
    world.ungit("b")
    done = world.reconcile("--plan", str(path))
    assert done.code == 0 and sorted(world.double.connectors) == ["a"]


# --- options, files, ownership, apply order ---------------------------------------------------


def test_a_target_matching_nothing_is_an_error(world: World) -> None:
    world.git("snk", SNK)
    refused(world.reconcile("--dry-run", "--target", "zz*"), world, "'zz*' matches no connector", code=1)


def test_out_never_overwrites_an_input(world: World) -> None:
    world.git("snk", SNK)
    before = world.file.read_bytes()
    for target in (world.file, world.project.root / "connectors/c/sink/snk.json", world.project.root / "README.md"):
        if target.name == "README.md":
            target.write_text("keep me")
        out = world.reconcile("--dry-run", "--out", str(target))
        assert out.code == 1 and "--out would overwrite" in out.err, out.err
    assert world.file.read_bytes() == before and (world.project.root / "README.md").read_text() == "keep me"


def test_max_failures_counts_waves_without_a_batch_size_and_a_failed_sources_sinks_wait(world: World) -> None:
    world.git("src", SRC, "source")
    world.git("snk", SNK)
    world.double.on_start["src"] = ["FAILED"] * 50
    out = world.reconcile("--auto-approve", "-o", "json")
    results = {r["name"]: r for c in json.loads(out.out)["clusters"] for r in c["results"]}
    assert out.code == 1 and not results["src"]["ok"]
    assert results["snk"]["detail"] == "not applied: its source src failed in this run"  # issue 29
    assert "snk" not in world.double.connectors


def test_max_failures_stops_later_waves(world: World) -> None:
    world.git("gone", {**SNK, "topics": "x"})
    world.live("gone", {**SNK, "topics": "x"})
    world.ungit("gone")
    world.git("keep", {**SNK, "topics": "k"})
    world.live("keep", {**SNK, "topics": "k"})
    world.git("new", {**SNK, "topics": "n"})
    world.double.faults.append(lambda r, d: error(500, "boom") if r.method == "DELETE" else None)
    out = world.reconcile("--auto-approve", "--max-failures", "1", "-o", "json")
    results = {r["name"]: r for c in json.loads(out.out)["clusters"] for r in c["results"]}
    assert not results["gone"]["ok"] and "rollout stopped after 1 batch(es)" in results["new"]["detail"]
    assert "new" not in world.double.connectors


def test_a_claim_is_released_before_its_delete_and_no_release_no_delete(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.live("keep", {**SNK, "topics": "k"})
    world.git("keep", {**SNK, "topics": "k"})
    world.live("gone", {**SNK, "topics": "x"})

    def broken(self: OwnershipFile, project: str, cluster: str, names: Any) -> None:
        raise OwnershipUnavailable("ownership record: disk full")

    monkeypatch.setattr(OwnershipFile, "claim", broken)  # the mark written before the delete
    out = world.reconcile("--auto-approve")
    assert out.code == 1 and "not applied: ownership record: disk full" in out.out
    assert world.double.writes() == [] and "gone" in world.double.connectors
    monkeypatch.undo()
    assert world.reconcile("--auto-approve").code == 0
    assert "gone" not in world.double.connectors and "gone" not in world.store().owned("default", "c")


def test_a_delete_connect_refused_keeps_its_claim(world: World) -> None:
    world.live("keep", {**SNK, "topics": "k"})
    world.git("keep", {**SNK, "topics": "k"})
    world.live("gone", {**SNK, "topics": "x"})
    world.double.faults.append(lambda r, d: error(400, "no") if r.method == "DELETE" else None)
    out = world.reconcile("--auto-approve")
    claim = world.store().owned("default", "c")["gone"]
    assert out.code == 1 and claim.how.startswith("releasing ")  # owned while it runs the config it had
    world.double.faults.clear()
    assert world.reconcile("--auto-approve").code == 0 and "gone" not in world.double.connectors


def test_a_delete_that_landed_while_its_answer_was_lost_is_released(world: World) -> None:
    world.live("keep", {**SNK, "topics": "k"})
    world.git("keep", {**SNK, "topics": "k"})
    world.live("gone", {**SNK, "topics": "x"})

    def lost(request: httpx.Request, double: ConnectDouble) -> Exception | None:
        if request.method == "DELETE":
            double.connectors.pop("gone", None)  # it landed; the answer did not
            return httpx.ReadTimeout("slow")
        return None

    world.double.faults.append(lost)
    out = world.reconcile("--auto-approve")
    assert out.code == 0, out.out + out.err
    assert "gone" not in world.store().owned("default", "c") and "gone" not in world.double.connectors
