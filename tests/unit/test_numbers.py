"""Every numeric option of every command is finite and bounded at parse time (issue 29:
`--batch-interval nan|inf|1e300` passed the dry run and crashed the apply after its first
batch; `--lock-timeout nan` waited for ever)."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from hephaestus.cli import cli as main
from hephaestus.commands import subcommands
from hephaestus.commands.common import Finite


def options(group: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Parameter]]:
    if isinstance(group, click.Group):
        for name, sub in subcommands(group).items():
            yield from options(sub, (*path, name))
        return
    for p in group.params:
        yield " ".join(path) + " " + (p.opts[0] if p.opts else p.name or ""), p


NUMERIC = [(where, p) for where, p in options(main) if isinstance(p.type, click.types._NumberParamTypeBase)]


def test_there_are_numeric_options_to_check() -> None:
    assert len(NUMERIC) >= 15


@pytest.mark.parametrize("where, param", NUMERIC, ids=[w for w, _ in NUMERIC])
def test_a_numeric_option_has_both_bounds_and_refuses_nan_and_infinity(where: str, param: click.Parameter) -> None:
    kind = param.type
    assert isinstance(kind, click.types._NumberRangeBase), f"{where}: no range"
    assert kind.min is not None and kind.max is not None, f"{where}: unbounded"
    for bad in ("nan", "inf", "-inf", "1e300", str(kind.max * 2 + 1)):
        with pytest.raises(click.BadParameter):
            kind.convert(bad, param, None)
    if isinstance(kind, click.FloatRange):
        assert isinstance(kind, Finite), f"{where}: a float range lets nan through"
    assert kind.convert(str(kind.min), param, None) == kind.min
