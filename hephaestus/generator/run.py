"""generate's run: definitions and catalogs loaded and checked, fanned out, then written (or
compared, with --check); and the JSON Schemas editors read, kept equal to the packaged ones."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from hephaestus.generator.catalogs import load_catalogs
from hephaestus.generator.definitions import Registries, load_definitions, no_registries
from hephaestus.generator.fanout import generate
from hephaestus.generator.model import Connector
from hephaestus.generator.output import GENERATED_KINDS, FileChanges, apply_changes, diff_files, read_generated, render
from hephaestus.generator.pins import pinned, renamed


@dataclass(frozen=True)
class GenerateResult:
    connectors: tuple[Connector, ...]
    changes: FileChanges


@dataclass(frozen=True)
class Layout:
    """Where each cluster's files go: the folder the project file names for it
    (`clusters.<name>.connectors`, which reconcile reads), else `root`/<cluster> (--out, which
    puts every cluster under it, or connectors/ with no project file)."""

    root: Path
    folders: Mapping[str, Path] = field(default_factory=dict)

    def file(self, c: Connector) -> Path:
        inside = PurePosixPath(c.relpath).relative_to(c.cluster)  # <kind>/<name>.json
        return self.folders.get(c.cluster, self.root / c.cluster) / inside

    def generated(self) -> dict[Path, bytes]:
        """The files generation owns there now: <root>/*/{source,sink}/ and each named folder's."""
        found = {self.root / rel: data for rel, data in read_generated(self.root).items()}
        for folder in self.folders.values():
            found |= {p: p.read_bytes() for kind in GENERATED_KINDS for p in folder.glob(f"{kind}/*.json")}
        return found


def run_generate(
    definitions: Path,
    catalogs: Path,
    out: Path | Layout,
    check: bool,
    registries: Registries | None = None,
    versions: Mapping[str, str] | None = None,
) -> GenerateResult:
    """Validate everything first; then (unless `check`) write and remove files. The changes
    name each file as the layout spells it (under --out, or the project's folder). `versions`:
    the project's fleet-wide plugin pins ({class: pin})."""
    layout = out if isinstance(out, Layout) else Layout(out)
    made = generate(load_definitions(definitions, registries or no_registries), load_catalogs(catalogs))
    connectors = renamed([pinned(c, versions) for c in made] if versions else made)
    wanted = {layout.file(c): render(c) for c in connectors}
    existing = layout.generated()
    # A file may be spelled two ways (a named folder under --out's root, one relative and one
    # absolute): compared by its absolute path, it is never both written and removed as stale.
    spelled = {_absolute(p): p.as_posix() for p in (*existing, *wanted)}  # wanted's spelling last: it wins
    found = diff_files(_by_absolute(wanted), _by_absolute(existing))
    kinds = (found.created, found.updated, found.removed, found.unchanged)
    changes = FileChanges(*(tuple(spelled[k] for k in keys) for keys in kinds))
    if not check:
        apply_changes(Path(), {p.as_posix(): data for p, data in wanted.items()}, changes)
    return GenerateResult(tuple(connectors), changes)


def _by_absolute(files: Mapping[Path, bytes]) -> dict[str, bytes]:
    return {_absolute(p): data for p, data in files.items()}


def _absolute(path: Path) -> str:
    return os.path.abspath(path)  # normalised, symlinks left alone: the path as written, made absolute


# The JSON Schemas editors read (YAML language server modelines in the examples point here).
EDITOR_SCHEMAS = (("hephaestus.generator", "definitions.schema.json"), ("hephaestus", "project.schema.json"))


def sync_editor_schemas(schemas: Path, check: bool) -> list[Path]:
    """Keep schemas/definitions.schema.json and schemas/project.schema.json equal to the
    packaged schemas; the files that were (or, with `check`, would be) written."""
    from importlib import resources

    changed = []
    for package, name in EDITOR_SCHEMAS:
        wanted = resources.files(package).joinpath(name).read_bytes()
        target = schemas / name
        if target.is_file() and target.read_bytes() == wanted:
            continue
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wanted)
        changed.append(target)
    return changed
