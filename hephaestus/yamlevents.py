"""YAML parser events to data, remembering where every value was written (the tree builder
under `yamlsrc`): YAML 1.2 core scalars, no anchors or aliases, no tags but !!str/!!map/!!seq,
duplicate keys naming both lines, at most MAX_DEPTH deep, without recursion."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import events as ev

from hephaestus.errors import InputError

PathElem = str | int
MAX_DEPTH = 64
CLIP = 40
# A name (connector, file, key, table) is shown whole: cut, two names that differ at the end
# looked alike (issue 48). Only one longer than any real name (a file name is at most 255 bytes
# on ext4, XFS, APFS and NTFS; Kafka's topics 249, PostgreSQL's 63) is cut: hostile input.
NAME_CLIP = 255


@dataclass(slots=True)
class Pos:
    """Where one value was written: its line, its plain-scalar text, its children and keys."""

    line: int | None
    text: str | None = None  # a plain scalar's text as written; None for the rest
    kids: dict[PathElem, Pos] = field(default_factory=dict)
    keys: dict[str, int | None] = field(default_factory=dict)  # a mapping's keys -> their lines


def clip(value: object, limit: int = CLIP) -> str:
    """repr of a value cut to `limit` characters: hostile values are never echoed whole."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else repr(value[:limit]) + "…"
    shown = _REPR.repr(value)  # bounded: a 1 MiB list is never turned into a string
    return shown if len(shown) <= limit else shown[:limit] + "…"


def named(name: str) -> str:
    """repr of a name, whole: only a value is cut at CLIP (see NAME_CLIP)."""
    return clip(name, NAME_CLIP)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist = 2, 3, 3
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = CLIP + 2


def check_encodable(file: str, text: str, line: int | None) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(file, "a lone surrogate escape (\\ud800-\\udfff) cannot be written out", line=line) from exc


@dataclass(slots=True)
class _Frame:
    """A mapping or sequence being read; for a mapping, the key waiting for its value."""

    value: dict[str, Any] | list[Any]
    pos: Pos
    path: tuple[PathElem, ...]
    key: str | None = None


_STR = "tag:yaml.org,2002:str"
_COLLECTION_TAGS = {None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


class Builder:
    """Builds data from parser events, without recursion (ruamel's composer recurses)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.stack: list[_Frame] = []
        self.root: Any = None
        self.root_pos: Pos | None = None
        self.documents = 0
        self.line: int | None = None  # the line of the event before

    def _error(self, message: str, line: int | None, path: Sequence[PathElem] = ()) -> InputError:
        return InputError(self.file, message, field=format_path(path), line=line)

    def feed(self, event: ev.Event) -> None:
        line = None if event.start_mark is None else event.start_mark.line + 1
        if isinstance(event, ev.ScalarEvent) and not event.value and not event.style and event.tag is None:
            line = self.line  # an empty value is where its key (or `-`) was: parsers place it apart
        self.line = line
        if isinstance(event, ev.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise self._error("anchors and aliases (&, *) are not supported: write the value out", line)
        if isinstance(event, ev.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self._error("one YAML document per file (found a second '---')", line)
        elif isinstance(event, ev.ScalarEvent):
            self._scalar(event, line)
        elif isinstance(event, (ev.MappingStartEvent, ev.SequenceStartEvent)):
            self._open(event, line)
        elif isinstance(event, ev.CollectionEndEvent):
            self.stack.pop()

    def _awaiting_key(self) -> _Frame | None:
        top = self.stack[-1] if self.stack else None
        return top if top is not None and isinstance(top.value, dict) and top.key is None else None

    def _scalar(self, event: ev.ScalarEvent, line: int | None) -> None:
        check_encodable(self.file, event.value, line)
        frame = self._awaiting_key()
        if frame is not None:
            self._key(frame, event.value, line)
        else:
            self._place(*self._resolve(event, line), line)

    def _resolve(self, event: ev.ScalarEvent, line: int | None) -> tuple[Any, str | None]:
        if event.tag not in (None, "!", _STR):
            raise self._error(f"tag {clip(event.tag)} is not supported (quote a string)", line, self._here())
        if event.tag is not None or event.style:  # plain: None from ruamel, "" from libyaml
            return event.value, None  # quoted, block, !!str or `!`: a string as written
        try:
            return core_scalar(event.value), event.value
        except ValueError as exc:
            raise self._error(f"number {clip(event.value)} is too long", line, self._here()) from exc

    def _open(self, event: ev.MappingStartEvent | ev.SequenceStartEvent, line: int | None) -> None:
        here = self._here()
        if self._awaiting_key() is not None:
            raise self._error("a mapping key must be a plain value (complex keys are not supported)", line, here)
        if event.tag not in _COLLECTION_TAGS:
            raise self._error(f"tag {clip(event.tag)} is not supported", line, here)
        if len(self.stack) >= MAX_DEPTH:
            raise self._error(f"nested deeper than {MAX_DEPTH} levels", line)  # no field: it is as deep
        container: dict[str, Any] | list[Any] = {} if isinstance(event, ev.MappingStartEvent) else []
        pos = self._place(container, None, line)
        self.stack.append(_Frame(container, pos, here))

    def _here(self) -> tuple[PathElem, ...]:
        """The path of the value about to be placed."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        return (*top.path, (top.key or "") if isinstance(top.value, dict) else len(top.value))

    def _key(self, frame: _Frame, key: str, line: int | None) -> None:
        if key in frame.pos.keys:
            first = frame.pos.keys[key]
            raise self._error(
                f"duplicate key {named(key)} (first at line {first}): a second one would silently replace the first",
                line,
                (*frame.path, key),
            )
        frame.pos.keys[key] = line
        frame.key = key

    def _place(self, value: Any, text: str | None, line: int | None) -> Pos:
        pos = Pos(line, text)
        if not self.stack:
            self.root, self.root_pos = value, pos
            return pos
        top = self.stack[-1]
        if isinstance(top.value, dict):
            assert top.key is not None
            top.value[top.key] = value
            top.pos.kids[top.key] = pos
            top.key = None
        else:
            top.pos.kids[len(top.value)] = pos
            top.value.append(value)
        return pos


# The YAML 1.2 core schema's plain scalars (https://yaml.org/spec/1.2.2/#1023-core-schema).
_CORE: list[tuple[re.Pattern[str], Callable[[str], Any]]] = [
    (re.compile(r"~|null|Null|NULL|"), lambda t: None),
    (re.compile(r"true|True|TRUE"), lambda t: True),
    (re.compile(r"false|False|FALSE"), lambda t: False),
    (re.compile(r"[-+]?[0-9]+"), int),
    (re.compile(r"0o[0-7]+"), lambda t: int(t[2:], 8)),
    (re.compile(r"0x[0-9a-fA-F]+"), lambda t: int(t[2:], 16)),
    (re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"), float),
    (re.compile(r"[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"), lambda t: float(t.replace(".", "", 1))),
]


def core_scalar(text: str) -> Any:
    """A plain scalar under the YAML 1.2 core schema (ValueError: an integer too long)."""
    for pattern, convert in _CORE:
        if pattern.fullmatch(text):
            return convert(text)
    return text


def format_path(path: Sequence[PathElem]) -> str:
    """`pipelines[0].sinks[1].database` style, the way users read it."""
    out = ""
    for elem in path:  # a key is a name: whole, unless longer than any real name
        name = elem if isinstance(elem, int) or len(elem) <= NAME_CLIP else elem[:NAME_CLIP] + "…"
        out += f"[{name}]" if isinstance(name, int) else (f".{name}" if out else name)
    return out
