"""What `hephaestus plugins` reports, judged and rendered (pure; issue 50).

Errors, each naming its cluster and worker: a worker not read; one that answers without
versions (Connect before 4.1: nothing can be checked); skew (workers holding different versions
of a class); a pin that is no version or range; a key the version a connector runs reads under
another name (`hephaestus.keyrenames`); a pin that a worker has nothing for (the task
placed there fails to start); a connector whose tasks run another version than it does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hephaestus import versions
from hephaestus.connect.models import LiveConnector
from hephaestus.fleet import plugins
from hephaestus.fleet.plugins import Workers


@dataclass(frozen=True)
class Runs:
    """One connector: the version it runs, and each task's (Connect 4.1+; "" unknown)."""

    name: str
    plugin: str
    version: str
    tasks: tuple[tuple[int, str], ...]
    config: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def pins(self) -> dict[str, tuple[str, str]]:
        """{pin key: (the class it pins, its spec)}."""
        return plugins.pins(self.config)


@dataclass(frozen=True)
class ClusterPlugins:
    cluster: str
    url: str
    workers: Workers
    runs: tuple[Runs, ...] = ()
    error: str = ""  # the cluster could not be read at all

    @property
    def problems(self) -> tuple[str, ...]:
        if self.error:
            return (f"{self.cluster}: {self.error}",)
        configs = {r.name: r.config for r in self.runs}
        found = plugins.findings(self.cluster, self.workers, configs, {r.name: r.version for r in self.runs})
        return found + tuple(p for r in self.runs for p in _mixed(self.cluster, r))


def runs_of(fleet: Mapping[str, LiveConnector]) -> tuple[Runs, ...]:
    return tuple(
        Runs(n, c.connector_class, c.version, tuple((t.id, t.version) for t in c.tasks), c.config)
        for n, c in sorted(fleet.items())
    )


def _mixed(cluster: str, r: Runs) -> list[str]:
    """A connector whose tasks run another version than it does (skew inside one connector)."""
    others = sorted({v for _, v in r.tasks if v and r.version and v != r.version})
    return [f"{cluster}: {r.name} runs {r.plugin} {r.version} but a task runs {', '.join(others)}"] if others else []


def text(reports: Sequence[ClusterPlugins]) -> str:
    lines: list[str] = []
    for c in reports:
        lines.append(f"cluster {c.cluster} ({c.url}): {len(c.workers.held)} worker(s) read")
        for worker, held in sorted(c.workers.held.items()):
            lines.append(f"  worker {worker}")
            lines += [
                f"    {c.workers.types.get(cls, '?'):<10} {cls}  {_versions(v)}" for cls, v in sorted(held.items())
            ]
        lines += [f"  {_run_line(r)}" for r in c.runs]
    problems = [p for c in reports for p in c.problems]
    lines += [f"error: {p}" for p in problems] or ["no skew, every pin held by every worker"]
    return "\n".join(lines) + "\n"


def _versions(found: frozenset[str]) -> str:
    return ", ".join(sorted(found, key=versions.version_key)) or "(no version)"


def _run_line(r: Runs) -> str:
    pin = f" (pinned {r.pins['connector.plugin.version'][1]})" if "connector.plugin.version" in r.pins else ""
    tasks = ", ".join(f"task {i} {v or '?'}" for i, v in r.tasks) or "no tasks"
    return f"{r.name}: {r.plugin} {r.version or '?'}{pin}; {tasks}"


def as_json(reports: Sequence[ClusterPlugins]) -> str:
    return json.dumps({"clusters": [_dict(c) for c in reports]}, indent=2) + "\n"


def _dict(c: ClusterPlugins) -> dict[str, Any]:
    w = c.workers
    return {
        "cluster": c.cluster,
        "url": c.url,
        "workers": {
            n: [
                {"class": cls, "type": w.types.get(cls, ""), "versions": sorted(v, key=versions.version_key)}
                for cls, v in sorted(held.items())
            ]
            for n, held in sorted(w.held.items())
        },
        "connectors": [
            {
                "name": r.name,
                "class": r.plugin,
                "version": r.version or None,
                "tasks": [{"id": i, "version": v or None} for i, v in r.tasks],
                "pins": {k: spec for k, (_, spec) in sorted(r.pins.items())},
            }
            for r in c.runs
        ],
        "skew": [s.describe() for s in plugins.skew(w.held)],
        "errors": list(c.problems),
    }
