"""Secrets Connect's answer cannot show (issue 43, items 2 and 4), over the strict Connect double:

- a key named like no secret that its plugin types PASSWORD (a MongoDB sink's `connection.uri`),
  answered masked by a managed platform (the double's `mask`: Confluent Cloud, Aiven, MSK
  Connect), whose value git changes: seen and written, from the run after its create on;
- a run that cannot read the secrets file keeps the last fingerprint, says which secret, exits
  1, and still writes the other connectors' steps: the rotation meanwhile is acted on.

Each run is a process of its own, as every real run is: the redactor, which learns a plugin's
PASSWORD keys, starts empty (in one process an earlier run's lesson would hide the fault).
Canary values prove no secret reaches an output, the audit log or the fingerprint record."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from hephaestus.state.prints import PrintsFile
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project, Result

MONGO = "com.mongodb.kafka.connect.MongoSinkConnector"
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
A, B, OLD, NEW = (f"canary-{w}-{uuid.uuid4().hex[:12]}" for w in ("a", "b", "old", "new"))


def fresh(project: Project, *args: str) -> Result:
    cmd = [sys.executable, "-m", "hephaestus", "reconcile", "--project", str(project.root / "hephaestus.yaml")]
    done = subprocess.run([*cmd, *args], cwd=project.root, capture_output=True, text=True, timeout=120, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def world(project: Project, served: tuple[ConnectDouble, str], files: dict[str, dict[str, str]]) -> Path:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.on_start.clear()
    double.plugin_keys, double.mask = {}, ""
    secrets = project.root / "secrets.properties"
    secrets.write_text(f"uri_a=mongodb://app:{A}@mongo-a:27017/x\nuri_b=mongodb://app:{B}@mongo-b:27017/x\n")
    folder = project.root / "connectors/c/sink"
    folder.mkdir(parents=True)
    for name, config in files.items():
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))
    (project.root / "hephaestus.yaml").write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n    secrets_file: {secrets}\n"
        "policy: {stability_window_s: 0}\naudit_log: audit.jsonl\n"
    )
    return secrets


def edit(project: Project, name: str, **config: str) -> None:
    path = project.root / f"connectors/c/sink/{name}.json"
    doc = json.loads(path.read_text())
    doc["config"].update(config)
    path.write_text(json.dumps(doc))


def steps_of(result: Result) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in json.loads(result.out)["clusters"][0]["steps"]}


def leaked(project: Project, outputs: list[Result], *canaries: str) -> list[str]:
    state = [p.read_text() for p in (project.root / ".hephaestus").glob("*.json")]
    texts = [r.out + r.err for r in outputs] + state + [(project.root / "audit.jsonl").read_text()]
    return [c for c in canaries for t in texts if c in t]


def mongo_world(
    project: Project, served: tuple[ConnectDouble, str], uri: str = "${{file:{secrets}:uri_a}}"
) -> tuple[ConnectDouble, Path]:
    secrets = project.root / "secrets.properties"
    config = {"connector.class": MONGO, "topics": "t", "connection.uri": uri.format(secrets=secrets)}
    world(project, served, {"m0": config})
    double = served[0]
    double.plugin_keys = {"connection.uri": "PASSWORD", "topics": "LIST"}  # MongoSinkConfig types it so
    double.mask = "****"
    return double, secrets


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("${{file:{secrets}:uri_a}}", "${{file:{secrets}:uri_b}}"),  # before: restarted on the old one
        ("mongodb://mongo-a:27017/x", "mongodb://mongo-b:27017/x"),  # before: "in sync" on every run
    ],
    ids=["placeholder", "literal"],
)
def test_a_change_behind_the_mask_of_a_key_named_like_no_secret_is_written(
    project: Project, served: tuple[ConnectDouble, str], before: str, after: str
) -> None:
    double, secrets = mongo_world(project, served, before)
    outputs = [fresh(project, "--auto-approve")]
    assert outputs[-1].code == 0 and double.connectors["m0"].config["connection.uri"] == before.format(secrets=secrets)

    edit(project, "m0", **{"connection.uri": after.format(secrets=secrets)})  # another database
    outputs.append(fresh(project, "--dry-run", "-o", "json"))
    step = steps_of(outputs[-1])["m0"]
    assert step["action"] == "update" and [c["key"] for c in step["changes"]] == ["connection.uri"]
    outputs.append(fresh(project, "--auto-approve"))
    assert outputs[-1].code == 0 and double.connectors["m0"].config["connection.uri"] == after.format(secrets=secrets)
    outputs.append(fresh(project, "--dry-run", "--exit-code"))
    assert outputs[-1].code == 0  # converged: the mask is git's new value now
    assert leaked(project, outputs, A, B) == []


def test_a_create_records_the_keys_its_plugin_types(project: Project, served: tuple[ConnectDouble, str]) -> None:
    mongo_world(project, served)
    assert fresh(project, "--auto-approve").code == 0
    out = fresh(project, "--dry-run", "--exit-code")
    assert out.code == 0 and "masked" not in out.out  # judged from the first write on, not the second


def test_a_mask_first_seen_is_recorded_by_the_next_apply_as_it_says(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double, secrets = mongo_world(project, served)
    assert fresh(project, "--auto-approve").code == 0
    (project.root / ".hephaestus/prints.json").unlink()  # state from before masks were printed
    said = fresh(project, "--auto-approve")
    assert said.code == 0 and "m0: Connect answers connection.uri masked and no apply recorded it" in said.out
    assert "git:connection.uri" in (project.root / ".hephaestus/prints.json").read_text()
    edit(project, "m0", **{"connection.uri": f"${{file:{secrets}:uri_b}}"})
    assert steps_of(fresh(project, "--dry-run", "-o", "json"))["m0"]["action"] == "update"


def jdbc_world(project: Project, served: tuple[ConnectDouble, str]) -> tuple[ConnectDouble, Path]:
    secrets = project.root / "secrets.properties"
    pw = {"connector.class": SINK, "topics": "t", "connection.password": f"${{file:{secrets}:sink_pw}}"}
    world(project, served, {"s0": pw, "s1": {"connector.class": SINK, "topics": "u"}})
    secrets.write_text(f"sink_pw={OLD}\n")
    return served[0], secrets


def recorded(project: Project) -> dict[str, str]:
    found: dict[str, str] = json.loads((project.root / ".hephaestus/prints.json").read_text())["default"]["c"]["s0"]
    return found


def test_a_rotation_across_a_run_that_could_not_read_the_file_is_acted_on(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    double, secrets = jdbc_world(project, served)
    assert fresh(project, "--auto-approve").code == 0
    before = recorded(project)

    secrets.unlink()  # the mount is gone for one run; an unrelated change waits in git
    edit(project, "s1", topics="u,v")
    double.log.clear()
    bad = fresh(project, "--auto-approve")
    assert bad.code == 1
    why = f"cannot read '{secrets}': No such file or directory"
    assert f"warning: s0: the secret in connection.password could not be read here ({why})" in bad.out
    assert "error: secrets not read, their last fingerprints kept: s0 connection.password" in bad.out
    assert double.writes() == [("PUT", "/connectors/s1/config")]  # the other connector's step ran
    assert recorded(project) == before

    secrets.write_text(f"sink_pw={NEW}\n")  # back, and rotated meanwhile
    double.log.clear()
    plan = fresh(project, "--dry-run", "-o", "json")
    assert steps_of(plan)["s0"]["reason"] == "secret rotated (connection.password)"
    done = fresh(project, "--auto-approve")
    assert done.code == 0 and double.writes() == [("POST", "/connectors/s0/restart")]
    assert leaked(project, [bad, plan, done], OLD, NEW) == []


def test_a_dry_run_that_cannot_read_says_so_and_fails_nothing(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    _, secrets = jdbc_world(project, served)
    assert fresh(project, "--auto-approve").code == 0
    secrets.unlink()
    out = fresh(project, "--dry-run", "--exit-code")
    assert out.code == 0 and "s0: the secret in connection.password could not be read here" in out.out
    assert "error:" not in out.out


def test_a_key_the_file_lacks_keeps_the_print_and_is_a_warning(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    _, secrets = jdbc_world(project, served)
    assert fresh(project, "--auto-approve").code == 0
    before = recorded(project)
    secrets.write_text("other=1\n")  # written half by whatever rotates it
    out = fresh(project, "--auto-approve")
    assert out.code == 0 and "(secrets.properties has no key sink_pw)" in out.out
    assert recorded(project) == before


WRITER = """
import sys
from pathlib import Path
from hephaestus.state.prints import PrintsFile
record = PrintsFile(Path(sys.argv[1]))
for i in range(150):
    record.write("p", sys.argv[2], {f"s{i}": {"resolved:k": "f"}}, "00")
"""


def test_runs_of_two_clusters_in_two_processes_lose_no_record(tmp_path: Path) -> None:
    """Each cluster's run holds its own lock, and both write the project's one record file."""
    path = tmp_path / "prints.json"
    runs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), c], stderr=subprocess.PIPE) for c in "ab"]
    assert [r.wait(120) for r in runs] == [0, 0], [r.stderr.read() for r in runs if r.stderr]
    assert [len(PrintsFile(path).read("p", c)[1]) for c in "ab"] == [150, 150]


def test_an_unread_secret_and_a_failed_apply_are_both_the_runs_error(
    project: Project, served: tuple[ConnectDouble, str]
) -> None:
    _, secrets = jdbc_world(project, served)
    assert fresh(project, "--auto-approve").code == 0
    secrets.unlink()
    audit = project.root / "audit.jsonl"
    audit.unlink()
    audit.mkdir()  # the audit log cannot be written: nothing is applied
    edit(project, "s1", topics="u,v")
    out = project.cli("reconcile", "--project", str(project.root / "hephaestus.yaml"), "--auto-approve")
    assert out.code == 1
    assert (
        "  error: secrets not read, their last fingerprints kept: s0 connection.password; "
        f"nothing applied: audit log {audit} cannot be written: Is a directory\n"
    ) in out.out
