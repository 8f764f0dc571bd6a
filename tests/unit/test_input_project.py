"""A hostile project file (hephaestus.yaml) through `hephaestus reconcile`: exit 1 with the file
and line named, before any request to Connect (so nothing is applied), no traceback."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from hephaestus.cli import run
from hephaestus.errors import InputError
from hephaestus.project import load_project
from hephaestus.state.ownership import OwnershipFile, claims_of
from tests.connect_double import ConnectDouble

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"


@dataclass
class World:
    root: Path
    double: ConnectDouble
    url: str
    capsys: pytest.CaptureFixture[str]

    def project(self, text: str | bytes) -> Path:
        path = self.root / "hephaestus.yaml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    def reconcile(self, *extra: str) -> tuple[int, str]:
        code = run(["reconcile", "--auto-approve", "--project", str(self.root / "hephaestus.yaml"), *extra])
        out = self.capsys.readouterr()
        return code, out.out + out.err

    def refused(self, text: str | bytes, *extra: str) -> str:
        self.project(text)
        code, output = self.reconcile(*extra)
        assert code == 1, output
        assert self.double.log == [], "not one request: nothing read, nothing applied"
        assert "Traceback" not in output and "unexpected" not in output
        assert "hephaestus.yaml" in output
        return output


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], served: tuple[ConnectDouble, str]) -> World:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    double.add("gone", {"connector.class": SINK, "topics": "old"})  # a delete the guard holds back
    OwnershipFile(tmp_path / ".hephaestus/ownership.json").claim("default", "c", claims_of(["gone"], "*", "test", "r0"))
    folder = tmp_path / "connectors/c/sink"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps({"name": "a", "config": {"connector.class": SINK, "topics": "t"}}))
    return World(tmp_path, double, url, capsys)


def good(world: World) -> str:
    return f"clusters:\n  c:\n    url: {world.url}\n    connectors: connectors/c\npolicy:\n  max_deletes: 0\n"


def test_the_good_project_plans_and_its_guard_holds(world: World) -> None:
    world.project(good(world))
    code, output = world.reconcile()
    assert code == 2 and "+ create a" in output and "refused: would delete 1" in output
    assert world.double.writes() == []


def test_a_second_policy_block_is_refused_naming_both_lines(world: World) -> None:
    # The adversary's attack: a later `policy:` that lifts the delete guard.
    output = world.refused(good(world) + "policy:\n  max_deletes: 1000\n  max_delete_share: 1.0\n")
    assert "hephaestus.yaml:7 at policy: duplicate key 'policy' (first at line 5)" in output
    assert set(world.double.connectors) == {"gone"}, "nothing deleted, nothing created"


def test_duplicate_clusters_are_refused(world: World) -> None:
    text = good(world).replace("policy:", "  c:\n    url: http://127.0.0.1:9\n    connectors: x\npolicy:")
    output = world.refused(text, "--dry-run")
    assert "hephaestus.yaml:5 at clusters.c: duplicate key 'c' (first at line 2)" in output


def test_an_alias_bomb_in_the_project_file(world: World) -> None:
    bomb = "x-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"x-{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
    )
    output = world.refused(bomb + good(world), "--dry-run")
    assert "hephaestus.yaml:1: anchors and aliases (&, *) are not supported" in output
    assert len(output) < 500


def test_every_missing_key_of_a_cluster_is_listed(world: World) -> None:
    output = world.refused("clusters:\n  c: {}\n", "--dry-run")
    assert "at clusters.c.connectors: missing required key 'connectors'" in output


def test_non_utf8_and_directory_project_files(world: World) -> None:
    output = world.refused(good(world).encode() + b"# caf\xe9\n", "--dry-run")
    assert "hephaestus.yaml:7: not UTF-8" in output
    (world.root / "hephaestus.yaml").unlink()
    (world.root / "hephaestus.yaml").mkdir()
    code, output = world.reconcile("--dry-run")
    assert code == 1 and "is a directory" in output and world.double.log == []  # click's check
    with pytest.raises(InputError, match="hephaestus.yaml: is a directory, expected a file"):
        load_project(world.root / "hephaestus.yaml")  # and the loader's own, for other callers


def test_a_bom_is_accepted(world: World) -> None:
    world.project(b"\xef\xbb\xbf" + good(world).encode())
    code, output = world.reconcile("--dry-run")
    assert code == 2 and "+ create a" in output and "refused" in output, output


def test_deep_nesting_in_the_project_file(world: World) -> None:
    output = world.refused(good(world) + "heal: " + "{a: " * 200 + "1" + "}" * 200 + "\n", "--dry-run")
    assert "hephaestus.yaml:7: nested deeper than 64 levels" in output


def test_a_pasted_secret_is_never_echoed(world: World) -> None:
    text = good(world).replace("    connectors:", "    password: hunter2-" + "s" * 100 + "\n    connectors:")
    output = world.refused(text, "--dry-run")
    assert "hunter2" not in output


@pytest.mark.parametrize("url", ["connect:8083", "localhost:8083", "ftp://connect:8083", "admin:hunter2@connect:8083"])
def test_a_url_without_http_says_so(world: World, url: str) -> None:
    """Issue 48: it said "expected string" of a string. The value is still not shown: a URL
    written without its scheme may hold a password the redactor's URL shape does not catch."""
    text = good(world).replace(world.url, url)
    output = world.refused(text, "--dry-run")
    said = "hephaestus.yaml:3 at clusters.c.url: invalid value (not shown); must start with http:// or https://"
    assert said in output
    assert "hunter2" not in output and "expected string" not in output


def test_a_url_from_url_env_without_http_says_so(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEPH_ISSUE48_CONNECT_URL", "connect:8083")
    text = good(world).replace(f"url: {world.url}", "url_env: HEPH_ISSUE48_CONNECT_URL")
    output = world.refused(text, "--dry-run")
    said = "hephaestus.yaml at clusters.c.url_env: HEPH_ISSUE48_CONNECT_URL must start with http:// or https://"
    assert said in output and "connect:8083" not in output


def test_a_schema_registry_url_without_http_says_so(world: World) -> None:
    text = good(world).replace("    connectors:", "    schema_registry_url: registry:8081\n    connectors:")
    output = world.refused(text, "--dry-run")
    assert "at clusters.c.schema_registry_url: " in output and "must start with http:// or https://" in output


@pytest.mark.parametrize("path", ["/connectors", "/connectors/"])
def test_a_url_ending_in_connectors_is_refused_before_any_request(world: World, path: str) -> None:
    """Issue 48: hephaestus adds /connectors itself; the run ended "no connector 'None'"."""
    output = world.refused(good(world).replace(world.url, world.url + path), "--dry-run")
    said = "hephaestus.yaml at clusters.c.url: must be the Kafka Connect REST API's base URL: drop the /connectors"
    assert said in output and "None" not in output
