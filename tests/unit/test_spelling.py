"""One spelling for everything (issue 32): one approval flag on every command that asks before it
writes, `-v` meaning one thing, the reference's flags accepted as aliases of canonical ones."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from hephaestus.cli import cli
from hephaestus.commands import subcommands

ASKS = {"reconcile", "offsets reset", "offsets set", "offsets restore", "slots", "dlq replay", "dlq purge"}


def commands(group: click.Group = cli, path: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, cmd in subcommands(group).items():
        where = f"{path} {name}".strip()
        if isinstance(cmd, click.Group):
            yield from commands(cmd, where)
        else:
            yield where, cmd


def options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.params if isinstance(p, click.Option)]


def test_every_command_that_asks_takes_auto_approve_and_its_alias_yes() -> None:
    found = {where for where, cmd in commands() for o in options(cmd) if "--auto-approve" in o.opts}
    assert found == ASKS
    for where, cmd in commands():
        (approve,) = [o for o in options(cmd) if "--yes" in o.opts] or [None]
        assert approve is None or approve.opts == ["--auto-approve", "--yes"], where
        assert not any(o.opts == ["-y"] for o in options(cmd)), where


def test_minus_v_means_verbose_and_nothing_else() -> None:
    assert [sorted(o.opts) for o in options(cli) if "-v" in o.opts] == [["--verbose", "-v"]]
    taken = [where for where, cmd in commands() for o in options(cmd) if "-v" in o.opts]
    assert taken == []


@pytest.mark.parametrize("alias, canonical", [("--deployCustomSinkConnector", "--deploy-custom-sinks")])
def test_the_references_flags_are_aliases_named_in_help(alias: str, canonical: str) -> None:
    reconcile = cli.get_command(click.Context(cli), "reconcile")
    assert reconcile is not None
    (option,) = [o for o in options(reconcile) if alias in o.opts]
    assert option.opts[0] == canonical
    shown = reconcile.get_help(click.Context(reconcile))
    assert f"(alias: {alias})" in shown and f"{alias} " not in shown.replace(f"(alias: {alias})", "")


def test_without_a_terminal_the_refusal_names_the_canonical_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from hephaestus.commands.common import confirm
    from hephaestus.errors import HephaestusError

    with pytest.raises(HephaestusError, match="pass --auto-approve"):
        confirm("Do it?")
