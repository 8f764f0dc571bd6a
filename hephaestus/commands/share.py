"""`hephaestus share NAME`: the Helm chart's files a user of the wheel needs without the
repository (issue 48): the values schema, the Grafana dashboard, the Prometheus rules. The wheel
carries them (setup.py copies them from helm/hephaestus at build time); a checkout's editable
install reads the chart itself."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from hephaestus.errors import HephaestusError

SHARED = {
    "values-schema": "values.schema.json",
    "dashboard": "dashboards/hephaestus.json",
    "rules": "rules/hephaestus.yaml",
}


def text_of(name: str) -> str:
    """The file's text: the package's copy (a wheel), else the chart beside the package (a checkout)."""
    packaged = resources.files("hephaestus").joinpath("chart", *SHARED[name].split("/"))
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    chart = Path(str(resources.files("hephaestus"))).parent / "helm" / "hephaestus" / SHARED[name]
    if chart.is_file():
        return chart.read_text(encoding="utf-8")
    raise HephaestusError(f"the chart's {SHARED[name]} is not in this install (rebuild the wheel)")


@click.command()
@click.argument("name", type=click.Choice(sorted(SHARED)))
def share(name: str) -> None:
    """Print a file of the Helm chart: the values schema, the Grafana dashboard or the alert rules."""
    click.echo(text_of(name), nl=False)


commands = [share]
