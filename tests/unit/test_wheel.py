"""The job image's install path, without Docker: the Dockerfile's build context (what
.dockerignore lets in) builds a wheel, the wheel goes with its pinned dependencies into a fresh
venv, and there every job the Helm chart runs answers `--help`.

Like the Dockerfile, this asks PyPI for the build backend and the dependencies (pip's cache
makes a repeat run take seconds).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

from hephaestus.jobs import JOBS
from tests.connect_double import ConnectDouble, serve
from tests.unit.conftest import REPO

# Builds a wheel / fetches helm: the packaging suite (needs the package index and the Go proxy).
pytestmark = pytest.mark.packaging

PIP = ("-m", "pip", "--disable-pip-version-check", "--no-input")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def hephaestus(self) -> Path:
        return self.venv / "bin" / "hephaestus"

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.hephaestus), *args],
            cwd=cwd or self.venv,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=clean_env(),
        )


def clean_env() -> dict[str, str]:
    """A user's shell: no checkout on the path, no project of ours named, no cache of the dev venv."""
    drop = ("PYTHONPATH", "HEPHAESTUS_PROJECT", "HEPHAESTUS_CACHE_DIR", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def docker_context(dest: Path) -> Path:
    """Copy what .dockerignore lets into the build context (it is an allow-list after `*`)."""
    lines = [ln.strip() for ln in (REPO / ".dockerignore").read_text().splitlines()]
    rules = [ln for ln in lines if ln and not ln.startswith("#")]
    assert rules[0] == "*", ".dockerignore should deny everything first, then allow"
    dest.mkdir()
    for rule in rules[1:]:
        if not rule.startswith("!"):
            continue
        src = REPO / rule[1:].rstrip("/")
        target = dest / rule[1:].rstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.is_file():
            shutil.copy2(src, target)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("wheel")
    context = docker_context(tmp / "context")
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, *PIP, "wheel", "--quiet", "--no-deps", "-w", str(dist), str(context)], check=True, timeout=300
    )
    wheels = list(dist.glob("hephaestus-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    lock = context / "requirements" / "runtime.lock"  # as the Dockerfile installs: the lock, then the wheel
    quiet = (*PIP, "install", "--quiet")
    subprocess.run([python, *quiet, "--require-hashes", "-r", str(lock)], check=True, timeout=600, env=clean_env())
    subprocess.run([python, *quiet, "--no-deps", str(wheels[0])], check=True, timeout=600, env=clean_env())
    yield Installed(wheels[0], venv)


def test_the_wheel_holds_the_package_data_and_the_pinned_dependencies(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as whl:
        names = set(whl.namelist())
        metadata = Parser().parsestr(whl.read("hephaestus-0.1.0.dist-info/METADATA").decode())
    for data in (
        "hephaestus/project.schema.json",
        "hephaestus/generator/definitions.schema.json",
        "hephaestus/py.typed",
        # Issue 48: the graph's page, and the chart's files a wheel's user has no checkout for.
        "hephaestus/graph/app.js",
        "hephaestus/graph/app.css",
        "hephaestus/graph/vendor/cytoscape.min.js",
        "hephaestus/chart/values.schema.json",
        "hephaestus/chart/dashboards/hephaestus.json",
        "hephaestus/chart/rules/hephaestus.yaml",
    ):
        assert data in names, data
    assert not any(n.startswith(("tests/", "helm/", "connectors/")) for n in names)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    requires = {re.sub(r"\s+", "", r) for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r}
    assert requires == {re.sub(r"\s+", "", d) for d in pyproject["project"]["dependencies"]}


def test_the_installed_console_script_is_the_wheel_not_the_work_tree(installed: Installed) -> None:
    python = installed.venv / "bin" / "python"
    where = subprocess.run(
        [str(python), "-c", "import hephaestus; print(hephaestus.__file__)"],
        cwd=installed.venv,
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    ).stdout
    assert Path(where.strip()).is_relative_to(installed.venv)
    version = installed.run("--version")
    assert version.returncode == 0 and "0.1.0" in version.stdout


def test_every_module_imports_with_only_the_declared_dependencies(installed: Installed) -> None:
    """Commands import lazily, so `--help` alone would not notice an undeclared dependency
    that the image then lacks when the job really runs."""
    script = (
        "import importlib, pkgutil, hephaestus\n"
        "for m in pkgutil.walk_packages(hephaestus.__path__, 'hephaestus.'):\n"
        "    if not m.name.endswith('.__main__'):\n"
        "        importlib.import_module(m.name)\n"
    )
    result = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", script],
        cwd=installed.venv,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=clean_env(),
    )
    assert result.returncode == 0, result.stderr


def test_job_list_names_every_job(installed: Installed) -> None:
    result = installed.run("job", "list")
    assert result.returncode == 0, result.stderr
    ours = result.stdout.partition("\nthe reference's job names:\n")[0]
    listed = [line.split()[0] for line in ours.splitlines() if line.strip()]
    assert listed == list(JOBS)


@pytest.mark.parametrize("job", list(JOBS))
def test_every_job_answers_help(installed: Installed, job: str) -> None:
    result = installed.run("job", "run", job, "--help")
    command = " ".join(a for a in JOBS[job].argv if not a.startswith("-"))
    assert result.returncode == 0, f"`hephaestus job run {job} --help`: {result.stdout}{result.stderr}"
    assert result.stdout.startswith(f"Usage: hephaestus {command} ")


def test_the_installed_package_generates_from_the_repo_definitions(installed: Installed, tmp_path: Path) -> None:
    """The packaged JSON Schemas and templates are in the wheel: generation works from it."""
    out = tmp_path / "connectors"
    result = installed.run(
        "generate",
        "--definitions",
        str(REPO / "definitions"),
        "--catalogs",
        str(REPO / "catalogs"),
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(out.rglob("*.json"))


def test_the_locks_pin_what_pyproject_pins_with_hashes() -> None:
    """requirements/*.lock come from pyproject.toml (dev/lock): the same version of every direct
    pin, and a hash for every package, so an install can be checked byte for byte."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for lock, pins in (
        ("runtime.lock", pyproject["dependencies"]),
        ("test.lock", [*pyproject["dependencies"], *pyproject["optional-dependencies"]["test"]]),
    ):
        text = (REPO / "requirements" / lock).read_text()
        locked = dict(re.findall(r"^([A-Za-z0-9_.\[\]-]+)==(\S+) \\", text, re.M))
        locked = {_normal(k): v for k, v in locked.items()}
        for pin in pins:
            name, version = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^;\s]+)", pin).groups()  # type: ignore[union-attr]
            assert locked.get(_normal(name)) == version, (lock, pin)
        entries = re.split(r"^(?=[A-Za-z0-9])", text, flags=re.M)
        assert all("--hash=sha256:" in e for e in entries if "==" in e.split("\n")[0]), lock


def _normal(name: str) -> str:
    """PEP 503's normal form of a distribution name (ruamel.yaml is ruamel-yaml)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_no_development_dependency_is_installed(installed: Installed) -> None:
    """The wheel's install is the runtime lock and nothing more: no test tool comes with it."""
    frozen = subprocess.run(
        [str(installed.venv / "bin" / "python"), *PIP, "freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    for dev in ("pytest", "mypy", "ruff", "hypothesis", "mutmut", "mkdocs", "playwright", "pyyaml"):
        assert f"{dev}==" not in frozen, dev


@pytest.mark.parametrize("name", ["values-schema", "dashboard", "rules"])
def test_share_prints_the_charts_own_file_from_the_wheel(installed: Installed, name: str) -> None:
    from hephaestus.commands.share import SHARED

    result = installed.run("share", name)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (REPO / "helm" / "hephaestus" / SHARED[name]).read_text()


def test_a_user_validates_and_plans_a_fleet_with_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    """Issue 48: a user's repository (no hephaestus checkout, nothing on PYTHONPATH), a project
    file and one connector file: `validate` passes, and a dry run against a Connect cluster (the
    strict double on loopback) plans the one update its file asks for."""
    repo = tmp_path / "fleet"
    (repo / "connectors" / "sink").mkdir(parents=True)
    live = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t1", "tasks.max": "1"}
    wanted = {**live, "tasks.max": "2"}
    (repo / "connectors" / "sink" / "s1.json").write_text(json.dumps({"name": "s1", "config": wanted}))
    double = ConnectDouble()
    double.add("s1", live)
    with serve(double) as url:
        (repo / "hephaestus.yaml").write_text(f"clusters:\n  main:\n    url: {url}\n    connectors: connectors\n")
        checked = installed.run("validate", cwd=repo)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        planned = installed.run("reconcile", "--dry-run", "-o", "json", cwd=repo)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    (cluster,) = json.loads(planned.stdout)["clusters"]
    assert [(s["action"], s["name"]) for s in cluster["steps"]] == [("update", "s1")]
    assert double.writes() == [], "a dry run writes nothing"


def test_pipx_installs_the_wheel_pinned_by_the_runtime_lock(installed: Installed, tmp_path: Path) -> None:
    """The README's install: pipx puts `hephaestus` on PATH from the wheel, and `pipx runpip`
    brings every dependency to the runtime lock, hashes checked (pipx's --pip-args would pass a
    hashed lock to its own pip upgrade too, which then refuses pip for want of a hash)."""
    tools = tmp_path / "tools"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True, timeout=120)
    subprocess.run([str(tools / "bin" / "python"), *PIP, "install", "--quiet", "pipx==1.18.4"], check=True, timeout=300)
    env = {**clean_env(), "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin")}
    pipx = [str(tools / "bin" / "pipx")]
    subprocess.run([*pipx, "install", str(installed.wheel)], env=env, check=True, timeout=600, capture_output=True)
    lock = REPO / "requirements" / "runtime.lock"
    subprocess.run(
        [*pipx, "runpip", "hephaestus", "install", "--quiet", "--require-hashes", "-r", str(lock)],
        env=env,
        check=True,
        timeout=600,
    )
    version = subprocess.run(
        [str(tmp_path / "bin" / "hephaestus"), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stderr
