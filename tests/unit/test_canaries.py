"""Canaries: a distinct secret planted in every place one can be, then every channel of every
command grepped for all of them.

Places: a key the live plugin types PASSWORD (an unusual name no pattern knows), a JDBC URL's
`password=` and userinfo, `basic.auth.user.info`, a JAAS config, a task trace, a secrets file
referenced by a placeholder, the cluster URL's userinfo (given by env var), the cluster's
basic-auth password (env var), the Slack webhook's path. Git holds no plaintext credential
(every command refuses such a file, secrets.plaintext): the URL's, basic auth's and JAAS's
canaries are in the live configs a reconcile replaces, and behind placeholders in git.
Channels: reconcile --dry-run text/json/markdown, an apply's results (json), `-v` logs, the
audit log, Slack, heal text/json, heal's metrics textfile.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hephaestus.cli import run
from tests.connect_double import ConnectDouble, serve
from tests.loopback import slack_receiver

REPO = Path(__file__).resolve().parents[2]
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CANARIES = {
    "plugin": "cnry-plugin-pw-11",
    "query": "cnry-url-query-22",
    "userinfo": "cnry-userinfo-33",
    "basic_info": "cnry-basic-auth-44",
    "jaas": "cnry-jaas-55",
    "file": "cnry-secretsfile-77",
    "cluster_url": "cnry-cluster-url-88",
    "basic_env": "cnry-basic-env-99",
    "webhook": "cnry-webhook-1010",
}


def leaked(text: str) -> list[str]:
    return [c for c in CANARIES.values() if c in text]


class World:
    def __init__(
        self, root: Path, double: ConnectDouble, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.root, self.double, self.capsys, self.monkeypatch = root, double, capsys, monkeypatch
        self.outputs: list[str] = []

    def cli(self, *args: str) -> int:
        code = run([*args, "--project", str(self.root / "hephaestus.yaml")])
        out = self.capsys.readouterr()
        self.outputs.append(out.out + out.err)
        return code


def old(**extra: str) -> dict[str, str]:
    return {"connector.class": SINK, "topics": "t", "db.creds.value": "old-plugin-value", **extra}


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    secrets = tmp_path / "connect-secrets.properties"
    secrets.write_text(
        f"# the Connect workers' FileConfigProvider file\nauth_password={CANARIES['file']}\n"
        f"b_url=jdbc:postgresql://u:{CANARIES['userinfo']}@db/auth\nbasic_info=u:{CANARIES['basic_info']}\n"
        f'jaas=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
        f'password="{CANARIES["jaas"]}";\n'
    )
    double = ConnectDouble()
    double.plugin_keys = {"db.creds.value": "PASSWORD", "topics": "LIST"}

    def placeholder(key: str) -> str:
        return "${file:" + str(secrets) + ":" + key + "}"

    new = {
        "connector.class": SINK,
        "topics": "t",
        "db.creds.value": CANARIES["plugin"],
        "connection.url": "jdbc:postgresql://db/auth?user=u",
        "basic.auth.user.info": placeholder("basic_info"),
        "sasl.jaas.config": placeholder("jaas"),
        "connection.password": placeholder("auth_password"),
    }
    (tmp_path / "connectors/c/sink").mkdir(parents=True)
    (tmp_path / "connectors/c/sink/a.json").write_text(json.dumps({"name": "a", "config": new}))
    # Connect keeps a placeholder as written: git and the live config agree on it.
    sibling = {**old(), "connection.url": placeholder("b_url")}
    (tmp_path / "connectors/c/sink/b.json").write_text(json.dumps({"name": "b", "config": sibling}))
    # What the reconcile replaces: a hand-made config holding the credentials themselves.
    live = {
        "connection.url": f"jdbc:postgresql://db/auth?user=u&password={CANARIES['query']}",
        "basic.auth.user.info": f"u:{CANARIES['basic_info']}",
        "sasl.jaas.config": f"org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="u" password="{CANARIES["jaas"]}";',
    }
    double.add("a", old(**live))
    broken = double.add("b", {**sibling})
    broken.task_states = ["FAILED"]
    double.on_start["b"] = ["FAILED"] * 50  # a restart does not help: heal tells Slack
    broken.trace = (
        f"org.apache.kafka.connect.errors.ConnectException: login failed\n"
        f"Caused by: org.postgresql.util.PSQLException: password {CANARIES['file']} and "
        f"{CANARIES['plugin']} rejected for jdbc:postgresql://u:{CANARIES['userinfo']}@db"
    )
    with serve(double) as url, slack_receiver() as slack:
        monkeypatch.setenv("HEPH_CONNECT_URL", url.replace("http://", f"http://admin:{CANARIES['cluster_url']}@"))
        monkeypatch.setenv("HEPH_CONNECT_PW", CANARIES["basic_env"])
        monkeypatch.setenv("HEPH_WEBHOOK", f"{slack.url}/{CANARIES['webhook']}")
        project = {
            "clusters": {
                "c": {
                    "url": "http://unused",
                    "url_env": "HEPH_CONNECT_URL",
                    "connectors": "connectors/c",
                    "username": "admin",
                    "password": {"env": "HEPH_CONNECT_PW"},
                    "timeout_s": 5,
                }
            },
            "policy": {"stability_window_s": 0, "ready_timeout_s": 10, "unassigned_grace_s": 0},
            "audit_log": "audit.jsonl",
            "slack": {"webhook_env": "HEPH_WEBHOOK"},
            "heal": {"restart_wait_s": 0, "state": {"file": "heal.json"}},
        }
        (tmp_path / "hephaestus.yaml").write_text(json.dumps(project))
        w = World(tmp_path, double, capsys, monkeypatch)
        w.slack = slack  # type: ignore[attr-defined]
        yield w


def test_no_canary_in_any_channel_of_reconcile_and_heal(world: World) -> None:
    for fmt in ("text", "json", "markdown"):
        assert world.cli("-v", "reconcile", "--auto-approve", "--dry-run", "--exit-code", "-o", fmt) == 2, (
            world.outputs[-1]
        )
    assert "sha256:" in world.outputs[0], "a secret's change still shows, by digest"
    world.cli("-v", "reconcile", "--auto-approve", "-o", "json")
    assert world.double.connectors["a"].config["db.creds.value"] == CANARIES["plugin"], "the apply happened"
    world.cli("-v", "heal", "-o", "json", "--metrics-textfile", str(world.root / "heal.prom"))
    world.cli("heal")
    slack: Any = world.slack  # type: ignore[attr-defined]
    assert slack.texts(), "Slack was told (the failed sink), so its channel is tested"
    channels = {
        **{f"output {i}": text for i, text in enumerate(world.outputs)},
        "audit": (world.root / "audit.jsonl").read_text(),
        "slack": json.dumps(slack.messages),
        "metrics": (world.root / "heal.prom").read_text(),
        "heal state": (world.root / "heal.json").read_text(),
    }
    found = {name: leaked(text) for name, text in channels.items() if leaked(text)}
    assert found == {}, found
    assert "login failed" in channels["slack"] + channels["output 4"], "the trace itself is still shown"


def test_no_dsn_password_in_accuracy_or_snapshot_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Databases that cannot be reached, named by DSNs that carry a password (given by env var,
    # as a Secret would be): the errors name the database, never the password.
    dsn_canary, ref_canary = "cnry-dsn-1212", "cnry-dbref-1313"
    monkeypatch.setenv("HEPH_BOB_DSN", f"host=127.0.0.1 port=9 dbname=bob password={dsn_canary}")
    monkeypatch.setenv("HEPH_AUTH_PW", ref_canary)
    shutil.copytree(REPO / "definitions", tmp_path / "definitions")
    project = {
        "clusters": {"c": {"url": "http://127.0.0.1:9", "connectors": "connectors/c"}},
        "databases": {
            "bob": {"dsn": "dbname=bob", "dsn_env": "HEPH_BOB_DSN"},
            "auth": {"dsn": "host=127.0.0.1 port=9 dbname=auth", "password": {"env": "HEPH_AUTH_PW"}},
            "lmsdwh": {"dsn": "host=127.0.0.1 port=9 dbname=lmsdwh"},
        },
    }
    (tmp_path / "hephaestus.yaml").write_text(json.dumps(project))
    outputs = []
    for args in (
        ("accuracy", "--definitions", str(tmp_path / "definitions")),
        ("accuracy", "--definitions", str(tmp_path / "definitions"), "-o", "json"),
        ("snapshot", "send", "--connector", "x", "public.users"),
    ):
        code = run(["-v", *args, "--project", str(tmp_path / "hephaestus.yaml")])
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
        assert code == 1, outputs[-1]
    assert not [o for o in outputs if dsn_canary in o or ref_canary in o], outputs
