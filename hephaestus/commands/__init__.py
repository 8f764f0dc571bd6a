"""Click commands of each feature, added to the main group by `hephaestus.cli`.

One module per feature keeps cli.py thin; each module exposes `commands`, a list of click
commands or groups. Commands import their feature lazily so `--help` stays fast.
"""

from __future__ import annotations

import importlib

import click

FEATURES = (
    "generate",
    "validate",
    "job",
    "reconcile",
    "adopt",
    "snapshot",
    "heal",
    "accuracy",
    "ksql",
    "dlq",
    "slots",
    "status",
    "offsets",
    "graph",
)


def register(group: click.Group) -> None:
    for feature in FEATURES:
        module = importlib.import_module(f"hephaestus.commands.{feature}")
        for command in module.commands:
            group.add_command(command)
