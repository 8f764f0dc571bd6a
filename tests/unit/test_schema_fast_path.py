"""The fast schema check (fastjsonschema) never accepts what jsonschema refuses: the verdict
is jsonschema's, the fast path only lets valid documents skip it (hephaestus.jsonschemas)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hephaestus.jsonschemas import Checker, packaged_schema
from hephaestus.yamlsrc import load_yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = [
    ("hephaestus", "project.schema.json", REPO / "hephaestus.yaml"),
    ("hephaestus.generator", "definitions.schema.json", REPO / "definitions/bob.yaml"),
    ("hephaestus.generator", "definitions.schema.json", REPO / "definitions/lmsdwh.yaml"),
    ("hephaestus.generator", "catalog.schema.json", REPO / "catalogs/bob.json"),
]
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.just(""),
    st.just([]),
    st.just({}),
    st.just("1.5"),
    st.just(["x"]),
    st.just({"unknown": 1}),
    st.just("BAD NAME"),
    st.just(2**40),
)


def example(path: Path) -> Any:
    return json.loads(path.read_text()) if path.suffix == ".json" else load_yaml(path).data


def paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(doc, dict):
        found += [p for k, v in doc.items() for p in paths(v, (*at, k))]
    elif isinstance(doc, list):
        found += [p for i, v in enumerate(doc) for p in paths(v, (*at, i))]
    return found


def mutate(doc: Any, where: tuple[Any, ...], value: Any, how: str) -> Any:
    out = copy.deepcopy(doc)
    if not where:
        return value
    parent = out
    for step in where[:-1]:
        parent = parent[step]
    if how == "delete" and isinstance(parent, dict):
        del parent[where[-1]]
    elif how == "add" and isinstance(parent, dict):
        parent[f"{where[-1]}_extra"] = value
    else:
        parent[where[-1]] = value
    return out


@pytest.mark.parametrize(("package", "name", "source"), SCHEMAS, ids=lambda v: getattr(v, "name", str(v)))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fast_valid_implies_jsonschema_valid(package: str, name: str, source: Path, data: st.DataObject) -> None:
    schema = packaged_schema(package, name)
    doc = example(source)
    where = data.draw(st.sampled_from(paths(doc)))
    mutated = mutate(doc, where, data.draw(ODD), data.draw(st.sampled_from(["replace", "delete", "add"])))
    full = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(mutated))
    before = copy.deepcopy(mutated)
    assert Checker(schema).valid(mutated) is (not full), (where, full[:1])
    assert mutated == before, "a check never changes what it checks (no schema defaults written in)"


@pytest.mark.parametrize(("package", "name", "source"), SCHEMAS, ids=lambda v: getattr(v, "name", str(v)))
def test_the_examples_pass_both(package: str, name: str, source: Path) -> None:
    schema = packaged_schema(package, name)
    doc = example(source)
    before = copy.deepcopy(doc)
    assert Checker(schema).valid(doc) and not list(Checker(schema).iter_errors(doc))
    assert doc == before, "a check never changes what it checks (no schema defaults written in)"
