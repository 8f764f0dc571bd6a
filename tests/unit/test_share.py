"""`hephaestus share`: the chart's own files, byte for byte (issue 48). From a checkout (this
suite's editable install) they come from helm/hephaestus; tests/unit/test_wheel.py checks the
wheel's copies."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hephaestus.cli import cli
from hephaestus.commands.share import SHARED
from tests.unit.conftest import REPO


@pytest.mark.parametrize("name", sorted(SHARED))
def test_share_prints_the_charts_file(name: str) -> None:
    result = CliRunner().invoke(cli, ["share", name])
    assert result.exit_code == 0, result.output
    assert result.output == (REPO / "helm" / "hephaestus" / SHARED[name]).read_text()


def test_an_unknown_name_is_exit_2_naming_the_choices() -> None:
    result = CliRunner().invoke(cli, ["share", "grafana"])
    assert result.exit_code == 2
    assert "dashboard" in result.output and "values-schema" in result.output
