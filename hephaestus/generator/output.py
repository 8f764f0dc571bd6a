"""Connector files on disk: render (pure), compare with what is there, write (edge)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hephaestus.generator.model import Connector

# The folders generation owns; custom/ is hand-written and never touched.
GENERATED_KINDS = ("source", "sink")


def render(connector: Connector) -> bytes:
    return render_document(connector.document())


def render_document(doc: Mapping[str, object]) -> bytes:
    """Deterministic bytes: sorted keys, 2-space indent, trailing newline (generate and import)."""
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


@dataclass(frozen=True)
class Tally:
    """One cluster's files by what writing does to them (generate's summary)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0


@dataclass(frozen=True)
class FileChanges:
    created: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.created or self.updated or self.removed)

    def by_folder(self) -> dict[str, Tally]:
        """Counts per cluster folder (a path's <folder>/<kind>/<name>.json), sorted: a fleet's
        1,450 files summed into a line each, which a first generate prints instead of every path."""
        kinds = {"created": self.created, "updated": self.updated, "unchanged": self.unchanged, "removed": self.removed}
        counts: dict[str, dict[str, int]] = {}
        for kind, paths in kinds.items():
            for path in paths:
                cluster = counts.setdefault(path.rsplit("/", 2)[0], dict.fromkeys(kinds, 0))
                cluster[kind] += 1
        return {name: Tally(**counts[name]) for name in sorted(counts)}

    def lines(self) -> list[str]:
        return (
            [f"create {p}" for p in self.created]
            + [f"update {p}" for p in self.updated]
            + [f"remove {p}" for p in self.removed]
        )


def diff_files(wanted: Mapping[str, bytes], existing: Mapping[str, bytes]) -> FileChanges:
    """What writing `wanted` over the generated files in `existing` would change (pure)."""
    return FileChanges(
        created=tuple(sorted(p for p in wanted if p not in existing)),
        updated=tuple(sorted(p for p in wanted if p in existing and existing[p] != wanted[p])),
        removed=tuple(sorted(p for p in existing if p not in wanted)),
        unchanged=tuple(sorted(p for p in wanted if p in existing and existing[p] == wanted[p])),
    )


def read_generated(out: Path) -> dict[str, bytes]:
    """Every file under connectors/<cluster>/{source,sink}/ (what generation owns)."""
    found: dict[str, bytes] = {}
    if not out.is_dir():
        return found
    for kind in GENERATED_KINDS:
        for path in out.glob(f"*/{kind}/*.json"):
            found[path.relative_to(out).as_posix()] = path.read_bytes()
    return found


def apply_changes(out: Path, wanted: Mapping[str, bytes], changes: FileChanges) -> None:
    """Write created/updated files atomically (rename), then remove stale ones."""
    write_files(out, {rel: wanted[rel] for rel in (*changes.created, *changes.updated)})
    for rel in changes.removed:
        (out / rel).unlink()


def write_files(root: Path, files: Mapping[str, bytes]) -> None:
    """Each file atomically: a crash leaves no half-written JSON for the next reconcile."""
    made: set[Path] = set()
    for rel, data in files.items():
        target = root / rel
        if target.parent not in made:  # a fleet's 4,500 files live in a few dozen folders
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        tmp = target.with_suffix(".json.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
