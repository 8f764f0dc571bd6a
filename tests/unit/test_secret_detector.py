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
        "policy: {stability_window_s: 0}\n"  # the double's connectors run at once: no window to wait out
    )
    return project, double


def test_validate_import_and_reconcile_refuse_the_same_configs(world: tuple[Project, ConnectDouble]) -> None:
    """Issue 48: reconcile applied a connector file `validate` and `import` refuse. It loads git's
    connector files where every command does (fleet.desired), and the check is there."""
    project, double = world
    yaml = str(project.root / "hephaestus.yaml")
    folder = project.connectors / "p/sink"
    folder.mkdir(parents=True)
    for i, (key, value, refused) in enumerate(CASES):
        config = {"connector.class": SINK, "topics": "t", key: value}
        for old in folder.glob("*.json"):
            old.unlink()
        double.connectors.clear()
        double.add(f"hand_{i}", config)
        imported = project.cli("import", "--project", yaml, "--dry-run")
        double.connectors.clear()
        (folder / f"hand_{i}.json").write_text(json.dumps({"name": f"hand_{i}", "config": config}))
        checked = project.cli("validate", "--project", yaml, "--definitions", str(project.root / "none"))
        double.log.clear()
        applied = project.cli("reconcile", "--project", yaml, "--auto-approve")
        codes = (imported.code, checked.code, applied.code)
        assert codes == ((1, 1, 1) if refused else (0, 0, 0)), (key, value, imported, checked, applied)
        if refused:
            for out in (checked, applied):  # the same check, the same words
                assert "holds a plaintext secret" in out.err and f"hand_{i}.json" in out.err, out
                assert f"config.{key}" in out.err or f'config["{key}"]' in out.err, out
            assert not double.writes(), "nothing applied"
            assert CANARY not in checked.out + checked.err + imported.out + imported.err + applied.out + applied.err
        else:
            assert f"hand_{i}" in double.connectors, applied


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
