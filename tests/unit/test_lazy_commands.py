"""Issue 47: the CLI loads a command's module only when that command runs, and a no-op dry run
imports nothing heavy it does not use. Counted in a fresh interpreter (`sys.modules`), never
timed: time is measured in bench/, not in tests."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click

from hephaestus.cli import cli
from hephaestus.commands import COMMANDS, FEATURES

REPO = Path(__file__).resolve().parents[2]


def test_every_command_is_mapped_to_the_module_that_defines_it() -> None:
    defined = {c.name: f for f in FEATURES for c in importlib.import_module(f"hephaestus.commands.{f}").commands}
    assert defined == COMMANDS
    files = {p.stem for p in (REPO / "hephaestus/commands").glob("*.py")}
    assert set(FEATURES) <= files


def test_the_help_lists_every_command_and_loads_each_by_name() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    assert all(getattr(cli.get_command(ctx, n), "name", None) == n for n in COMMANDS)
    assert cli.get_command(ctx, "nosuch") is None


def imported(*argv: str, cwd: Path) -> set[str]:
    """The modules a fresh CLI process has imported when it exits."""
    code = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: print('\\n' + json.dumps(sorted(sys.modules)), file=sys.__stderr__))\n"
        "from hephaestus.cli import main\n"
        f"sys.argv = ['hephaestus', *{list(argv)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))
