"""`compat: reference`: the reference's exact configs (tests/golden/reference/README.md says
where each key comes from), so a fleet the reference built reconciles with zero writes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.connect_double import ConnectDouble
from tests.unit.conftest import REPO, Project

GOLDEN = REPO / "tests/golden/reference"
SOURCE = "platforms/source/local_manabie_bob_source_connector.json"
SINK = "platforms/sink/local_manabie_bob_to_auth_users_sink_connector.json"


@pytest.fixture
def reference(project: Project) -> Project:
    shutil.rmtree(project.definitions)
    project.definitions.mkdir()
    shutil.copy(GOLDEN / "definition.yaml", project.definitions / "bob.yaml")
    return project


def test_compat_generates_the_reference_configs_byte_for_byte(reference: Project) -> None:
    assert reference.generate().code == 0
    files = reference.files()
    assert files == {SOURCE: (GOLDEN / "source.json").read_bytes(), SINK: (GOLDEN / "sink.json").read_bytes()}


@pytest.mark.parametrize(
    ("extra", "path", "key", "value"),
    [
        (
            "sink_defaults: {dlq: true}\n",
            SINK,
            "errors.deadletterqueue.topic.name",
            "dlq.local_manabie_bob_to_auth_users_sink_connector",
        ),
        ("converter: {format: json}\n", SOURCE, "value.converter", "org.apache.kafka.connect.json.JsonConverter"),
        ("source: {snapshot_mode: initial}\n", SOURCE, "snapshot.mode", "initial"),
    ],
)
def test_what_the_file_says_wins_over_compat(reference: Project, extra: str, path: str, key: str, value: str) -> None:
    text = (GOLDEN / "definition.yaml").read_text()
    if extra.startswith("converter"):
        text = text.replace('converter: {schema_registry_url: "http://cp-schema-registry:8081"}\n', "")
    (reference.definitions / "bob.yaml").write_text(text + extra)
    assert reference.generate().code == 0
    assert json.loads(reference.files()[path])["config"][key] == value


def test_compat_without_a_registry_is_an_error_naming_the_field(reference: Project) -> None:
    text = (
        (GOLDEN / "definition.yaml")
        .read_text()
        .replace('converter: {schema_registry_url: "http://cp-schema-registry:8081"}\n', "")
    )
    (reference.definitions / "bob.yaml").write_text(text)
    out = reference.generate()
    assert out.code == 1 and "at converter.schema_registry_url: avro needs a schema registry: its URL here" in out.err
    assert reference.files() == {}


def test_a_fleet_the_reference_built_reconciles_with_zero_writes(
    reference: Project, served: tuple[ConnectDouble, str]
) -> None:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    for golden, kind in (("source.json", "source"), ("sink.json", "sink")):
        doc = json.loads((GOLDEN / golden).read_text())
        double.add(doc["name"], doc["config"], type=kind)  # as the reference's upsert job created it
    (reference.root / "hephaestus.yaml").write_text(
        f"clusters:\n  platforms:\n    url: {url}\n    connectors: connectors/platforms\n"
        "    select: ['local_manabie_*']\n"
    )
    assert reference.generate().code == 0
    dry = reference.cli(
        "reconcile",
        "--auto-approve",
        "--project",
        str(reference.root / "hephaestus.yaml"),
        "--dry-run",
        "--exit-code",
        "-o",
        "json",
    )
    assert dry.code == 0, dry.out + dry.err
    (cluster,) = json.loads(dry.out)["clusters"]
    assert cluster["counts"]["unchanged"] == 2 and cluster["writes"] == 0
    applied = reference.cli("reconcile", "--auto-approve", "--project", str(reference.root / "hephaestus.yaml"))
    assert applied.code == 0, applied.out + applied.err
    assert double.writes() == [], "adopting the reference's fleet restarts nothing"
