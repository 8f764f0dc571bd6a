"""CLI commands of the accuracy feature (filled in by its issue)."""

from __future__ import annotations

import click

commands: list[click.Command] = []
