"""Load YAML while remembering where every value came from, so errors can name a line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml

from hephaestus.errors import InputError

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
