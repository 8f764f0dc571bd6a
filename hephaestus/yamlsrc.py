"""Read input files strictly and within bounds, remembering where every value came from.

Every loader (definitions, project file, table catalogs, connector files) reads through here,
so hostile input always ends as an InputError naming the file (and line), never a traceback:

- Only regular files (not a directory named x.json, not a FIFO), at most MAX_YAML_BYTES (a file
  libyaml cannot read falls to ruamel's pure-Python parser, ~6 s per MiB) or MAX_JSON_BYTES,
  nested at most MAX_DEPTH deep.
- Parser events come from libyaml (ruamel.yaml.clib) when it reads the file as ruamel's own
  parser would, else from ruamel's parser (see parse_yaml); errors are always ruamel's reading.
- UTF-8 only. A leading UTF-8 BOM is accepted and dropped: Windows editors write one and it
  carries no data (RFC 8259 lets JSON parsers ignore it). A lone surrogate escape is refused.
- YAML is read as YAML 1.2 core schema whatever a %YAML directive says (`5:00`, `on` stay
  strings), one document per file. Duplicate keys are an error naming both lines. Anchors and
  aliases are refused, not bounded: nothing here needs them, and without them an alias bomb
  cannot exist. Tags other than !!str, !!map, !!seq are refused; mapping keys are their text.
- JSON: duplicate keys and NaN/Infinity are refused. Messages echo at most CLIP characters of a
  value (jsonschema's embed the whole instance); a name (a key) is shown whole (NAME_CLIP).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from hephaestus.errors import InputError
from hephaestus.jsonschemas import Checker
from hephaestus.jsonschemas import packaged_schema as packaged_schema  # re-exported for its callers
from hephaestus.jsonschemas import packaged_validator as packaged_validator
from hephaestus.yamlevents import CLIP as CLIP  # re-exported for its callers
from hephaestus.yamlevents import MAX_DEPTH as MAX_DEPTH
from hephaestus.yamlevents import Builder, Pos, check_encodable
from hephaestus.yamlevents import PathElem as PathElem
from hephaestus.yamlevents import clip as clip
from hephaestus.yamlevents import core_scalar as core_scalar
from hephaestus.yamlevents import format_path as format_path
from hephaestus.yamlevents import named as named

if TYPE_CHECKING:
    import jsonschema
from hephaestus.secrets import is_sensitive

MAX_YAML_BYTES = 1024 * 1024
MAX_JSON_BYTES = 10 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class YamlDoc:
    """A parsed file: its data and where each value came from (for line numbers)."""

    file: str
    data: Any
    pos: Pos | None = None  # None for JSON: no lines below the file

    def _find(self, path: Sequence[PathElem]) -> tuple[Pos | None, bool]:
        """The deepest position along `path`, and whether the whole path exists."""
        node = self.pos
        for elem in path:
            if node is None or elem not in node.kids:
                return node, False
            node = node.kids[elem]
        return node, True

    def line_of(self, path: Sequence[PathElem]) -> int | None:
        """1-based line of the value at `path`, or of the deepest ancestor that exists."""
        node, _ = self._find(path)
        return None if node is None else node.line

    def key_line(self, path: Sequence[PathElem], key: str) -> int | None:
        """Line of a mapping key itself (for 'unknown key' errors)."""
        node, found = self._find(path)
        line = node.keys.get(key) if found and node is not None else None
        return self.line_of(path) if line is None else line

    def text_of(self, path: Sequence[PathElem]) -> str | None:
        """The text a plain scalar was written as (`010` for the integer 10), else None."""
        node, found = self._find(path)
        return node.text if found and node is not None else None


def read_text(path: Path, limit: int) -> str:
    """The text of a regular file of at most `limit` bytes, UTF-8 (a leading BOM dropped).
    One descriptor, opened without blocking and checked by fstat: a FIFO is refused, never
    waited on (the open-then-check order spares a stat per file: thousands per run)."""
    file = str(path)
    try:
        raw = _read_regular(file, limit)
    except OSError as exc:
        raise InputError(file, f"cannot read: {exc.strerror}") from exc
    if len(raw) > limit:
        raise InputError(file, f"file too large (over {limit} bytes)")
    raw = raw.removeprefix(_BOM)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(file, f"not UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded", line=line) from exc


def _read_regular(file: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes (never more, even if the file grows meanwhile)."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(file, "is a directory, expected a file")
        if not stat.S_ISREG(mode):
            raise InputError(file, "not a regular file")  # a FIFO would block the read forever
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_json(path: Path) -> Any:
    """Parse a JSON file strictly: duplicate keys, NaN, deep nesting are InputErrors."""
    file = str(path)
    text = read_text(path, MAX_JSON_BYTES)
    try:
        data = json.loads(text, object_pairs_hook=partial(_unique_pairs, file), parse_constant=partial(_constant, file))
    except json.JSONDecodeError as exc:
        raise InputError(file, f"invalid JSON: {exc.msg}", line=exc.lineno) from exc
    except RecursionError as exc:
        raise InputError(file, f"invalid JSON: nested deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(file, "invalid JSON: number too long") from exc
    # Too deep needs more than MAX_DEPTH brackets, a lone surrogate a `\\u` escape: two scans of
    # the text spare most files the walk, and strings are only walked when an escape is there.
    # (Reading the depth off the text instead, strings out and innermost pairs removed pass by
    # pass, measured 3x slower than this walk on a 1.4 MB catalog: issue 47.)
    strings = "\\u" in text
    if strings or text.count("{") + text.count("[") > MAX_DEPTH:
        _check_tree(file, data, strings)
    return data


def save_json(path: Path, data: Any) -> None:
    """The writer beside load_json for state files: sorted and indented for diffs, written
    atomically (a temporary file of its own, then a rename) so a crash never leaves half a file
    for the next load to refuse, and two writers never interleave in one temporary file.
    Raises OSError; the caller names what the file is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """One read-modify-write of a state file at a time across processes (the runs of a
    project's clusters each hold their own cluster's lock, and share the file): a flock on the
    file's folder, since the file itself is replaced by each write; released when it closes or
    its process dies. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _unique_pairs(file: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # in C; only a length that differs needs the loop that names the key
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                _refuse(file, f"duplicate key {named(key)}")
            seen.add(key)
    return out


def _constant(file: str, name: str) -> Any:
    return _refuse(file, f"{name} is not a JSON number")


def _refuse(file: str, message: str) -> Any:
    raise InputError(file, f"invalid JSON: {message}")  # not a ValueError: json.loads lets it through


def _check_tree(file: str, data: Any, strings: bool = True) -> None:
    """Depth and (with `strings`) encodability of parsed JSON, level by level, without
    recursion (the data may be deep)."""
    level, depth = [data], 1
    while level:
        if strings:
            for text in (v for v in level if isinstance(v, str)):
                check_encodable(file, text, None)
        containers = [v for v in level if isinstance(v, (dict, list))]
        if containers and depth > MAX_DEPTH:
            raise InputError(file, f"nested deeper than {MAX_DEPTH} levels")
        level = [
            x for v in containers for x in (v if isinstance(v, list) else (*v, *v.values()) if strings else v.values())
        ]
        depth += 1


def load_yaml(path: Path) -> YamlDoc:
    """Parse one YAML file strictly (see the module docstring); errors name file and line."""
    file = str(path)
    text = read_text(path, MAX_YAML_BYTES)
    try:
        return parse_yaml(file, text)
    except MarkedYAMLError as exc:
        line = None if exc.problem_mark is None else exc.problem_mark.line + 1
        raise InputError(file, f"invalid YAML: {cap_message(str(exc.problem))}", line=line) from exc
    except ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise InputError(file, f"invalid YAML: character #x{code:04x} is not allowed", line=line) from exc
    except YAMLError as exc:
        raise InputError(file, f"invalid YAML: {cap_message(str(exc))}") from exc


def parse_yaml(file: str, text: str) -> YamlDoc:
    """libyaml first when installed; ruamel's parser for what libyaml refuses or may read
    otherwise. Raises YAMLError (ruamel's) or InputError (ours)."""
    if _C_PARSER and not _LIBYAML_DIFFERS.search(text):
        try:
            return _build(file, text, pure=False)
        except (YAMLError, InputError):
            pass  # libyaml reads YAML 1.1 (`{t: 5:00}` is an error there): ruamel's parser decides,
            # and any refusal is worded from its reading (the same input, the same message)
    return _build(file, text, pure=True)


def _build(file: str, text: str, pure: bool) -> YamlDoc:
    """Our data from parser events: libyaml's (ruamel.yaml.clib, ~7x faster) or ruamel's own.
    Only events are taken from either, so what a scalar means is ours (YAML 1.2 core) both ways."""
    builder = Builder(file)
    for event in YAML(typ="safe", pure=pure).parse(text):
        builder.feed(event)
    return YamlDoc(file, builder.root, builder.root_pos)


def _has_c_parser() -> bool:
    from importlib.util import find_spec

    return find_spec("_ruamel_yaml") is not None


_C_PARSER = _has_c_parser()
# Where libyaml reads text otherwise than ruamel, found by tests/unit/test_yaml_parsers.py:
# line breaks of YAML 1.1 only (NEL, LS, PS), which it folds; a BOM inside the text, which it
# drops; tabs, taken as spaces where ruamel refuses them; tags (`!`), read more leniently; and
# block scalars (`|`, `>` ending a line or before a comment), whose indentation it reads
# otherwise at the top level. A file with any of these is read by ruamel's parser alone.
_LIBYAML_DIFFERS = re.compile("[\t\x85\u2028\u2029\ufeff!]|[|>][-+0-9]* *(#|$)", re.MULTILINE)


def non_finite(doc: YamlDoc) -> list[InputError]:
    """YAML 1.2 reads `.nan` and `.inf` as numbers, and a JSON Schema bound lets NaN through
    (every comparison with it is false): every number of a document must be finite."""
    found: list[InputError] = []

    def walk(value: Any, path: list[PathElem]) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            found.append(InputError(doc.file, "must be a finite number", format_path(path), doc.line_of(path)))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, [*path, k])
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, [*path, i])

    walk(doc.data, [])
    return found


def schema_errors_of(doc: YamlDoc, validator: Checker) -> list[InputError]:
    """Every JSON Schema violation of `doc`, as errors naming file, line and field path."""
    if validator.valid(doc.data):
        return []
    errors = [e for err in validator.iter_errors(doc.data) for e in _schema_errors(doc, err)]
    return sorted(errors, key=lambda e: (e.line or 0, e.field))


def _schema_errors(doc: YamlDoc, err: jsonschema.ValidationError) -> list[InputError]:
    path = list(err.absolute_path)
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = schema.get("properties", {})
        extra = [k for k in err.instance if k not in allowed]
        listed = ", ".join(sorted(allowed))
        return [
            InputError(
                doc.file,
                f"unknown key {named(k)} (allowed: {listed})",
                field=format_path([*path, k]),
                line=doc.key_line(path, k),
            )
            for k in extra
        ]
    if err.validator == "required" and isinstance(err.instance, dict):
        # Every missing key at once: one run of fixes, not one per run.
        missing = [k for k in schema.get("required", []) if k not in err.instance]
        return [
            InputError(doc.file, f"missing required key {k!r}", field=format_path([*path, k]), line=doc.line_of(path))
            for k in missing
        ]
    where = format_path(path) or "(root)"
    return [InputError(doc.file, _message(err, path, schema), field=where, line=doc.line_of(path))]


def _message(err: jsonschema.ValidationError, path: list[PathElem], schema: dict[str, Any]) -> str:
    means = _PATTERNS_MEAN.get(str(err.validator_value)) if err.validator == "pattern" else None
    if any(isinstance(p, str) and (is_sensitive(p) or p in _CREDENTIAL_BEARING) for p in path):
        # The value may be a secret pasted where a reference belongs: never echo it.
        return f"invalid value (not shown); {means or 'expected ' + _expected(schema)}"
    if means:
        return f"{clip(err.instance)} {means}"
    message = err.message
    full = repr(err.instance)
    if len(full) > CLIP:
        message = message.replace(full, clip(err.instance))
    return cap_message(message)


def cap_message(message: str, limit: int = 300) -> str:
    """At most `limit` characters of a message that may quote a hostile value."""
    return message if len(message) <= limit else message[:limit] + "…"


# Values that may embed credentials (a DSN's password=, a URL's user:pass@).
_CREDENTIAL_BEARING = frozenset({"dsn", "url"})
# What a schema's pattern asks, in words: "does not match '^https?://'" is a regex, and for a
# value not shown it was "expected string", of a string (issue 48).
_PATTERNS_MEAN = {"^https?://": "must start with http:// or https://"}


def _expected(schema: dict[str, Any]) -> str:
    if "properties" in schema:
        return "one of the keys " + ", ".join(sorted(schema["properties"]))
    return str(schema.get("type", "another value"))
