"""Generator: definitions/*.yaml (+ schema snapshots) fan out to connector JSON files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hephaestus.generator.definitions import load_definitions
from hephaestus.generator.fanout import generate
from hephaestus.generator.model import Connector
from hephaestus.generator.output import FileChanges, apply_changes, diff_files, read_generated, render_all
from hephaestus.generator.snapshots import load_snapshots


@dataclass(frozen=True)
class GenerateResult:
    connectors: tuple[Connector, ...]
    changes: FileChanges


def run_generate(definitions: Path, schemas: Path, out: Path, check: bool) -> GenerateResult:
    """Validate everything first; then (unless `check`) write and remove files."""
    connectors = generate(load_definitions(definitions), load_snapshots(schemas))
    wanted = render_all(connectors)
    changes = diff_files(wanted, read_generated(out))
    if not check:
        apply_changes(out, wanted, changes)
    return GenerateResult(tuple(connectors), changes)


def sync_definitions_schema(schemas: Path, check: bool) -> bool:
    """Keep schemas/definitions.schema.json (for editors) equal to the packaged schema."""
    from importlib import resources

    wanted = resources.files("hephaestus.generator").joinpath("definitions.schema.json").read_bytes()
    target = schemas / "definitions.schema.json"
    if target.is_file() and target.read_bytes() == wanted:
        return False
    if not check:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(wanted)
    return True
