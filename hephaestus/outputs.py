"""One guard for every file a command writes at a path the user names.

`reconcile --out`, `graph --output` and `--metrics-textfile` each write a file a flag names. A
slip of the hand (`--output hephaestus.yaml`, a connector file, a folder git holds) must never
turn an input of hephaestus into an HTML page or a metrics dump: the guard refuses, before
anything is read from a cluster, any path that is an input, that lies in a folder of inputs, or
that holds a file this kind of output did not write. Paths are compared resolved, so neither a
symlink nor `../` gets around it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hephaestus.errors import InputError
from hephaestus.project import Project

_HEAD = 4096  # what is read of an existing file to tell whose it is


@dataclass(frozen=True)
class Kind:
    """A kind of output: its name for the user, and how to tell a file of its own."""

    noun: str
    owns: Callable[[bytes], bool]


def _plan(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"hephaestus_plan"' in head


def _page(head: bytes) -> bool:
    return head.startswith(b"<!DOCTYPE html>") and b"<title>hephaestus graph" in head


# The exposition format: comments, blank lines and samples `name{labels} value`, nothing else.
_SAMPLE = re.compile(
    rb"^(#.*|[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})? +([-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf)|NaN)( +-?[0-9]+)?)?$"
)


def _textfile(head: bytes) -> bool:
    lines = head.splitlines()
    if len(head) == _HEAD and lines:
        lines = lines[:-1]  # the last line read may be cut short
    return all(_SAMPLE.match(line.strip()) for line in lines)


PLAN = Kind("a hephaestus plan", _plan)
GRAPH = Kind("a hephaestus graph page", _page)
TEXTFILE = Kind("a Prometheus textfile", _textfile)


def check(path: Path, project: Project, flag: str, kind: Kind) -> None:
    """Refuse `path` as `flag`'s output when it is an input of hephaestus or a file of another kind."""
    target = path.resolve()
    if target in _input_files(project) or any(f == target or f in target.parents for f in _input_folders(project)):
        raise InputError(str(path), f"{flag} would overwrite an input of hephaestus: name a file of its own")
    if target.is_dir():
        raise InputError(str(path), f"{flag} names a folder: name a file")
    if target.exists() and not kind.owns(_head(path, flag)):
        raise InputError(str(path), f"{flag} would overwrite a file that is not {kind.noun}")


def _input_files(project: Project) -> set[Path]:
    files = {Path(project.file).resolve()}
    files |= {c.secrets_file.resolve() for c in project.clusters.values() if c.secrets_file}
    if project.audit_log:
        files.add(project.audit_log.resolve())
    return files


def _input_folders(project: Project) -> list[Path]:
    """Where git's desired state and hephaestus's own state live (by convention or by the file)."""
    named = [c.connectors for c in project.clusters.values()] + [k.migrations for k in project.ksqldb.values()]
    usual = [project.base / d for d in (".hephaestus", "definitions", "catalogs", "schemas", "connectors")]
    return [p.resolve() for p in (*named, *usual)]


def _head(path: Path, flag: str) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(_HEAD)
    except OSError as exc:  # what cannot be read cannot be told ours: never overwritten
        raise InputError(str(path), f"{flag} names a file that cannot be read: {exc.strerror or exc}") from exc
