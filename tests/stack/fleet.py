"""A hephaestus project around fresh databases, for reconciler stack tests.

The shipped example definitions are rewritten to point at per-test databases (`bob_t1a2b…`);
table catalogs come from `hephaestus catalog dump` against those live databases, so the
whole user path — dump, generate, reconcile — runs for real.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from hephaestus.cli import run
from tests.stack.support import REPO, ConnectClient, Stack

# Not the demo's env/org: a connector a crashed test leaves behind never falls under the
# shipped hephaestus.yaml's `local_manabie_*` selection.
ENV, ORG = "it", "hephaestus"


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # hephaestus refuses YAML anchors and aliases


def dump_yaml(data: Any, sort_keys: bool = True) -> str:
    return yaml.dump(data, Dumper=_NoAliases, sort_keys=sort_keys)


EXAMPLES = {
    "bob": ("bob", "auth", "eureka", "fatima"),
    "lmsdwh": ("lmsdwh", "tokyo_jprep_dwh"),
    "kec": ("invoicemgmt", "kec_dwh"),
}


@dataclass
class Fleet:
    root: Path
    stack: Stack
    dbs: dict[str, str]  # example database -> fresh database
    capsys: pytest.CaptureFixture[str]
    clients: dict[str, ConnectClient] = field(default_factory=dict)  # cluster -> cleanup tracker

    def definition(self, example: str) -> dict[str, Any]:
        return yaml.safe_load((self.root / "definitions" / f"{example}.yaml").read_text())  # type: ignore[no-any-return]

    def write_definition(self, example: str, data: dict[str, Any]) -> None:
        (self.root / "definitions" / f"{example}.yaml").write_text(dump_yaml(data, sort_keys=False))

    def only_users_to_auth(self, dlq: bool = True) -> None:
        """Cut bob's definition down to one pipeline, users -> auth, and regenerate. Without a
        dead-letter queue (`dlq=False`) a bad record fails the sink's task instead of parking."""
        definition = self.definition("bob")
        definition["pipelines"] = [definition["pipelines"][0]]
        definition["pipelines"][0]["sinks"] = definition["pipelines"][0]["sinks"][:1]
        if not dlq:
            definition["pipelines"][0]["sinks"][0]["dlq"] = False
        self.write_definition("bob", definition)
        self.generate()

    def probe_off(self, example: str = "bob") -> None:
        """No freshness probe in this definition's connectors (regenerated): for a test about
        one data topic, publication or exact plan, which the probe's own would blur."""
        definition = self.definition(example)
        definition["probe"] = {"enabled": False}
        self.write_definition(example, definition)
        self.generate()

    def poisoned(self, on: bool) -> None:
        """bob's sink with a transform that throws on the row named 'poison' (on), or none
        (off); regenerated. Connect's DLQ takes transform failures (the sink's own write
        failures fail its task instead: Debezium JDBC sink 3.6)."""
        definition = self.definition("bob")
        definition["pipelines"][0]["sinks"][0]["options"] = (
            {
                "transforms": "poison",
                "transforms.poison.type": "io.debezium.transforms.Filter",
                "transforms.poison.language": "jsr223.groovy",
                "transforms.poison.condition": "value?.after?.name == 'poison' ? (1 / 0 > 0) : true",
                # The freshness probe has no `name`: the probe's predicate keeps it from the script.
                "transforms.poison.predicate": "hephaestus_is_probe",
                "transforms.poison.negate": "true",
            }
            if on
            else {}
        )
        self.write_definition("bob", definition)
        self.generate()

    def edit_project(self, **changes: Any) -> None:
        """Replace top-level sections of the project file (policy, lock, …)."""
        path = self.root / "hephaestus.yaml"
        doc = yaml.safe_load(path.read_text())
        doc.update(changes)
        path.write_text(dump_yaml(doc))

    def cli(self, *args: str) -> tuple[int, str]:
        code = run(list(args))
        out = self.capsys.readouterr()
        return code, out.out + out.err

    def generate(self) -> None:
        code, out = self.cli(
            "generate",
            "--definitions",
            str(self.root / "definitions"),
            "--catalogs",
            str(self.root / "catalogs"),
            "--out",
            str(self.root / "connectors"),
            "--project",  # an Avro definition naming no registry takes its cluster's from it
            str(self.root / "hephaestus.yaml"),
        )
        assert code == 0, out
        for cluster, client in self.clients.items():  # whatever a run creates is deleted at teardown
            for name in self.connector_names(cluster):
                client.track(name)

    def slot(self, example: str = "bob") -> str:
        return f"{ENV}_{ORG}_{self.dbs[example]}"

    def topic(self, table: str, example: str = "bob") -> str:
        return f"{ENV}.{ORG}.{self.dbs[example]}.public.{table}"

    def reconcile(self, *args: str) -> tuple[int, dict[str, Any]]:
        """Run `hephaestus reconcile -o json`; track what it created for teardown."""
        code, out = self.cli(
            "reconcile", "--auto-approve", "--project", str(self.root / "hephaestus.yaml"), "-o", "json", *args
        )
        start = out.index("{")
        report: dict[str, Any] = json.loads(out[start : out.rindex("}") + 1])
        for cluster in report["clusters"]:
            for step in cluster["steps"]:
                if step["action"] == "create":
                    self.clients[cluster["cluster"]].track(step["name"])
        return code, report

    def accuracy(self, *args: str) -> tuple[int, dict[str, Any]]:
        """Run `hephaestus accuracy -o json` on the fleet's definitions: exit code and report."""
        code, out = self.cli(
            "accuracy",
            "--project",
            str(self.root / "hephaestus.yaml"),
            "--definitions",
            str(self.root / "definitions"),
            "-o",
            "json",
            *args,
        )
        assert "{" in out, out
        report: dict[str, Any] = json.loads(out[out.index("{") : out.rindex("}") + 1])
        return code, report

    def connector_names(self, cluster: str, kind: str = "*") -> list[str]:
        files = (self.root / "connectors" / cluster).glob(f"{kind}/*.json")
        return sorted(json.loads(p.read_text())["name"] for p in files)

    def name(self, cluster: str, *parts: str) -> str:
        """The one generated connector whose name contains every part."""
        found = [n for n in self.connector_names(cluster) if all(p in n for p in parts)]
        assert len(found) == 1, (parts, found)
        return found[0]


def make_fleet(
    root: Path,
    stack: Stack,
    fresh_db: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    examples: Iterable[str],
    clients: dict[str, ConnectClient],
) -> Fleet:
    """Fresh databases for `examples`, their catalogs dumped, definitions rewritten, generated."""
    dbs = {db: fresh_db(db) for ex in examples for db in EXAMPLES[ex]}
    fleet = Fleet(root, stack, dbs, capsys, clients)
    (root / "definitions").mkdir(parents=True)
    for ex in examples:
        fleet.write_definition(ex, _rewrite(yaml.safe_load((REPO / "definitions" / f"{ex}.yaml").read_text()), dbs))
    args = [a for db in dbs.values() for a in ("--database", db)]
    code, out = fleet.cli("catalog", "dump", "--dsn", stack.dsn("postgres"), "--out", str(root / "catalogs"), *args)
    assert code == 0, out
    _write_project(root, stack, clients, dbs)
    fleet.generate()
    return fleet


def _rewrite(definition: dict[str, Any], dbs: dict[str, str]) -> dict[str, Any]:
    definition["database"] = dbs[definition["database"]]
    definition["envs"], definition["orgs"] = [ENV], [ORG]
    for pipeline in definition["pipelines"]:
        for sink in pipeline["sinks"]:
            sink["database"] = dbs[sink["database"]]
        if "source_topic" in pipeline:  # a topic of this test's own: the stack's broker is shared
            pipeline["source_topic"] = pipeline["source_topic"].replace(
                "{org}.", "{org}." + definition["database"] + "."
            )
    return definition


def _write_project(root: Path, stack: Stack, clients: dict[str, ConnectClient], dbs: dict[str, str]) -> None:
    # Only this test's connectors: the stack is shared, and a reconcile deletes what it manages.
    select = sorted({f"*{db}*" for db in dbs.values()} | {f"*{db.upper()}*" for db in dbs.values()})
    # A list of its own per cluster: a shared one would be dumped as a YAML alias (refused).
    clusters = {
        name: {
            "url": client.url,
            "connectors": f"connectors/{name}",
            "kafka_bootstrap": stack.bootstrap,
            "select": list(select),
        }
        for name, client in clients.items()
    }
    # The stack's role has a password; libpq reads it from PGPASSWORD (never the project file).
    databases = {
        db: {"dsn": f"host={stack.pg_host} port={stack.pg_port} user={stack.pg_user} dbname={db}"}
        for db in dbs.values()
    }
    project = {
        "clusters": clusters,
        "databases": databases,
        "audit_log": "audit.jsonl",
        "policy": {"ready_timeout_s": 120, "stability_window_s": 5},
        "slack": {"webhook_env": "HEPHAESTUS_SLACK_WEBHOOK"},
    }
    (root / "hephaestus.yaml").write_text(dump_yaml(project))
