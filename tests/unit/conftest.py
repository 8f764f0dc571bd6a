"""Unit-test helpers: a scratch project (definitions, schemas, connectors) and a CLI runner."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from hephaestus.cli import run
from tests.connect_double import ConnectDouble, serve

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hephaestus.reconciler.plan import Desired, Live, Plan, Policy, Scope
    from hephaestus.safety.gate import Cleared

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass
class Project:
    root: Path

    @property
    def definitions(self) -> Path:
        return self.root / "definitions"

    @property
    def catalogs(self) -> Path:
        return self.root / "catalogs"

    @property
    def schemas(self) -> Path:  # the JSON Schemas editors read
        return self.root / "schemas"

    @property
    def connectors(self) -> Path:
        return self.root / "connectors"

    def write_definition(self, name: str, text: str) -> Path:
        path = self.definitions / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    def generate(self, *extra: str) -> Result:
        return self.cli(
            "generate",
            "--definitions",
            str(self.definitions),
            "--catalogs",
            str(self.catalogs),
            "--out",
            str(self.connectors),
            *extra,
        )

    def cli(self, *args: str) -> Result:
        code = run(list(args))
        captured = self._capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def files(self) -> dict[str, bytes]:
        return {
            p.relative_to(self.connectors).as_posix(): p.read_bytes() for p in sorted(self.connectors.rglob("*.json"))
        }

    _capsys: pytest.CaptureFixture[str] = None  # type: ignore[assignment]


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Project:
    """A copy of the shipped examples' definitions, catalogs and JSON Schemas, with no connectors yet."""
    shutil.copytree(REPO / "definitions", tmp_path / "definitions")
    shutil.copytree(REPO / "catalogs", tmp_path / "catalogs")
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    p = Project(tmp_path)
    p._capsys = capsys
    return p


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ConnectDouble, str]]:
    """One strict Connect double on loopback per test module (stopping a server takes half a
    second); each test clears and seeds it."""
    double = ConnectDouble()
    with serve(double) as url:
        yield double, url


def cleared(p: Plan) -> Cleared:
    """The gate's pass for a plan a test built by hand (every destructive effect allowed; a
    fleet rule still refuses): executors take nothing else."""
    from hephaestus.reconciler.gating import items_of
    from hephaestus.safety.gate import Allow, clear, judge

    return clear(judge(items_of(p, {}), Allow(every=True)), p.cluster)


def gated(
    cluster: str,
    desired: Mapping[str, Desired],
    live: Mapping[str, Live],
    policy: Policy,
    scope: Scope | None = None,
) -> Plan:
    """plan() and then the one gate, as a run judges a single cluster."""
    from hephaestus.reconciler import gating
    from hephaestus.reconciler.plan import Scope, plan

    scope = scope or Scope()
    p = plan(cluster, desired, live, policy, scope)
    view = gating.GatedCluster(cluster, {n: lv.config for n, lv in live.items()}, desired, scope.owned, None, p)
    return gating.judged([view], policy)[0][cluster]
