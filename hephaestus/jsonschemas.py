"""The packaged JSON Schemas, checked fast (edge of the pure core: no I/O but reading the package).

Every input is checked against its schema on every command, and jsonschema takes ~20 µs per
node (3 s for three 40,000-column table catalogs) and ~50 ms to import. So a document is
first run through the schema compiled to Python by fastjsonschema; only a document it refuses
goes to jsonschema, whose errors (every one, with paths) the messages are built from. The
verdict is always jsonschema's: fastjsonschema only lets a valid document skip it.
tests/unit/test_schema_fast_path.py checks the two agree on fuzzed documents.

fastjsonschema writes ~250 KB of Python per schema, and compiling it cost ~50 ms on every
command (issue 47). The compiled code is kept in the user's cache folder (`HEPHAESTUS_CACHE_DIR`,
else `$XDG_CACHE_HOME/hephaestus`, else `~/.cache/hephaestus`), named by the hash of the schema,
fastjsonschema's version and the interpreter's: a changed schema is a new file, never a stale
one. A folder or file that is neither the user's nor root's, or is writable by others, is not
read (it would be code run as this user); an unwritable or damaged cache only costs the compile.
The image compiles them at build time (`python -m hephaestus.jsonschemas`, root's files).
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from types import CodeType
from typing import Any


@cache
def packaged_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped inside the package."""
    schema: dict[str, Any] = json.loads(resources.files(package).joinpath(name).read_text())
    return schema


class Checker:
    """`valid(data)`: the fast verdict; `iter_errors(data)`: jsonschema's errors (the truth)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._fast: Callable[[Any], Any] | None = None
        self._full: Any = None

    def valid(self, data: Any) -> bool:
        import fastjsonschema

        if self._fast is None:
            # use_default off: fastjsonschema would write each schema `default` into the document,
            # and a check must never change what it checks (compat: reference lost its defaults).
            self._fast = compiled(self.schema)
        try:
            self._fast(data)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    def iter_errors(self, data: Any) -> Iterator[Any]:
        if self._full is None:
            import jsonschema  # only for a document the fast check refused

            self._full = jsonschema.validators.validator_for(self.schema)(self.schema)
        return iter(self._full.iter_errors(data))


@cache
def packaged_validator(package: str, name: str) -> Checker:
    return Checker(packaged_schema(package, name))


PACKAGED = (
    ("hephaestus", "project.schema.json"),
    ("hephaestus.generator", "definitions.schema.json"),
    ("hephaestus.generator", "catalog.schema.json"),
    ("hephaestus.reconciler", "plan.schema.json"),
)


def compiled(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """fastjsonschema's validator of `schema`, its code read from the cache when it is there."""
    import fastjsonschema

    text = json.dumps(schema, sort_keys=True)
    key = hashlib.sha256(f"{text}|{fastjsonschema.VERSION}|{sys.version}".encode()).hexdigest()[:32]
    path = cache_dir() / f"schema-{key}.marshal"
    found = _cached(path)
    if found is None:
        from fastjsonschema.ref_resolver import RefResolver

        # use_default off: fastjsonschema would write each schema `default` into the document,
        # and a check must never change what it checks (compat: reference lost its defaults).
        # Each gets a copy: fastjsonschema rewrites a schema's $refs in place (absolute URIs).
        source = fastjsonschema.compile_to_code(json.loads(text), use_default=False)
        # the entry point is named after the schema's $id, as fastjsonschema.compile finds it
        entry = RefResolver.from_schema(json.loads(text), store={}).get_scope_name()
        found = (entry, compile(source, f"<schema {key}>", "exec"))
        _keep(path, found)
    name, code = found
    scope: dict[str, Any] = {}
    exec(code, scope)  # noqa: S102 - fastjsonschema's own generated validator, as its compile() runs it
    validate: Callable[[Any], Any] = scope[name]
    return validate


def cache_dir() -> Path:
    if found := os.environ.get("HEPHAESTUS_CACHE_DIR"):
        return Path(found)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hephaestus"


def _cached(path: Path) -> tuple[str, CodeType] | None:
    try:
        if not (_own(path.parent) and _own(path)):
            return None
        found = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):  # absent, unreadable or damaged: compile again
        return None
    match found:
        case (str() as name, CodeType() as code):
            return name, code
    return None


def _own(path: Path) -> bool:
    """The user's own or root's (an image's build), and writable by nobody else."""
    found = path.stat()
    return found.st_uid in (os.getuid(), 0) and not found.st_mode & 0o022


def _keep(path: Path, found: tuple[str, CodeType]) -> None:
    """Written whole (a temporary file, then renamed) so a concurrent run reads all or nothing."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        spare = path.with_name(f".{path.name}.{os.getpid()}")
        spare.write_bytes(marshal.dumps(found))
        os.chmod(spare, 0o600)
        os.replace(spare, path)
    except OSError:  # a read-only home (a container): the compile is all it costs
        pass


def warm() -> list[Path]:
    """Every packaged schema's validator compiled into the cache (the image's build runs it)."""
    for package, name in PACKAGED:
        compiled(packaged_schema(package, name))
    return sorted(cache_dir().glob("schema-*.marshal"))


if __name__ == "__main__":
    print(f"{len(warm())} schema validators in {cache_dir()}")
