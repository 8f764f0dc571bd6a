"""One secret detector (secrets.plaintext) for `validate`, its pre-commit hook and `import`: the
same config is refused by each, or by none; and the redactor never masks the tool's own text
(help, hints, placeholders), which it once garbled (`connection.password=****ile:/opt/…`)."""

from __future__ import annotations

import json

import click
import pytest

from hephaestus.cli import cli
from hephaestus.commands import subcommands
from hephaestus.secrets import REDACTOR, plaintext
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CANARY = "canary-detector-5e1d"

CASES = [  # (key, value, a plaintext credential?)
    ("connection.password", CANARY, True),
    ("database.password", CANARY, True),
    ("sasl.jaas.config", f'PlainLoginModule required password="{CANARY}";', True),
    ("key.converter.basic.auth.user.info", f"user:{CANARY}", True),
    ("aws.secret.access.key", CANARY, True),
    ("connection.url", f"jdbc:postgresql://db:5432/x?user=u&password={CANARY}", True),
    ("connection.url", f"postgresql://u:{CANARY}@db/x", True),
    ("transforms.x.header", f"Bearer {CANARY}abcdefgh", True),
    ("connection.password", "${file:/opt/secrets.properties:pw}", False),
    ("connection.password", "", False),
    ("connection.url", "jdbc:postgresql://db:5432/x?user=u&password=${file:/s:pw}", False),
    ("key.converter.basic.auth.credentials.source", "USER_INFO", False),
    ("consumer.override.sasl.mechanism", "PLAIN", False),
    ("ssl.truststore.location", "/etc/tls/trust.jks", False),
    ("topics", "a,b", False),
]


@pytest.mark.parametrize("key, value, refused", CASES)
def test_the_detector_judges_key_and_value(key: str, value: str, refused: bool) -> None:
    assert bool(plaintext(key, value)) is refused
    assert plaintext("opaque.k", CANARY, frozenset({"opaque.k"})) == "opaque.k is typed PASSWORD by its plugin"


@pytest.fixture
def world(project: Project, served: tuple[ConnectDouble, str]) -> tuple[Project, ConnectDouble]:
    double, url = served
    double.connectors.clear()
    double.plugin_keys = {}
    (project.root / "hephaestus.yaml").write_text(
        f"clusters:\n  p:\n    url: {url}\n    connectors: connectors/p\n    select: ['hand_*']\n"
    )
    return project, double


def test_validate_and_import_refuse_the_same_configs(world: tuple[Project, ConnectDouble]) -> None:
    project, double = world
    yaml = str(project.root / "hephaestus.yaml")
    folder = project.connectors / "p/sink"
    for i, (key, value, refused) in enumerate(CASES):
        config = {"connector.class": SINK, "topics": "t", key: value}
        double.connectors.clear()
        double.add(f"hand_{i}", config)
        imported = project.cli("import", "--project", yaml, "--dry-run")
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
        (folder / f"hand_{i}.json").write_text(json.dumps({"name": f"hand_{i}", "config": config}))
        checked = project.cli("validate", "--project", yaml, "--definitions", str(project.root / "none"))
        assert (imported.code, checked.code) == ((1, 1) if refused else (0, 0)), (key, value, imported, checked)
        if refused:
            assert "holds a plaintext secret" in checked.err and f"hand_{i}.json" in checked.err
            assert CANARY not in checked.out + checked.err + imported.out + imported.err


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(path, group)]
    for name, cmd in sorted(subcommands(group).items()):
        if isinstance(cmd, click.Group):
            found += _commands(cmd, (*path, name))
        else:
            found.append(((*path, name), cmd))
    return found


def test_the_redactor_leaves_every_help_text_as_written() -> None:
    for path, cmd in _commands(cli):
        ctx = click.Context(cmd, info_name=" ".join(("hephaestus", *path)))
        shown = cmd.get_help(ctx)
        assert REDACTOR(shown) == shown, path


def test_imports_hint_reads_as_written(world: tuple[Project, ConnectDouble]) -> None:
    project, double = world
    double.add("hand_a", {"connector.class": SINK, "topics": "a", "connection.password": CANARY})
    out = project.cli("import", "--project", str(project.root / "hephaestus.yaml"))
    assert out.code == 1 and CANARY not in out.err
    assert "holds a plaintext secret (connection.password names a credential); git gets a placeholder" in out.err
    assert "pass --secret connection.password='${file:/path/to/secrets.properties:some_key}'" in out.err
