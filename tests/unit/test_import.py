"""`hephaestus import` end to end over the strict Connect double: the files it writes are the
generator's, the next reconcile plans zero writes, a plaintext secret never reaches git."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hephaestus.state.ownership import OwnershipFile, claims_of
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CANARY = "canary-pw-7f3a19"


@pytest.fixture
def fleet(project: Project, served: tuple[ConnectDouble, str]) -> tuple[Project, ConnectDouble]:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    (project.root / "hephaestus.yaml").write_text(
        f"clusters:\n  platforms:\n    url: {url}\n    connectors: connectors/platforms\n"
        "    select: ['local_*', 'hand_*']\n"
    )
    return project, double


def test_a_generated_fleet_made_by_hand_imports_byte_for_byte_and_then_plans_nothing(
    fleet: tuple[Project, ConnectDouble],
) -> None:
    project, double = fleet
    assert project.generate().code == 0
    generated = {rel: raw for rel, raw in project.files().items() if rel.startswith("platforms/") and "/local_" in rel}
    assert {rel.split("/")[1] for rel in generated} == {"source", "sink"}
    for rel, raw in generated.items():  # the fleet as someone made it over REST, then git lost
        doc = json.loads(raw)
        double.add(doc["name"], doc["config"], type=rel.split("/")[1])
        (project.connectors / rel).unlink()
    double.add("MY_KSQL_SINK", {"connector.class": SINK, "topics": "k"})  # ksqlDB's: never imported
    double.add("stag_x", {"connector.class": SINK, "topics": "s"})  # outside select
    double.log.clear()

    dry = project.cli("import", "--project", str(project.root / "hephaestus.yaml"), "--dry-run")
    assert dry.code == 0, dry.err
    sink = "local_manabie_bob_to_auth_users_sink_connector"
    assert f"  would write {project.connectors}/platforms/sink/{sink}.json: {sink}\n" in dry.out
    assert len(dry.out.splitlines()) == len(generated) + 2  # the cluster, a line per file, the count: no JSON
    shown = project.cli("import", "--project", str(project.root / "hephaestus.yaml"), "--dry-run", "--show-config")
    assert shown.code == 0, shown.err
    assert f'{sink}.json: {sink}\n    {{\n      "config": {{\n' in shown.out and '"connector.class"' in shown.out
    assert not any((project.connectors / rel).exists() for rel in generated)
    assert not (project.root / ".hephaestus/ownership.json").exists() and double.writes() == []

    done = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert done.code == 0, done.err
    assert f"{len(generated)} now owned, {len(generated)} files" in done.out
    assert {rel: (project.connectors / rel).read_bytes() for rel in generated} == generated
    assert not (project.connectors / "platforms/sink/MY_KSQL_SINK.json").exists()
    assert not (project.connectors / "platforms/sink/stag_x.json").exists()
    owned = OwnershipFile(project.root / ".hephaestus/ownership.json").owned("default", "platforms")
    assert sorted(owned) == sorted(json.loads(raw)["name"] for raw in generated.values())
    assert {c.how for c in owned.values()} == {"imported"} and double.writes() == []

    check = project.cli(
        "reconcile",
        "--auto-approve",
        "--project",
        str(project.root / "hephaestus.yaml"),
        "--dry-run",
        "--exit-code",
        "--drift-only",
    )
    assert check.code == 0, check.out + check.err
    assert f"0 to create, 0 to update, 0 to delete, 0 protected, 0 unmanaged, {len(generated)} unchanged" in check.out
    again = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert again.code == 0 and "0 now owned, 0 files" in again.out and double.writes() == []


def test_a_plaintext_secret_is_refused_naming_connector_and_key(fleet: tuple[Project, ConnectDouble]) -> None:
    project, double = fleet
    double.add("hand_a", {"connector.class": SINK, "topics": "a", "connection.password": CANARY})
    double.add(
        "hand_b",
        {"connector.class": SINK, "topics": "b", "connection.url": f"jdbc:postgresql://db/x?user=u&password={CANARY}"},
    )
    double.add("hand_c", {"connector.class": SINK, "topics": "c", "connection.password": "${file:/s:pw}"})
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert out.code == 1
    assert "connector 'hand_a' on cluster platforms at connection.password: holds a plaintext secret" in out.err
    assert "connector 'hand_b' on cluster platforms at connection.url: holds a plaintext secret" in out.err
    assert "hand_c" not in out.err and CANARY not in out.out + out.err
    assert not (project.connectors / "platforms/sink").exists() or not list(
        (project.connectors / "platforms/sink").iterdir()
    )
    assert not (project.root / ".hephaestus/ownership.json").exists()

    placeholder = "${file:/opt/secrets.properties:pw}"
    ok = project.cli(
        "import",
        "--project",
        str(project.root / "hephaestus.yaml"),
        "--select",
        "hand_[ac]",
        "--secret",
        f"connection.password={placeholder}",
    )
    assert ok.code == 0, ok.err
    written = json.loads((project.connectors / "platforms/sink/hand_a.json").read_text())
    assert written == {
        "name": "hand_a",
        "config": {"connector.class": SINK, "topics": "a", "connection.password": placeholder},
    }
    assert not (project.connectors / "platforms/sink/hand_b.json").exists()
    kept = json.loads((project.connectors / "platforms/sink/hand_c.json").read_text())
    assert kept["config"]["connection.password"] == "${file:/s:pw}"  # a live placeholder is kept as it is


def test_names_that_cannot_be_files_are_refused(fleet: tuple[Project, ConnectDouble]) -> None:
    project, double = fleet
    for name in ("hand_a/b", "hand_\x07"):
        double.add(name, {"connector.class": SINK, "topics": "t"})
    double.add("hand_ok", {"connector.class": SINK, "topics": "t"})
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert out.code == 1 and out.err.count("is not a safe path segment") == 2
    assert "connector 'hand_a/b' on cluster platforms at name: connector name 'hand_a/b' is not" in out.err
    assert "connector 'hand_\\x07' on cluster platforms at name" in out.err and "\x07" not in out.err
    assert not (project.connectors / "platforms/sink/hand_ok.json").exists()


def test_only_sources_and_sinks_are_imported(fleet: tuple[Project, ConnectDouble]) -> None:
    project, double = fleet
    double.add("hand_odd", {"connector.class": SINK, "topics": "t"}, type="unknown")
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert out.code == 1 and out.err == (
        "error: connector 'hand_odd' on cluster platforms: Connect reports type "
        "'unknown': only source and sink connectors are imported\n"
    )


def test_a_key_the_plugin_types_password_is_a_secret_whatever_its_name(fleet: tuple[Project, ConnectDouble]) -> None:
    project, double = fleet
    key = f"conn.k{uuid.uuid4().hex[:8]}"  # the redactor is process-wide: a key no other test taught it
    double.plugin_keys = {key: "PASSWORD", "topics": "LIST"}
    double.add("hand_p", {"connector.class": SINK, "topics": "t", key: "opaque-canary-42"})
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    double.plugin_keys = {}
    assert out.code == 1 and f"connector 'hand_p' on cluster platforms at {key}: holds a plaintext secret" in out.err
    assert "opaque-canary-42" not in out.out + out.err


def test_import_takes_the_cluster_lock_and_a_dry_run_does_not(fleet: tuple[Project, ConnectDouble]) -> None:
    from hephaestus.state.lock import FileLock, Holder, resource_key

    project, double = fleet
    double.add("hand_a", {"connector.class": SINK, "topics": "a"})
    url = json.loads(json.dumps(__import__("yaml").safe_load((project.root / "hephaestus.yaml").read_text())))
    key = resource_key("connect", url["clusters"]["platforms"]["url"])
    with FileLock(project.root / ".hephaestus/locks", key).held(Holder("other-run", "heal").now(), 0):
        busy = project.cli("import", "--project", str(project.root / "hephaestus.yaml"), "--lock-timeout", "0.1")
        dry = project.cli(
            "import", "--project", str(project.root / "hephaestus.yaml"), "--dry-run", "--lock-timeout", "0.1"
        )
    assert busy.code == 1 and "is locked by run other-run (heal)" in busy.err
    assert dry.code == 0 and "would write" in dry.out
    done = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert done.code == 0 and "cluster platforms" in done.out
    (lock,) = (project.root / ".hephaestus/locks").iterdir()
    holder = json.loads(lock.read_text())
    owned = OwnershipFile(project.root / ".hephaestus/ownership.json").owned("default", "platforms")
    assert holder["command"] == "import" and holder["run_id"] == owned["hand_a"].run_id


def test_a_file_that_cannot_be_written_is_one_error(fleet: tuple[Project, ConnectDouble]) -> None:
    project, double = fleet
    double.add("hand_a", {"connector.class": SINK, "topics": "a"})
    (project.connectors / "platforms").mkdir(parents=True)
    (project.connectors / "platforms/sink").write_text("a file where the folder should be")
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert (
        out.code == 1
        and out.err == f"error: cannot write {project.connectors}/platforms/sink/hand_a.json: File exists\n"
    )


def test_in_git_connectors_are_claimed_not_rewritten_and_owned_ones_absent_from_git_are_written(
    fleet: tuple[Project, ConnectDouble],
) -> None:
    """Issue 29: an owned connector git lacks was skipped, and the next reconcile deleted it."""
    project, double = fleet
    folder = project.connectors / "platforms/sink"
    folder.mkdir(parents=True)
    mine = {"name": "hand_git", "config": {"connector.class": SINK, "topics": "other"}}
    (folder / "hand_git.json").write_text(json.dumps(mine))
    double.add("hand_git", {"connector.class": SINK, "topics": "live"})
    double.add("hand_owned", {"connector.class": SINK, "topics": "o"})
    double.add("hand_custom", {"connector.class": SINK, "topics": "c"})
    (project.connectors / "platforms/custom").mkdir(parents=True)
    (project.connectors / "platforms/custom/hand_custom.json").write_text(
        json.dumps({"name": "hand_custom", "config": {"connector.class": SINK, "topics": "c"}})
    )
    double.add("hand_z", {"connector.class": SINK, "topics": "z"})
    OwnershipFile(project.root / ".hephaestus/ownership.json").claim(
        "default", "platforms", claims_of(["hand_owned"], "*", "created", "r0")
    )
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert out.code == 0, out.err
    assert "in git: hand_git" in out.out and "in git: hand_custom" in out.out
    assert f"write {folder / 'hand_owned.json'} (owned, absent from git): hand_owned" in out.out
    assert (folder / "hand_z.json").exists() and not (folder / "hand_custom.json").exists()
    assert json.loads((folder / "hand_owned.json").read_text())["config"]["topics"] == "o"
    assert json.loads((folder / "hand_git.json").read_text()) == mine
    owned = OwnershipFile(project.root / ".hephaestus/ownership.json").owned("default", "platforms")
    assert (owned["hand_git"].how, owned["hand_owned"].how) == ("imported", "created")


def test_a_bad_secret_option_is_a_usage_error(fleet: tuple[Project, ConnectDouble]) -> None:
    project, _ = fleet
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"), "--secret", "nokey")
    assert out.code == 1 and "expected KEY=PLACEHOLDER" in out.err
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"), "--secret", "k=plain")
    assert out.code == 1 and "is not a ${provider:path:key} placeholder" in out.err


def test_a_paused_or_stopped_connector_keeps_its_state_in_git(fleet: tuple[Project, ConnectDouble]) -> None:
    project, double = fleet
    for name, state in (("hand_paused", "PAUSED"), ("hand_stopped", "STOPPED"), ("hand_running", "RUNNING")):
        double.add(name, {"connector.class": SINK, "topics": name}, state=state)
    yaml = str(project.root / "hephaestus.yaml")
    assert project.cli("import", "--project", yaml).code == 0
    written = {n: json.loads((project.connectors / f"platforms/sink/{n}.json").read_text()) for n in double.connectors}
    assert [written[n].get("state") for n in ("hand_paused", "hand_stopped", "hand_running")] == [
        "paused",
        "stopped",
        None,  # absent: running
    ]
    check = project.cli("reconcile", "--project", yaml, "--dry-run", "--exit-code")
    assert check.code == 0 and "0 to create, 0 to update, 0 to delete" in check.out, check.out


@pytest.mark.parametrize("mask", ["", "****"])
def test_after_import_secret_the_plaintext_still_in_connect_is_one_update_then_none(
    fleet: tuple[Project, ConnectDouble], tmp_path: Path, mask: str
) -> None:
    """What the quickstart's step 5 says: git holds the placeholder, Apache Kafka's Connect the
    plaintext it was given, so the dry run shows that update and exits 2 (applying it takes the
    plaintext out of Connect), then 0. A platform that masks PASSWORD values cannot show it."""
    project, double = fleet
    double.mask = mask
    double.plugin_keys = {"connection.password": "PASSWORD"}
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"pw={CANARY}\n")  # the worker's file: the same value, behind the placeholder
    placeholder = f"${{file:{secrets}:pw}}"
    double.add("hand_a", {"connector.class": SINK, "topics": "a", "connection.password": CANARY})
    yaml = str(project.root / "hephaestus.yaml")
    assert project.cli("import", "--project", yaml, "--secret", f"connection.password={placeholder}").code == 0
    dry = project.cli("reconcile", "--project", yaml, "--dry-run", "--exit-code")
    if mask:
        assert dry.code == 0, dry.out + dry.err
        assert "Connect answers connection.password masked and no apply recorded it" in dry.out
        return
    assert dry.code == 2, dry.out + dry.err
    assert "0 to create, 1 to update, 0 to delete" in dry.out
    assert "connection.password changed (sha256:" in dry.out and f"-> {placeholder})" in dry.out
    assert CANARY not in dry.out + dry.err
    assert project.cli("reconcile", "--project", yaml, "--auto-approve").code == 0
    assert double.connectors["hand_a"].config["connection.password"] == placeholder
    assert project.cli("reconcile", "--project", yaml, "--dry-run", "--exit-code").code == 0
