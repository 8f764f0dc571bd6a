"""The --deep algorithm against in-memory sides (same contract as the SQL side), and its SQL."""

from __future__ import annotations

import bisect
import hashlib
import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from hephaestus.accuracy.bisect import DeepOptions, deep_diff, parts
from hephaestus.accuracy.db import TableInfo
from hephaestus.accuracy.model import Counts, Endpoint, Filters, Key, TablePair
from hephaestus.accuracy.queries import FULL, Range, TableQuery, bucket, checkpoints, checksums
from hephaestus.accuracy.run import table_queries
from hephaestus.generator.model import AccuracySpec, TableRef


class MemorySide:
    """A table as a dict key -> row text; answers what `PgSide` answers, counting queries."""

    def __init__(self, rows: dict[Key, str], sample: random.Random | None = None) -> None:
        self.sample = sample  # cut the whole table at sampled keys, as PgSide does
        self.rows = {k: hashlib.md5(v.encode()).hexdigest() for k, v in rows.items()}
        self.order = sorted(self.rows)
        self.queries = 0
        self.scanned = 0  # rows read, to check that deep work stays local

    def _in(self, rng: Range) -> list[Key]:
        lo = 0 if rng[0] is None else bisect.bisect_left(self.order, rng[0])
        hi = len(self.order) if rng[1] is None else bisect.bisect_left(self.order, rng[1])
        self.queries += 1
        self.scanned += hi - lo
        return self.order[lo:hi]

    def count(self) -> int:
        return len(self._in(FULL))

    def checksums(self, rng: Range, cuts: Sequence[Key]) -> list[tuple[int, int]]:
        out = [(0, 0)] * (len(cuts) + 1)
        for key in self._in(rng):
            i = bisect.bisect_right(cuts, key)
            out[i] = (out[i][0] + 1, out[i][1] + int(self.rows[key][:15], 16))
        return out

    def checkpoints(self, rng: Range, step: int) -> list[Key]:
        return self._in(rng)[step::step]

    def sampled_cuts(self, parts: int, rows: int) -> list[Key]:
        if self.sample is None:
            return []
        keys = sorted(self.sample.sample(self._in(FULL), min(rows, parts * 3)))
        return [keys[len(keys) * i // parts] for i in range(1, parts)]

    def row_hashes(self, rng: Range) -> dict[Key, str]:
        return {k: self.rows[k] for k in self._in(rng)}

    def first_keys(self, rng: Range, limit: int) -> list[Key]:
        return self._in(rng)[:limit]


SMALL = DeepOptions(factor=4, threshold=8, limit=100)


def tables(n: int, multi: bool = False) -> dict[Key, str]:
    return {((i // 100, f"k{i:05d}") if multi else (i,)): f"row {i}" for i in range(n)}


def changed(
    rows: dict[Key, str], delete: Sequence[Key] = (), alter: Sequence[Key] = (), add: Sequence[Key] = ()
) -> dict[Key, str]:
    out = {k: v for k, v in rows.items() if k not in delete}
    out.update({k: "altered" for k in alter})
    out.update({k: "added" for k in add})
    return out


def test_identical_tables_cost_a_count_one_cut_and_one_checksum_scan() -> None:
    rows = tables(10_000)
    source, sink = MemorySide(rows), MemorySide(dict(rows))
    counts, found = deep_diff(source, sink, DeepOptions())
    assert counts == Counts(10_000, 10_000) and found.total == 0
    assert source.queries == sink.queries == 2, "small tables: count, then row hashes"
    source, sink = MemorySide(tables(100_000)), MemorySide(tables(100_000))
    assert deep_diff(source, sink, DeepOptions())[1].total == 0
    assert (source.queries, sink.queries) == (3, 2), "count, cut points (one side), checksums"


@pytest.mark.parametrize("multi", [False, True])
def test_lists_exactly_the_keys_touched(multi: bool) -> None:
    rows = tables(5_000, multi)
    keys = sorted(rows)
    sink_rows = changed(
        rows, delete=[keys[17], keys[4000]], alter=[keys[123]], add=[(999, "zz") if multi else (10**6,)]
    )
    counts, found = deep_diff(MemorySide(rows), MemorySide(sink_rows), SMALL)
    assert counts == Counts(5_000, 4_999)
    assert found.missing.keys == (keys[17], keys[4000]) and found.missing.total == 2
    assert found.extra.keys == (((999, "zz") if multi else (10**6,)),)
    assert found.different.keys == (keys[123],)


def test_one_differing_row_reads_a_small_part_of_the_table_after_the_first_pass() -> None:
    rows = tables(100_000)
    source, sink = MemorySide(rows), MemorySide(changed(rows, alter=[(54_321,)]))
    _, found = deep_diff(source, sink, DeepOptions(factor=32, threshold=1000))
    assert found.different.keys == ((54_321,),) and found.total == 1
    # Count, cut and level-1 checksums read 100k each; below that ~3k and ~100 rows.
    assert source.scanned < 3.1 * 100_000
    assert source.queries <= 8


def test_an_empty_sink_lists_source_keys_without_hashing_and_bounds_the_list() -> None:
    source, sink = MemorySide(tables(50_000)), MemorySide({})
    counts, found = deep_diff(source, sink, DeepOptions(limit=5))
    assert counts == Counts(50_000, 0)
    assert found.missing.total == 50_000 and found.missing.keys == tuple((i,) for i in range(5))
    assert source.queries == 2  # the count, then the first 5 keys


def test_totals_stay_exact_when_lists_are_cut() -> None:
    rows = tables(3_000)
    gone = [(i,) for i in range(0, 3_000, 7)]
    _, found = deep_diff(
        MemorySide(rows), MemorySide(changed(rows, delete=gone)), DeepOptions(factor=4, threshold=50, limit=10)
    )
    assert found.missing.total == len(gone) and found.missing.keys == tuple(gone[:10])


def test_random_differences_match_a_brute_force_diff() -> None:
    rng = random.Random(7)
    for _ in range(30):
        rows = {(rng.randrange(10**6),): str(rng.random()) for _ in range(rng.randrange(0, 3_000))}
        sink = {k: (v if rng.random() > 0.01 else "x") for k, v in rows.items() if rng.random() > 0.01}
        sink.update({(rng.randrange(10**6),): "new" for _ in range(rng.randrange(0, 5))})
        sides = (MemorySide(rows, rng), MemorySide(sink, rng))
        _, found = deep_diff(*sides, DeepOptions(factor=3, threshold=20, limit=10**6))
        assert set(found.missing.keys) == rows.keys() - sink.keys()
        assert set(found.extra.keys) == sink.keys() - rows.keys()
        assert set(found.different.keys) == {k for k in rows.keys() & sink.keys() if rows[k] != sink[k]}


def test_parts_cover_the_range_with_open_ends() -> None:
    assert parts(FULL, [(3,), (7,)]) == [(None, (3,)), ((3,), (7,)), ((7,), None)]


# --- SQL shapes (rendered without a connection) -------------------------------------------------

PAIR = TablePair(
    Endpoint("a", TableRef("public", "t")),
    Endpoint("b", TableRef("public", "t")),
    False,
    None,
    AccuracySpec(),
    "a.yaml:1 at pipelines[0].sinks[0]",
)
QUERY = TableQuery(
    TableRef("public", "users"),
    ("org", "user_id"),
    ("org", "user_id", "name"),
    "name LIKE 'a%'",
    frozenset({"user_id"}),
)


def test_bucket_is_a_binary_search_whose_parameters_follow_the_text() -> None:
    text, params = bucket(QUERY, [(1, "a"), (2, "b"), (3, "c")])
    sql = text.as_string(None)
    assert sql.count("CASE WHEN") == 3 and sql.count("%s") == 6
    assert params == [2, "b", 1, "a", 3, "c"]  # the middle cut first, then left, then right
    assert '("org", "user_id" COLLATE "C") < (%s, %s)' in sql


def test_checksums_hash_the_text_of_compared_columns_and_escape_percent_in_filters() -> None:
    text, params = checksums(QUERY, ((1, "a"), None), [])
    sql = text.as_string(None)
    assert 'sum(hashtextextended(ROW("org"::text, "user_id"::text, "name"::text)::text, 0))' in sql
    assert "(name LIKE 'a%%')" in sql
    assert params == [1, "a"]
    portable = checksums(replace(QUERY, md5=True), FULL, [])[0].as_string(None)
    assert "('x' || substr(md5(ROW(" in portable and "::bit(60)::bigint" in portable


def test_native_columns_hash_as_values_in_one_record_and_the_others_as_text() -> None:
    sql = checksums(replace(QUERY, native=frozenset({"org", "name"})), FULL, [])[0].as_string(None)
    assert 'sum(hash_record_extended(ROW("org", "user_id"::text, "name"), 0))' in sql
    portable = checksums(replace(QUERY, native=frozenset({"org"}), md5=True), FULL, [])[0].as_string(None)
    assert "hash_record_extended" not in portable, "the portable hash never mixes in native hashes"


def _info(types: dict[str, str], collations: dict[str, str | None] | None = None) -> TableInfo:
    return TableInfo(tuple(types), collations or {c: None for c in types}, ("id",), types)


@pytest.mark.parametrize(
    ("src", "dst", "record", "native"),
    [
        ({"id": "integer", "t": "text"}, {"id": "integer", "t": "text"}, True, {"id", "t"}),
        ({"id": "integer", "t": "text"}, {"id": "bigint", "t": "text"}, True, {"t"}),  # widened: by text
        ({"id": "integer", "f": "double precision"}, {"id": "integer", "f": "double precision"}, True, {"id"}),
        ({"id": "integer", "j": "json"}, {"id": "integer", "j": "json"}, True, {"id"}),  # json has no hash
        ({"id": "integer", "t": "text"}, {"id": "integer", "t": "text"}, False, set()),  # the servers disagree
    ],
)
def test_a_column_hashes_natively_only_when_both_sides_share_a_hashable_type(
    src: dict[str, str], dst: dict[str, str], record: bool, native: set[str]
) -> None:
    a, b = table_queries(PAIR, _info(src), _info(dst), Filters("", ""), True, md5=False, record=record)
    assert a.native == b.native == native


def test_text_of_differing_collations_hashes_as_text() -> None:
    types = {"id": "integer", "t": "text"}
    a, _ = table_queries(
        PAIR,
        _info(types, {"id": None, "t": "C"}),
        _info(types, {"id": None, "t": "en_US.utf8"}),
        Filters("", ""),
        True,
        record=True,
    )
    assert a.native == {"id"}
    assert (
        table_queries(PAIR, _info(types), _info(types), Filters("", ""), True, md5=True, record=True)[0].native == set()
    )


def test_checkpoints_read_every_step_th_key_in_key_order() -> None:
    sql = checkpoints(QUERY, FULL, 100)[0].as_string(None)
    assert 'ORDER BY "org", "user_id" COLLATE "C"' in sql and "(heph_rn - 1) %% 100 = 0" in sql
