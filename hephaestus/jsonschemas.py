"""The packaged JSON Schemas, checked fast (edge of the pure core: no I/O but reading the package).

Every input is checked against its schema on every command, and jsonschema takes ~20 µs per
node (3 s for three 40,000-column table catalogs) and ~50 ms to import. So a document is
first run through the schema compiled to Python by fastjsonschema; only a document it refuses
goes to jsonschema, whose errors (every one, with paths) the messages are built from. The
verdict is always jsonschema's: fastjsonschema only lets a valid document skip it.
tests/unit/test_schema_fast_path.py checks the two agree on fuzzed documents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
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
            self._fast = fastjsonschema.compile(self.schema, use_default=False)
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
