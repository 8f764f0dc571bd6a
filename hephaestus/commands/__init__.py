"""Click commands of each feature, added to the main group by `hephaestus.cli`.

One module per feature keeps cli.py thin; each module exposes `commands`, a list of click
commands or groups. The group loads a module only when one of its commands runs (or `--help`
lists them): a command imports neither the other commands nor their features (issue 47).
tests/unit/test_lazy_commands.py holds COMMANDS to what the modules define.
"""

from __future__ import annotations

import importlib

import click

# command name -> the module under hephaestus.commands that defines it
COMMANDS = {
    "generate": "generate",
    "catalog": "generate",
    "schemas": "generate",
    "validate": "validate",
    "job": "job",
    "reconcile": "reconcile",
    "import": "adopt",
    "snapshot": "snapshot",
    "heal": "heal",
    "accuracy": "accuracy",
    "ksql": "ksql",
    "dlq": "dlq",
    "slots": "slots",
    "status": "status",
    "exporter": "status",
    "offsets": "offsets",
    "plugins": "plugins",
    "graph": "graph",
    "share": "share",
}
FEATURES = tuple(dict.fromkeys(COMMANDS.values()))


def loaded(name: str) -> click.Command | None:
    """The command `name`, its module imported now; None for a name no module defines."""
    if name not in COMMANDS:
        return None
    module = importlib.import_module(f"hephaestus.commands.{COMMANDS[name]}")
    return next((c for c in module.commands if c.name == name), None)


class LazyGroup(click.Group):
    """A click group whose commands are imported when looked up, not when the CLI starts."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name) or loaded(cmd_name)


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """Every command of a group by name, each loaded (the lazy root's too): for docs and checks."""
    ctx = click.Context(group)
    found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: cmd for name, cmd in found.items() if cmd is not None}
