"""Plugin versions as Kafka Connect 4.1+ resolves them (fleet.plugins, issue 50): Maven's order,
a pin's requirement (PluginVersionUtils: none or `latest` the newest, a plain version exactly
it, a Maven range the newest inside), skew between workers, the workers a pin finds nothing on."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hephaestus.fleet.plugins import Skew, Workers, findings, lacking, pins, skew
from hephaestus.versions import compare, requirement, version_key

HELD = ["3.4.1.Final", "3.5.2.Final", "3.6.1.Final", "3.6.0.CR1"]


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("3.6.1.Final", "3.5.2.Final", 1),
        ("10.8.4", "9.0", 1),
        ("3.6", "3.6.0.Final", 0),
        ("3.6.1.CR1", "3.6.1.Final", -1),
        ("3.6.1", "3.6.1.1", -1),
        ("1.0-SNAPSHOT", "1.0", -1),
        ("1.0.Alpha2", "1.0.Beta1", -1),
        ("1.0.sp1", "1.0", 1),
        ("4.3.1", "4.3.1", 0),
    ],
)
def test_versions_are_ordered_as_maven_orders_them(a: str, b: str, order: int) -> None:
    assert compare(a, b) == order and compare(b, a) == -order


@given(st.lists(st.integers(0, 30), min_size=1, max_size=4), st.lists(st.integers(0, 30), min_size=1, max_size=4))
def test_release_numbers_compare_as_their_numbers_do(x: list[int], y: list[int]) -> None:
    def padded(v: list[int]) -> list[int]:
        return v + [0] * (4 - len(v))

    expected = (padded(x) > padded(y)) - (padded(x) < padded(y))
    assert compare(".".join(map(str, x)), ".".join(map(str, y))) == expected


@pytest.mark.parametrize(
    ("spec", "runs"),
    [
        (None, "3.6.1.Final"),
        ("latest", "3.6.1.Final"),
        ("", "3.6.1.Final"),
        ("3.5.2.Final", "3.5.2.Final"),
        ("3.5.2", "3.5.2.Final"),  # the same version, spelled shorter
        ("3.5.3.Final", None),  # a plain version is a hard requirement: no nearest
        ("[3.5,3.6)", "3.6.0.CR1"),  # Maven: a pre-release of 3.6 is below 3.6, so inside
        ("[3.5,3.6.0.CR1)", "3.5.2.Final"),
        ("[3.6,)", "3.6.1.Final"),
        ("(,3.5]", "3.4.1.Final"),
        ("(3.4.1.Final,3.5.2.Final]", "3.5.2.Final"),
        ("[3.6.0.CR1]", "3.6.0.CR1"),
        ("[1.0,2.0),[3.4,3.5)", "3.4.1.Final"),
        ("[4.0,)", None),
    ],
)
def test_a_pin_resolves_to_the_version_connect_would_run(spec: str | None, runs: str | None) -> None:
    assert requirement(spec).chosen(HELD) == runs


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("[3.5", "is not a version nor a range"),
        ("[3.5,3.6", "is not a version nor a range"),
        ("[3.5,3.6),", "is not a version nor a range"),
        ("3.5 3.6", "is not a version nor a range"),
        ("x]", "is not a version nor a range"),
        ("[4,3)", "its upper end is below its lower end"),
        ("(3.5)", "a one-version range is written [VERSION]"),
        ("[1,2,3]", "a range has two ends"),
    ],
)
def test_a_pin_connect_would_refuse_is_refused_naming_it(spec: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)) as caught:
        requirement(spec)
    assert repr(spec) in str(caught.value)


def test_skew_is_a_class_workers_hold_in_different_versions() -> None:
    pg = "io.debezium.connector.postgresql.PostgresConnector"
    same = {"w1": {pg: frozenset({"3.6.1.Final"})}, "w2": {pg: frozenset({"3.6.1.Final"})}}
    assert skew(same) == ()
    both = {"w1": {pg: frozenset({"3.5.2.Final", "3.6.1.Final"})}, "w2": {pg: frozenset({"3.6.1.Final"})}}
    (found,) = skew(both)
    assert found == Skew(pg, {"w1": frozenset({"3.5.2.Final", "3.6.1.Final"}), "w2": frozenset({"3.6.1.Final"})})
    assert found.describe() == f"{pg} differs between workers (w1: 3.5.2.Final, 3.6.1.Final; w2: 3.6.1.Final)"
    (missing,) = skew({"w1": {pg: frozenset({"3.6.1.Final"})}, "w2": {}})
    assert missing.describe().endswith("(w1: 3.6.1.Final; w2: none)")


def test_a_pin_names_the_workers_it_finds_nothing_on() -> None:
    pg = "io.debezium.connector.postgresql.PostgresConnector"
    inventory = {"w1": {pg: frozenset({"3.5.2.Final", "3.6.1.Final"})}, "w2": {pg: frozenset({"3.6.1.Final"})}}
    assert lacking(inventory, pg, "3.5.2.Final") == ("w2",)
    assert lacking(inventory, pg, "[3.6,)") == ()
    assert lacking(inventory, "no.Such", "latest") == ("w1", "w2")


def test_the_pins_a_config_sets_name_the_class_they_pin() -> None:
    config = {
        "connector.class": "C",
        "connector.plugin.version": " 3.6.1.Final ",
        "value.converter": "V",
        "value.converter.plugin.version": "[4.0,)",
        "key.converter.plugin.version": "4.3.1",  # the worker's default converter: unknown here
        "header.converter.plugin.version": "",
    }
    assert pins(config) == {
        "connector.plugin.version": ("C", "3.6.1.Final"),
        "value.converter.plugin.version": ("V", "[4.0,)"),
        "key.converter.plugin.version": ("", "4.3.1"),
    }


def test_a_sort_key_orders_a_list() -> None:
    assert sorted(["3.6.1.Final", "3.10.0", "3.5.2.Final"], key=version_key) == ["3.5.2.Final", "3.6.1.Final", "3.10.0"]


# --- pinned to the letter (from mutation testing) -------------------------------------------


@pytest.mark.parametrize(
    ("spec", "held", "runs"),
    [
        ("[3.6.1.Final,3.6.1.Final]", ["3.6.1.Final", "3.7.0.Final"], "3.6.1.Final"),  # both ends one version
        ("[3.5.2.Final,3.6)", ["3.4.1.Final", "3.5.2.Final"], "3.5.2.Final"),  # `[`: the low end is in
        ("(3.5.2.Final,)", ["3.5.2.Final"], None),  # `(`: the low end is out
        ("(,3.5.2.Final)", ["3.5.2.Final"], None),  # `)`: the high end is out
        ("[3.5.2.Final]", ["3.4.1.Final"], None),  # one version, and nothing below it
        ("3.5.2.Final", ["3.4.1.Final", "3.6.1.Final"], None),
        (None, ["3.9.0", "3.10.0"], "3.10.0"),  # the newest by version, not by text
    ],
)
def test_each_end_of_a_range_is_in_or_out_as_written(spec: str | None, held: list[str], runs: str | None) -> None:
    assert requirement(spec).chosen(held) == runs


@pytest.mark.parametrize("spec", ["[3.5)", "(3.5]", "[]"])
def test_a_one_version_range_is_written_in_square_brackets(spec: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{spec!r}: a one-version range is written [VERSION]")):
        requirement(spec)


@pytest.mark.parametrize("spec", ["[,]", "(,)"])
def test_a_range_with_no_end_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{spec!r}: a range names at least one end")):
        requirement(spec)


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("1.1", "1.foo", 1),  # a number after any word
        ("1.foo", "1.sp", 1),  # an unknown word after every known qualifier
        ("1.foo", "1.bar", 1),  # unknown words in their letters' order
        ("1.rc1", "1.foo", -1),
        ("1.0", "1.0.0.0", 0),
        ("1.0.RC1", "1.0.rc1", 0),  # case does not count
    ],
)
def test_numbers_words_and_qualifiers_rank_as_maven_ranks_them(a: str, b: str, order: int) -> None:
    assert compare(a, b) == order and compare(b, a) == -order


def test_skew_lists_each_worker_s_versions_in_version_order() -> None:
    (found,) = skew({"w1": {"C": frozenset({"3.10.0", "3.9.0"})}, "w2": {"C": frozenset({"3.9.0"})}})
    assert found.describe() == "C differs between workers (w1: 3.9.0, 3.10.0; w2: 3.9.0)"


def test_findings_name_every_bad_pin_every_worker_and_skip_a_class_unknown_here() -> None:
    pg = "io.debezium.connector.postgresql.PostgresConnector"
    w = Workers("c", {"a:1": {pg: frozenset({"3.6.1.Final"})}, "b:1": {pg: frozenset({"3.6.1.Final"})}})
    config = {
        "connector.class": pg,
        "connector.plugin.version": "3.5.2.Final",  # neither worker holds it
        "value.converter": "V",
        "value.converter.plugin.version": "[4",  # no range
        "key.converter.plugin.version": "[9,)",  # the worker's default converter: not judged here
        "header.converter": "H",
        "header.converter.plugin.version": "(1]",
    }
    assert findings("c", w, {"s": config}) == (
        f"c: s: connector.plugin.version=3.5.2.Final: worker a:1, b:1 holds no {pg} that fits",
        "c: s: header.converter.plugin.version: '(1]': a one-version range is written [VERSION]",
        "c: s: value.converter.plugin.version: '[4' is not a version nor a range such as [3.5,3.6)",
    )


def test_unchecked_names_the_first_worker_not_read() -> None:
    w = Workers("c", {}, unread={"b:1": "refused", "a:1": "timed out"})
    assert w.unchecked() == "worker a:1 not read (timed out)"
    assert Workers("c", {"a:1": {}}, unversioned=("a:1",)).unchecked().startswith("worker a:1 lists no plugin versions")
    assert Workers("c", {"a:1": {}}).unchecked() == ""
