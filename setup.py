"""The Helm chart's files a user of the wheel needs without the repository (issue 48): its values
schema, the Grafana dashboard and the Prometheus rules are copied into the package at build time
(`hephaestus/chart/`), so that one copy lives in git, in the chart, and `hephaestus share` prints
them. Everything else is in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CHART = Path(__file__).parent / "helm" / "hephaestus"
SHARED = ("values.schema.json", "dashboards/hephaestus.json", "rules/hephaestus.yaml")


class BuildWithChart(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        missing = [f for f in SHARED if not (CHART / f).is_file()]
        if missing:  # a build context without the chart would ship a wheel that lacks them
            raise SystemExit(f"setup.py: the chart's {', '.join(missing)} not found under {CHART}")
        for name in SHARED:
            target = Path(self.build_lib) / "hephaestus" / "chart" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(CHART / name, target)


setup(cmdclass={"build_py": BuildWithChart})
