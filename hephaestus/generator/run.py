"""generate's run: definitions and catalogs loaded and checked, fanned out, then written (or
compared, with --check); and the JSON Schemas editors read, kept equal to the packaged ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hephaestus.generator.catalogs import load_catalogs
from hephaestus.generator.definitions import Registries, load_definitions, no_registries
from hephaestus.generator.fanout import generate
from hephaestus.generator.model import Connector
from hephaestus.generator.output import FileChanges, apply_changes, diff_files, read_generated, render_all


@dataclass(frozen=True)
class GenerateResult:
    connectors: tuple[Connector, ...]
    changes: FileChanges


def run_generate(
    definitions: Path, catalogs: Path, out: Path, check: bool, registries: Registries | None = None
) -> GenerateResult:
    """Validate everything first; then (unless `check`) write and remove files."""
    connectors = generate(load_definitions(definitions, registries or no_registries), load_catalogs(catalogs))
    wanted = render_all(connectors)
    changes = diff_files(wanted, read_generated(out))
    if not check:
        apply_changes(out, wanted, changes)
    return GenerateResult(tuple(connectors), changes)


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
