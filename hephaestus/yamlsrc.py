"""Load YAML while remembering where every value came from, so errors can name a line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import yaml

import jsonschema

from hephaestus.errors import InputError
from hephaestus.secrets import is_sensitive

PathElem = str | int


@dataclass(frozen=True)
class YamlDoc:
    """A parsed YAML file: its data and its node tree (for line numbers)."""

    file: str
    data: Any
    root: yaml.Node | None

    def line_of(self, path: Sequence[PathElem]) -> int | None:
        """1-based line of the value at `path`, or of the deepest ancestor that exists."""
        node = self.root
        line = None if node is None else node.start_mark.line + 1
        for elem in path:
            node = _child(node, elem)
            if node is None:
                break
            line = node.start_mark.line + 1
        return line

    def key_line(self, path: Sequence[PathElem], key: str) -> int | None:
        """Line of a mapping key itself (for 'unknown key' errors)."""
        node = self.root
        for elem in path:
            node = _child(node, elem)
        if isinstance(node, yaml.MappingNode):
            for k, _ in node.value:
                if k.value == key:
                    return int(k.start_mark.line) + 1
        return self.line_of(path)


def _child(node: yaml.Node | None, elem: PathElem) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == elem:
                found: yaml.Node = v
                return found
    if isinstance(node, yaml.SequenceNode) and isinstance(elem, int) and elem < len(node.value):
        item: yaml.Node = node.value[elem]
        return item
    return None


def load_yaml(path: Path) -> YamlDoc:
    """Parse one file; a syntax error becomes an InputError with its line."""
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = None if mark is None else mark.line + 1
        raise InputError(str(path), f"invalid YAML: {exc.problem}", line=line) from exc
    return YamlDoc(str(path), data, root)


def format_path(path: Sequence[PathElem]) -> str:
    """`pipelines[0].sinks[1].database` style, the way users read it."""
    out = ""
    for elem in path:
        out += f"[{elem}]" if isinstance(elem, int) else (f".{elem}" if out else str(elem))
    return out


def schema_errors_of(doc: YamlDoc, validator: jsonschema.protocols.Validator) -> list[InputError]:
    """Every JSON Schema violation of `doc`, as errors naming file, line and field path."""
    errors = [_schema_error(doc, e) for e in validator.iter_errors(doc.data)]
    return sorted(errors, key=lambda e: (e.line or 0, e.field))


def _schema_error(doc: YamlDoc, err: jsonschema.ValidationError) -> InputError:
    path = list(err.absolute_path)
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = schema.get("properties", {})
        extra = sorted(k for k in err.instance if k not in allowed)
        key = extra[0] if extra else ""
        field = format_path([*path, key])
        msg = f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})"
        return InputError(doc.file, msg, field=field, line=doc.key_line(path, key))
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [k for k in schema.get("required", []) if k not in err.instance]
        return InputError(doc.file, f"missing required key {missing[0]!r}",
                          field=format_path([*path, missing[0]]), line=doc.line_of(path))
    message = err.message
    if any(isinstance(p, str) and (is_sensitive(p) or p in _CREDENTIAL_BEARING) for p in path):
        # The value may be a secret pasted where a reference belongs: never echo it.
        message = f"invalid value (not shown); expected {_expected(schema)}"
    return InputError(doc.file, message, field=format_path(path) or "(root)", line=doc.line_of(path))


# Values that may embed credentials (a DSN's password=, a URL's user:pass@).
_CREDENTIAL_BEARING = frozenset({"dsn", "url"})


def _expected(schema: dict[str, Any]) -> str:
    if "properties" in schema:
        return "one of the keys " + ", ".join(sorted(schema["properties"]))
    return str(schema.get("type", "another value"))




@lru_cache(maxsize=None)
def packaged_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped inside the package."""
    schema: dict[str, Any] = json.loads(resources.files(package).joinpath(name).read_text())
    return schema


@lru_cache(maxsize=None)
def packaged_validator(package: str, name: str) -> jsonschema.protocols.Validator:
    schema = packaged_schema(package, name)
    validator: jsonschema.protocols.Validator = jsonschema.validators.validator_for(schema)(schema)
    return validator
