"""Property-based fuzz of every input loader: definitions, table catalogs, the project file,
connector files. From valid examples (the shipped files), structural mutations (drop, duplicate,
retype and add keys, deep nesting, anchors and aliases) and byte-level ones (random bytes,
truncation, invalid UTF-8, a BOM). Whatever the input, a loader

- raises nothing but HephaestusError (InputError / InputErrors): never a traceback;
- writes nothing (the scratch directory holds exactly the inputs afterwards);
- sends nothing (sockets refuse to connect; the cluster URL is 127.0.0.1:9 anyway).

Each test prints how many examples ran (`pytest -s` shows it) and records it as a property.
No example database is kept (it would be written into the repository): a failure prints the
`@reproduce_failure` blob instead.
"""

from __future__ import annotations

import json
import re
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hephaestus.errors import HephaestusError
from hephaestus.fleet.desired import load_desired
from hephaestus.generator.catalogs import load_catalogs
from hephaestus.generator.definitions import load_definitions
from hephaestus.project import Cluster, load_project
from hephaestus.yamlsrc import core_scalar, load_json, load_yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = 200
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- a tree that can hold what a dict cannot: duplicate keys, anchors, aliases -----------------


class Map(list[list[Any]]):
    """A mapping as [key, value] pairs, so a key can appear twice."""


class Seq(list[Any]):
    pass


@dataclass
class Anchor:
    name: str
    node: Any


@dataclass
class Alias:
    name: str


@dataclass
class Deep:
    """`value` inside `depth` sequences or single-key mappings (emitted flat: no recursion)."""

    depth: int
    mapping: bool
    value: Any


def tree(value: Any) -> Any:
    if isinstance(value, dict):
        return Map([[k, tree(v)] for k, v in value.items()])
    if isinstance(value, list):
        return Seq(tree(v) for v in value)
    return value


def containers(node: Any) -> Iterator[Map | Seq]:
    """Every mapping and sequence, without recursion (a mutation may nest hundreds deep)."""
    todo = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, Anchor):
            todo.append(node.node)
        elif isinstance(node, Map):
            yield node
            todo += [v for _, v in node]
        elif isinstance(node, Seq):
            yield node
            todo += list(node)


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/-]*")


def emit(node: Any, yaml: bool) -> str:
    """Flow-style YAML (some scalars plain, as people write them) or JSON, from a tree."""
    if isinstance(node, Map):
        return "{" + ", ".join(f"{emit(k, yaml)}: {emit(v, yaml)}" for k, v in node) + "}"
    if isinstance(node, Seq):
        return "[" + ", ".join(emit(v, yaml) for v in node) + "]"
    if isinstance(node, Anchor):
        return f"&{node.name} {emit(node.node, yaml)}" if yaml else emit(node.node, yaml)
    if isinstance(node, Alias):
        return f"*{node.name}"  # in JSON: invalid, which is fine too
    if isinstance(node, Deep):
        opening, closing = ('{"k": ', "}") if node.mapping else ("[", "]")
        return opening * node.depth + emit(node.value, yaml) + closing * node.depth
    if yaml and isinstance(node, str) and _PLAIN.fullmatch(node) and core_scalar(node) == node:
        return node
    return json.dumps(node)


# --- mutations ---------------------------------------------------------------------------------

NASTY = [
    "5:00",
    "010",
    "0x1F",
    "1e3",
    "on",
    "~",
    "",
    ".",
    "..",
    "a/b",
    "a\\b",
    "tab\there",
    "x" * 3000,
    "{{ .Values.global.environment }}_x",
    "\u202e",
    "\x00",
    "ß",
    "${file:/etc/passwd:x}",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
    st.sampled_from(NASTY),
    st.integers(min_value=10**30, max_value=10**40),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(Seq),
        st.dictionaries(st.text(max_size=10), inner, max_size=3).map(lambda d: Map([[k, v] for k, v in d.items()])),
    ),
    max_leaves=6,
)
keys = st.one_of(
    st.sampled_from(
        [
            "name",
            "config",
            "cluster",
            "policy",
            "database",
            "tables",
            "pipelines",
            "sinks",
            "options",
            "clusters",
            "connectors",
            "url",
            "x" * 2000,
        ]
    ),
    st.text(max_size=12),
)


def _pick(data: st.DataObject, root: Any, nonempty: bool = True) -> Map | Seq | None:
    found = [c for c in containers(root) if c or not nonempty]
    return data.draw(st.sampled_from(found)) if found else None


def _slot(data: st.DataObject, node: Map | Seq) -> tuple[int, Any]:
    i = data.draw(st.integers(0, len(node) - 1))
    return i, node[i][1] if isinstance(node, Map) else node[i]


def _set(node: Map | Seq, i: int, value: Any) -> None:
    if isinstance(node, Map):
        node[i][1] = value
    else:
        node[i] = value


def mutate(data: st.DataObject, root: Any, yaml: bool) -> Any:
    ops = ["drop", "duplicate", "retype", "nest", "add"] + (["alias", "bomb"] if yaml else [])
    for _ in range(data.draw(st.integers(0, 4))):
        op = data.draw(st.sampled_from(ops))
        node = _pick(data, root, nonempty=op != "add")
        if node is None:
            return data.draw(values)
        if op == "add":
            node.append([data.draw(keys), data.draw(values)] if isinstance(node, Map) else data.draw(values))
            continue
        i, value = _slot(data, node)
        if op == "drop":
            del node[i]
        elif op == "duplicate" and isinstance(node, Map):
            again = [node[i][0], data.draw(st.one_of(st.just(value), values))]
            node.insert(data.draw(st.integers(0, len(node))), again)
        elif op == "retype":
            _set(node, i, data.draw(values))
        elif op == "nest":
            depth = data.draw(st.sampled_from([1, 5, 62, 63, 64, 65, 200, 100000]))
            _set(node, i, Deep(depth, data.draw(st.booleans()), value))
        elif op == "alias":
            other, j = _pick(data, root), 0
            _set(node, i, Anchor("a", value))
            if other is not None:
                j, _ = _slot(data, other)
                _set(other, j, Alias("a"))
        elif op == "bomb":
            lol: Any = Anchor("l0", Seq(["lol"] * 9))
            for level in range(1, 9):
                lol = Anchor(f"l{level}", Seq([lol] + [Alias(f"l{level - 1}")] * 8))
            _set(node, i, lol)
    return root


def mutate_bytes(data: st.DataObject, raw: bytes) -> bytes:
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "invalid", "bom", "repeat"]))
        at = data.draw(st.integers(0, len(raw)))
        if op == "flip" and raw:
            at = min(at, len(raw) - 1)
            raw = raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1 :]
        elif op == "insert":
            raw = raw[:at] + data.draw(st.binary(min_size=1, max_size=8)) + raw[at:]
        elif op == "delete":
            raw = raw[:at] + raw[at + data.draw(st.integers(1, 16)) :]
        elif op == "truncate":
            raw = raw[:at]
        elif op == "invalid":
            raw = raw[:at] + data.draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82"])) + raw[at:]
        elif op == "bom":
            raw = b"\xef\xbb\xbf" + raw
        elif op == "repeat":
            line = raw[at : at + data.draw(st.integers(1, 40))]
            raw = raw[:at] + line + line + raw[at:]
    return raw


def input_bytes(data: st.DataObject, examples: list[Path], yaml: bool) -> bytes:
    """A shipped file, as is or mutated (its tree or its bytes or both)."""
    path = data.draw(st.sampled_from(examples))
    raw = path.read_bytes()
    if data.draw(st.booleans()):
        parsed = load_yaml(path).data if yaml else load_json(path)
        raw = emit(mutate(data, tree(parsed), yaml), yaml).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans()):
        raw = mutate_bytes(data, raw)
    return raw


# --- the property --------------------------------------------------------------------------------


@contextmanager
def no_network() -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a loader tried the network: {args!r}")

    with (
        mock.patch.object(socket.socket, "connect", refuse),
        mock.patch.object(socket, "create_connection", refuse),
        mock.patch.object(socket, "getaddrinfo", refuse),
    ):
        yield


def tree_of(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def holds(place: Callable[[Path, bytes], Callable[[], object]], raw: bytes, directory: bool = False) -> None:
    """Put the input in a fresh scratch dir; loading it raises only HephaestusError, writes and sends nothing."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        load = place(root, raw)
        before = tree_of(root)
        with no_network():
            try:
                load()
            except HephaestusError as exc:
                assert str(exc), "an error says what"
        assert tree_of(root) == before, "a loader wrote something"


def fuzz(
    name: str,
    record_property: Callable[[str, object], None],
    place: Callable[[Path, bytes], Callable[[], object]],
    examples: list[Path],
    yaml: bool,
) -> None:
    ran = 0

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        nonlocal ran
        ran += 1
        holds(place, input_bytes(data, examples, yaml))

    prop()
    print(f"fuzz {name}: {ran} examples")
    record_property("examples", ran)
    assert ran >= EXAMPLES // 2, "most examples ran (a few may be rejected as duplicates)"


def _definitions(root: Path, raw: bytes) -> Callable[[], object]:
    (root / "definitions").mkdir()
    (root / "definitions/bob.yaml").write_bytes(raw)
    return lambda: load_definitions(root / "definitions")


def _snapshots(root: Path, raw: bytes) -> Callable[[], object]:
    (root / "catalogs").mkdir()
    (root / "catalogs/bob.json").write_bytes(raw)
    return lambda: load_catalogs(root / "catalogs")


def _project(root: Path, raw: bytes) -> Callable[[], object]:
    (root / "hephaestus.yaml").write_bytes(raw)
    return lambda: load_project(root / "hephaestus.yaml")


CONNECTOR = "local_manabie_bob_to_auth_users_sink_connector"


def _connectors(root: Path, raw: bytes) -> Callable[[], object]:
    folder = root / "connectors/c"
    (folder / "sink").mkdir(parents=True)
    (folder / "sink" / f"{CONNECTOR}.json").write_bytes(raw)
    cluster = Cluster("c", "http://127.0.0.1:9", folder, helm_values={"environment": "local"})
    return lambda: load_desired(cluster, include_custom=True)


def test_fuzz_definitions(record_property: Callable[[str, object], None]) -> None:
    fuzz("definitions", record_property, _definitions, sorted((REPO / "definitions").glob("*.yaml")), yaml=True)


def test_fuzz_schema_snapshots(record_property: Callable[[str, object], None]) -> None:
    examples = [p for p in sorted((REPO / "catalogs").glob("*.json"))]
    fuzz("table catalogs", record_property, _snapshots, examples, yaml=False)


def test_fuzz_project_file(record_property: Callable[[str, object], None]) -> None:
    fuzz("project file", record_property, _project, [REPO / "hephaestus.yaml"], yaml=True)


def test_fuzz_connector_files(record_property: Callable[[str, object], None]) -> None:
    examples = [
        REPO / f"connectors/platforms/sink/{CONNECTOR}.json",
        REPO / "connectors/platforms/source/local_manabie_bob_source_connector.json",
    ]
    fuzz("connector files", record_property, _connectors, examples, yaml=False)


@pytest.mark.parametrize(
    ("place", "source"),
    [
        (_definitions, REPO / "definitions/bob.yaml"),
        (_snapshots, REPO / "catalogs/bob.json"),
        (_project, REPO / "hephaestus.yaml"),
        (_connectors, REPO / f"connectors/platforms/sink/{CONNECTOR}.json"),
    ],
)
def test_the_unmutated_examples_load(place: Callable[[Path, bytes], Callable[[], object]], source: Path) -> None:
    """The fuzz starts from valid inputs: each loads as shipped (so mutations reach deep)."""
    with tempfile.TemporaryDirectory() as scratch:
        assert place(Path(scratch), source.read_bytes())()
