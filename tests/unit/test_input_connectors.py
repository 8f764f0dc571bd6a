"""Hostile connector files through `hephaestus reconcile`: every file is checked at load, before
any write, so a bad one stops the run with exit 1, the file and field named, no traceback."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hephaestus.cli import run
from tests.connect_double import ConnectDouble

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"


@dataclass
class World:
    root: Path
    double: ConnectDouble
    capsys: pytest.CaptureFixture[str]

    @property
    def folder(self) -> Path:
        return self.root / "connectors/c/sink"

    def write(self, file: str, doc: Any) -> Path:
        path = self.folder / file
        path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
        return path

    def reconcile(self, *extra: str) -> tuple[int, str]:
        code = run(["reconcile", "--auto-approve", "--project", str(self.root / "hephaestus.yaml"), *extra])
        out = self.capsys.readouterr()
        return code, out.out + out.err

    def refused(self, file: str, doc: Any) -> str:
        """Apply (not a dry run) with one good and one bad file: exit 1, nothing applied."""
        self.write(file, doc)
        code, output = self.reconcile()
        assert code == 1, output
        assert self.double.log == [], "refused at load: not one request, so nothing applied"
        assert "Traceback" not in output and "unexpected" not in output
        assert file in output
        return output


def connector(name: str, /, **config: str) -> dict[str, Any]:
    return {"name": name, "config": {"connector.class": SINK, "topics": "t", **config}}


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], served: tuple[ConnectDouble, str]) -> World:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    (tmp_path / "hephaestus.yaml").write_text(
        f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\npolicy: {{stability_window_s: 0}}\n"
    )
    w = World(tmp_path, double, capsys)
    w.folder.mkdir(parents=True)
    w.write("good.json", connector("good"))  # created if the run went ahead
    return w


def test_the_good_file_alone_is_created(world: World) -> None:
    code, output = world.reconcile()
    assert code == 0, output
    assert set(world.double.connectors) == {"good"}


def test_config_name_differing_from_name(world: World) -> None:
    output = world.refused("other.json", connector("other", name="something_else"))
    assert "other.json at config.name: config.name 'something_else' differs from name 'other'" in output


def test_file_name_differing_from_name(world: World) -> None:
    output = world.refused("renamed.json", connector("original"))
    assert "renamed.json at name: file name 'renamed.json' does not match name 'original'" in output


def test_long_names_are_shown_whole_with_the_name_to_use(world: World) -> None:
    """Issue 48: a name is not a value: cut at 40 characters, the two names looked the same and
    the suggested file name was useless. Names are shown whole (values alone are cut)."""
    written = "platform_production_orders_service_sink_" + "v1"
    output = world.refused("platform_production_orders_service_sink_v2.json", connector(written))
    assert (
        "file name 'platform_production_orders_service_sink_v2.json' does not match "
        f"name {written!r}: call it '{written}.json'"
    ) in output


def test_long_config_name_is_shown_whole(world: World) -> None:
    name, other = "a" * 60 + "_left", "a" * 60 + "_right"
    output = world.refused(f"{name}.json", connector(name, name=other))
    assert f"config.name {other!r} differs from name {name!r}" in output


@pytest.mark.parametrize("name", ["..", ".", "a/b", "..\\evil", "tab\there", "nul\x00", "del\x7f", "c1\x85"])
def test_unsafe_names(world: World, name: str) -> None:
    output = world.refused("unsafe.json", connector(name))
    assert "unsafe.json at name: connector name" in output and "is not a safe path segment" in output


def test_a_directory_named_json(world: World) -> None:
    (world.folder / "x.json").mkdir()
    code, output = world.reconcile()
    assert code == 1 and "x.json: is a directory, expected a file" in output
    assert world.double.log == []


def test_non_utf8(world: World) -> None:
    output = world.refused("latin.json", b'{"name": "latin",\n "config": {"topics": "caf\xe9"}}')
    assert "latin.json:2: not UTF-8: byte 0xe9" in output


def test_a_bom_is_accepted(world: World) -> None:
    world.write("bom.json", b"\xef\xbb\xbf" + json.dumps(connector("bom")).encode())
    code, output = world.reconcile()
    assert code == 0, output
    assert set(world.double.connectors) == {"good", "bom"}


def test_deep_nesting(world: World) -> None:
    output = world.refused("deep.json", b"[" * 200000 + b"]" * 200000)
    assert "deep.json: invalid JSON: nested deeper than 64 levels" in output
    output = world.refused("deep2.json", {"name": "deep2", "config": json.loads("[" * 100 + "]" * 100)})
    assert "deep2.json: nested deeper than 64 levels" in output


@pytest.mark.parametrize("doc", [b"[]", b'"x"', b"null", b"42"])
def test_not_an_object(world: World, doc: bytes) -> None:
    output = world.refused("scalar.json", doc)
    assert "scalar.json at name: expected an object with a non-empty string 'name'" in output


def test_duplicate_keys_are_refused(world: World) -> None:
    output = world.refused("dup.json", b'{"name": "dup", "name": "other", "config": {}}')
    assert "dup.json: invalid JSON: duplicate key 'name'" in output


def test_nan_is_refused(world: World) -> None:
    output = world.refused("nan.json", b'{"name": "nan", "config": {"connector.class": NaN}}')
    assert "nan.json: invalid JSON: NaN is not a JSON number" in output


def test_a_huge_value_is_never_echoed(world: World) -> None:
    output = world.refused("big.json", {"name": "big", "config": {"connector.class": SINK, "x": ["y" * 100000]}})
    assert "big.json at config.x: must be a string" in output and "y" * 41 not in output


def test_every_bad_file_is_reported_together(world: World) -> None:
    world.write("one.json", connector("uno"))
    world.write("two.json", b"{")
    code, output = world.reconcile()
    assert code == 1 and "one.json" in output and "two.json:1: invalid JSON" in output
    assert world.double.log == []
