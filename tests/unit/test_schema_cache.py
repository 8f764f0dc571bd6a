"""jsonschemas.compiled (issue 47): fastjsonschema's code kept in the user's cache by the
schema's hash, read back on the next start; never read from a file others could have written;
a damaged or unwritable cache costs only the compile."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest

from hephaestus import jsonschemas
from hephaestus.jsonschemas import compiled, packaged_schema

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HEPHAESTUS_CACHE_DIR", str(folder))
    return folder


def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = fastjsonschema.compile_to_code

    def spy(*args: Any, **kwargs: Any) -> str:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fastjsonschema, "compile_to_code", spy)
    return calls


def verdict(validate: Any, data: Any) -> bool:
    try:
        validate(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def test_the_second_start_reads_the_code_from_the_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting(monkeypatch)
    first, second = compiled(SCHEMA), compiled(SCHEMA)
    assert calls == [1] and len(list(cache.glob("schema-*.marshal"))) == 1
    for data in ({"n": 1}, {"n": 0}, {}, {"n": "1"}, []):
        assert verdict(first, data) == verdict(second, data) == verdict(fastjsonschema.compile(SCHEMA), data)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"


def test_a_changed_schema_is_a_new_file_never_the_stale_one(cache: Path) -> None:
    assert not verdict(compiled(SCHEMA), {"n": 0})
    looser = {**SCHEMA, "properties": {"n": {"type": "integer"}}}
    assert verdict(compiled(looser), {"n": 0}) and len(list(cache.glob("schema-*.marshal"))) == 2


def test_a_file_others_could_write_is_not_read(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled(SCHEMA)
    (path,) = cache.glob("schema-*.marshal")
    os.chmod(path, 0o666)
    calls = counting(monkeypatch)
    compiled(SCHEMA)
    assert calls == [1]


def test_a_damaged_file_is_compiled_again_and_replaced(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled(SCHEMA)
    (path,) = cache.glob("schema-*.marshal")
    path.write_bytes(b"\x00not marshal")
    calls = counting(monkeypatch)
    assert not verdict(compiled(SCHEMA), {"n": 0}) and calls == [1]
    assert path.read_bytes() != b"\x00not marshal"


def test_an_unwritable_cache_costs_only_the_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    monkeypatch.setenv("HEPHAESTUS_CACHE_DIR", str(blocked / "cache"))
    assert verdict(compiled(SCHEMA), {"n": 2})


def test_the_default_folder_is_the_users_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HEPHAESTUS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert jsonschemas.cache_dir() == tmp_path / "hephaestus"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert jsonschemas.cache_dir() == Path.home() / ".cache/hephaestus"


def test_every_packaged_schema_compiles_through_the_cache(cache: Path) -> None:
    for package, name in jsonschemas.PACKAGED:
        schema = packaged_schema(package, name)
        before = copy.deepcopy(schema)
        assert callable(compiled(schema)) and callable(compiled(schema))
        assert schema == before, "fastjsonschema rewrites $refs in place: it gets a copy"
    assert len(list(cache.glob("schema-*.marshal"))) == 4


def test_the_images_build_warms_every_packaged_schema(tmp_path: Path) -> None:
    """`python -m hephaestus.jsonschemas` (the Dockerfile's build stage) leaves one file per schema."""
    import subprocess
    import sys

    env = {**os.environ, "HEPHAESTUS_CACHE_DIR": str(tmp_path / "built")}
    proc = subprocess.run(
        [sys.executable, "-m", "hephaestus.jsonschemas"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{len(jsonschemas.PACKAGED)} schema validators in ")
    assert len(list((tmp_path / "built").glob("schema-*.marshal"))) == len(jsonschemas.PACKAGED)
