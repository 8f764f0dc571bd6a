"""The SQL an accuracy run sends (pure: composes psycopg `sql` objects and their parameters).

Rows compare by a hash of their text form, `ROW(col::text, …)::text` over the compared columns.
Casting to text first makes an `int` source and a `bigint` sink hash alike, and the row literal
quotes its fields, so ('a,b', 'c') and ('a', 'b,c') never collide. A range's checksum is the
count and the sum of its rows' 64-bit hashes: order-independent, so each side scans as it likes.

The hash is PostgreSQL's `hashtextextended` (stable across versions: hash indexes and hash
partitions rely on it) when both servers compute the same value for a probe, which they do
unless one is big-endian; otherwise the first 60 bits of `md5`, portable but 2-3x slower.

Turning a value into text is most of a row's cost (a `timestamptz` above all), so a column of
the same built-in type on both sides (NATIVE_TYPES; for text, the same collation too) is hashed
as the value itself: the row becomes `hash_record_extended(ROW(col, other::text, …), 0)`
(PostgreSQL 14+; 2.8x cheaper on the bench's 8-column table). Those hashes are what hash
partitioning stores, so they are stable across versions too, and a second probe (one value
of every native type) must agree on both servers before they are used. They compare values
as PostgreSQL's equality does: 1.0 = 1.00 (numeric), 'a ' = 'a' (character(n)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql

from hephaestus.accuracy.model import Key
from hephaestus.generator.model import TableRef

Range = tuple[Key | None, Key | None]  # [low, high): None is open
FULL: Range = (None, None)
Query = tuple[sql.Composed, list[object]]


@dataclass(frozen=True)
class TableQuery:
    """One side of a comparison: which rows (filter), keyed how, hashed over which columns."""

    table: TableRef
    key: tuple[str, ...]
    columns: tuple[str, ...]
    filter: str = ""
    collate_c: frozenset[str] = frozenset()  # text keys ordered in "C" (sides' collations differ)
    md5: bool = False  # the portable hash (see the module's doc)
    native: frozenset[str] = frozenset()  # columns hashed as values, not as text (ditto)
    expect: str = ""  # a SELECT standing in for the table (an expectation)

    @property
    def relation(self) -> sql.Composable:
        if self.expect:  # `%` in the query (LIKE 'a%') must not read as a placeholder
            return sql.SQL("({}\n) AS heph_expected").format(sql.SQL(self.expect.replace("%", "%%")))
        return sql.Identifier(self.table.schema, self.table.table)

    def key_exprs(self) -> list[sql.Composable]:
        return [
            sql.SQL('{} COLLATE "C"').format(sql.Identifier(k)) if k in self.collate_c else sql.Identifier(k)
            for k in self.key
        ]

    def key_row(self) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(", ").join(self.key_exprs()))

    def key_list(self) -> sql.Composable:
        return sql.SQL(", ").join(map(sql.Identifier, self.key))

    def row_text(self) -> sql.Composable:
        texts = sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in self.columns)
        return sql.SQL("ROW({})::text").format(texts)

    def row_hash(self) -> sql.Composable:
        """A row's 64-bit (md5: 60-bit) hash as a bigint."""
        if self.md5:
            return sql.SQL("('x' || substr(md5({}), 1, 15))::bit(60)::bigint").format(self.row_text())
        if self.native:
            fields = sql.SQL(", ").join(
                sql.Identifier(c) if c in self.native else sql.SQL("{}::text").format(sql.Identifier(c))
                for c in self.columns
            )
            return sql.SQL("hash_record_extended(ROW({}), 0)").format(fields)
        return sql.SQL("hashtextextended({}, 0)").format(self.row_text())

    def where(self, rng: Range) -> Query:
        parts: list[sql.Composable] = []
        params: list[object] = []
        if self.filter:
            # `%` in a user's filter (LIKE 'a%') must not read as a placeholder.
            parts.append(sql.SQL("({})").format(sql.SQL(self.filter.replace("%", "%%"))))
        for bound, op in zip(rng, (">=", "<"), strict=False):
            if bound is not None:
                parts.append(sql.SQL("{} {} {}").format(self.key_row(), sql.SQL(op), _placeholders(len(bound))))
                params.extend(bound)
        return sql.SQL(" AND ").join(parts or [sql.SQL("TRUE")]), params


def _placeholders(n: int) -> sql.Composable:
    return sql.SQL("({})").format(sql.SQL(", ").join([sql.Placeholder()] * n))


def count(q: TableQuery) -> Query:
    where, params = q.where(FULL)
    return sql.SQL("SELECT count(*) FROM {} WHERE {}").format(q.relation, where), params


def bucket(q: TableQuery, checkpoints: Sequence[Key], offset: int = 0) -> Query:
    """Which of the len+1 sub-ranges cut at `checkpoints` a row falls in: a binary search in
    nested CASEs, so one scan buckets every row with log2(segments) comparisons."""
    if not checkpoints:
        return sql.SQL("{}").format(sql.Literal(offset)), []
    mid = len(checkpoints) // 2
    left, left_params = bucket(q, checkpoints[:mid], offset)
    right, right_params = bucket(q, checkpoints[mid + 1 :], offset + mid + 1)
    text = sql.SQL("CASE WHEN {} < {} THEN {} ELSE {} END").format(
        q.key_row(), _placeholders(len(checkpoints[mid])), left, right
    )
    return text, [*checkpoints[mid], *left_params, *right_params]


def checksums(q: TableQuery, rng: Range, checkpoints: Sequence[Key]) -> Query:
    """Per sub-range of `rng` (cut at `checkpoints`): index, row count, checksum."""
    seg, seg_params = bucket(q, checkpoints)
    where, params = q.where(rng)
    text = sql.SQL("SELECT {} AS seg, count(*), coalesce(sum({}), 0) FROM {} WHERE {} GROUP BY 1").format(
        seg, q.row_hash(), q.relation, where
    )
    return text, [*seg_params, *params]


def checkpoints(q: TableQuery, rng: Range, step: int) -> Query:
    """Every `step`-th key of the range in key order (the first one excluded): cut points that
    split it into parts of `step` rows, read in one pass over the key index."""
    where, params = q.where(rng)
    order = sql.SQL(", ").join(q.key_exprs())
    text = sql.SQL(
        "SELECT {keys} FROM (SELECT {keys}, row_number() OVER (ORDER BY {order}) AS heph_rn "
        "FROM {rel} WHERE {where}) s WHERE heph_rn > 1 AND (heph_rn - 1) %% {step} = 0 "
        "ORDER BY heph_rn"
    ).format(keys=q.key_list(), order=order, rel=q.relation, where=where, step=sql.Literal(step))
    return text, params


def sampled_keys(q: TableQuery, percent: float) -> Query:
    """Keys of a random `percent` of the table's pages, in key order: cut points for the first
    split that cost a few pages instead of a pass over every key."""
    where, params = q.where(FULL)
    text = sql.SQL("SELECT {} FROM {} TABLESAMPLE SYSTEM ({}) WHERE {} ORDER BY {}").format(
        q.key_list(), q.relation, sql.Literal(percent), where, sql.SQL(", ").join(q.key_exprs())
    )
    return text, params


def row_hashes(q: TableQuery, rng: Range) -> Query:
    where, params = q.where(rng)
    return sql.SQL("SELECT {}, {} FROM {} WHERE {}").format(q.key_list(), q.row_hash(), q.relation, where), params


def first_keys(q: TableQuery, rng: Range, limit: int) -> Query:
    where, params = q.where(rng)
    text = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY {} LIMIT {}").format(
        q.key_list(), q.relation, where, sql.SQL(", ").join(q.key_exprs()), sql.Literal(limit)
    )
    return text, params


def keyed_hashes(q: TableQuery, keys: Sequence[Key]) -> Query:
    """Key and row hash of the rows (under the side's filter) with one of `keys`: a repair's
    check that what it asked for has arrived. Keys are parameters, never SQL text."""
    where, params = q.where(FULL)
    listed = sql.SQL(", ").join([_placeholders(len(k)) for k in keys])
    text = sql.SQL("SELECT {}, {} FROM {} WHERE {} AND {} IN ({})").format(
        q.key_list(), q.row_hash(), q.relation, where, q.key_row(), listed
    )
    return text, [*params, *(v for k in keys for v in k)]


HASH_PROBE = "SELECT hashtextextended('hephaestus accuracy probe', 0)"

# Built-in types with a hash opclass whose equality is a value's identity for a copy: not float
# (0 = -0), not interval ('1 day' = '24 hours'), nothing without a hash (json, point).
NATIVE_TYPES = frozenset(
    {
        "boolean",
        "smallint",
        "integer",
        "bigint",
        "numeric",
        "text",
        "character varying",
        "character",
        "date",
        "time without time zone",
        "timestamp without time zone",
        "timestamp with time zone",
        "uuid",
        "bytea",
        "jsonb",
    }
)
RECORD_PROBE = (
    "SELECT hash_record_extended(ROW(true, 1::int2, 2::int4, 3::int8, 1.50::numeric, 'text'::text, "
    "'varchar'::varchar, 'char'::char(6), date '2026-01-02', time '01:02:03.456', timestamp '2026-01-02 03:04:05.678', "
    "timestamptz '2026-01-02 03:04:05.678+00', '6f1c1a9e-0000-4000-8000-000000000001'::uuid, '\\x0102'::bytea, "
    "'{\"a\": [1, 2]}'::jsonb, NULL::text), 0)"
)
