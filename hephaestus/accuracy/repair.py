"""`--repair` as values (pure): which keys to re-snapshot, the signal filters that name them,
the batches they travel in, and the report of before and after.

A repair re-reads exactly the keys `--deep` found missing or different at the sink, through
Debezium's incremental snapshot with `additional-conditions` (`"id" IN (…)`). The filter is SQL
text that Debezium runs on the source, so every key is written as a literal that no value can
break out of: `E'…'` with backslashes and quotes doubled (the same in any
`standard_conforming_strings`), NUL refused (PostgreSQL text cannot hold it). A batch is cut
by `--batch-keys` and by the signal table's `data VARCHAR(2048)`: the JSON Debezium reads must
fit the row.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from hephaestus.accuracy.model import AccuracyReport, Key, TableResult
from hephaestus.errors import HephaestusError

SIGNAL_DATA_MAX = 2048  # the signal table's `data VARCHAR(2048)` (fleet.sources.SIGNAL_TABLE_DDL)
_PLAIN = (str, int, Decimal, uuid.UUID)


class TooManyKeys(HephaestusError):
    """More keys differ than --max-keys allows: nothing was sent (exit 2)."""

    exit_code = 2


def literal(value: object) -> str:
    """A key value as a SQL string literal (typed by the column it meets: `"id" IN (E'7')`)."""
    text = _text(value)
    if "\x00" in text:
        raise HephaestusError(f"a key holds a NUL character ({text!r}): no SQL literal can carry it")
    return "E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _text(value: object) -> str:
    if isinstance(value, bool):  # before int: True is an int too
        return "true" if value else "false"
    if isinstance(value, _PLAIN):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()  # bytea's hex input form
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    raise HephaestusError(f"cannot name a key of type {type(value).__name__} in a snapshot filter: {value!r}")


def identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def key_filter(columns: Sequence[str], keys: Sequence[Key]) -> str:
    """`"id" IN (E'a', E'b')`, or for a composite key `("a", "b") IN ((E'x', E'1'), …)`."""
    return _prefix(columns) + ", ".join(_row(k) for k in keys) + ")"


def _prefix(columns: Sequence[str]) -> str:
    names = ", ".join(identifier(c) for c in columns)
    return f"{names} IN (" if len(columns) == 1 else f"({names}) IN ("


def _row(key: Key) -> str:
    values = ", ".join(literal(v) for v in key)
    return values if len(key) == 1 else f"({values})"


def signal_data(table: str, where: str) -> str:
    """The execute-snapshot data `snapshot send TABLE --where WHERE` writes (snapshot.signal)."""
    condition = {"data-collection": table, "filter": where}
    return json.dumps({"data-collections": [table], "type": "incremental", "additional-conditions": [condition]})


@dataclass(frozen=True)
class Batch:
    keys: tuple[Key, ...]
    filter: str


def batches(
    table: str, columns: Sequence[str], keys: Sequence[Key], max_keys: int, max_chars: int = SIGNAL_DATA_MAX
) -> list[Batch]:
    """Keys in order, cut so that each batch has at most `max_keys` and its signal's data fits
    `max_chars` (counted as stored: JSON-escaped)."""
    out: list[list[Key]] = []
    for key in keys:
        if out and len(out[-1]) < max_keys and _fits(table, columns, [*out[-1], key], max_chars):
            out[-1].append(key)
        elif _fits(table, columns, [key], max_chars):
            out.append([key])
        else:
            raise HephaestusError(f"key {key!r} of {table} is too long for one signal ({max_chars} characters)")
    return [Batch(tuple(b), key_filter(columns, b)) for b in out]


def _fits(table: str, columns: Sequence[str], keys: Sequence[Key], max_chars: int) -> bool:
    return len(signal_data(table, key_filter(columns, keys))) <= max_chars


def wanted(result: TableResult) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
    """(keys to re-snapshot: missing and different, keys extra at the sink) of a mismatch."""
    diff = result.diff
    if result.verdict != "mismatch" or diff is None:
        return (), ()
    lists = (diff.missing, diff.different, diff.extra)
    if any(len(x.keys) < x.total for x in lists):
        raise HephaestusError(f"{result.pair.name}: not every differing key was listed (a bug): nothing repaired")
    return (*diff.missing.keys, *diff.different.keys), diff.extra.keys


def check_size(report: AccuracyReport, max_keys: int, delete_extra: bool) -> int:
    """The keys a repair would act on, refused (TooManyKeys) above `max_keys`, before anything is sent."""
    counts = [(r.pair.name, _size(r, delete_extra)) for r in report.results]
    total = sum(n for _, n in counts)
    if total > max_keys:
        each = "; ".join(f"{name}: {n}" for name, n in counts if n)
        raise TooManyKeys(f"{total} keys differ, more than --max-keys {max_keys} ({each}): nothing sent")
    return total


def _size(result: TableResult, delete_extra: bool) -> int:
    diff = result.diff
    if result.verdict != "mismatch" or diff is None:
        return 0
    return diff.missing.total + diff.different.total + (diff.extra.total if delete_extra else 0)


@dataclass(frozen=True)
class TableIntent:
    """What a repair will do to one table, decided before anything is written: what the dry
    run shows and what the real run does (one plan, two executors)."""

    pair: str
    connector: str = ""
    resnapshot: tuple[Key, ...] = ()  # missing, different, and extras the source still holds
    batches: tuple[Batch, ...] = ()  # one execute-snapshot signal each
    extra: tuple[Key, ...] = ()  # at the sink, gone at the source
    delete: bool = False  # --delete-extra: the extras go (the gate cleared them)
    error: str | None = None  # the table cannot be repaired: nothing is sent for it


def intend(
    result: TableResult, connector: str, table: str, key: Sequence[str], held: set[Key], batch_keys: int, delete: bool
) -> TableIntent:
    """A mismatching table's repair. `held`: the extras the source still holds outside the
    compared rows (soft-deleted there, live at the sink): stale copies, read again, never
    deleted."""
    again, extra = wanted(result)
    resnapshot = (*again, *(k for k in extra if k in held))
    gone = tuple(k for k in extra if k not in held)
    cut = tuple(batches(table, key, resnapshot, batch_keys))
    return TableIntent(result.pair.name, connector, resnapshot, cut, gone, delete and bool(gone))


@dataclass(frozen=True)
class RepairPreview:
    """`--repair --dry-run`: the compare, and what the repair would do; nothing written."""

    before: AccuracyReport
    tables: tuple[TableIntent, ...]

    @property
    def exit_code(self) -> int:
        """As `accuracy --deep`: 0 nothing to repair, 2 something would be, 1 an error (a
        table that could not be compared, or could not be repaired)."""
        return 1 if any(t.error for t in self.tables) else self.before.exit_code


def source_connector(result: TableResult) -> str:
    """The source that feeds a pair, named as the generator names it from its slot."""
    if result.slot is None:
        raise HephaestusError(
            f"{result.pair.name}: no replication slot of its source found, so no source to signal (pass --env/--org)"
        )
    return f"{result.slot}_source_connector"


@dataclass(frozen=True)
class TableRepair:
    """What a repair did to one table."""

    pair: str
    connector: str = ""
    resnapshot: tuple[Key, ...] = ()  # keys asked for again (missing, different, stale extras)
    signals: tuple[str, ...] = ()  # one execute-snapshot signal per batch
    extra: tuple[Key, ...] = ()  # at the sink, gone at the source
    extra_deleted: int = 0  # rows a --delete-extra removed
    error: str | None = None


@dataclass(frozen=True)
class RepairReport:
    before: AccuracyReport
    tables: tuple[TableRepair, ...]
    after: AccuracyReport | None  # None when nothing was repaired

    def final(self) -> AccuracyReport:
        """Every table as it stands: verified again after the repair, else as first compared."""
        again = {r.pair: r for r in (self.after.results if self.after else ())}
        results = tuple(again.get(r.pair, r) for r in self.before.results)
        return AccuracyReport(
            results, self.before.deep, self.before.seconds + (self.after.seconds if self.after else 0)
        )

    @property
    def exit_code(self) -> int:
        """1 an error (comparing or repairing), else 2 while anything differs or was not
        compared, else 0."""
        final = self.final().exit_code
        return 1 if final == 1 or any(t.error for t in self.tables) else final

    def after_of(self, repair: TableRepair) -> TableResult | None:
        found = [r for r in (self.after.results if self.after else ()) if r.pair.name == repair.pair]
        return found[0] if found else None


def outcome(repair: TableRepair, after: TableResult | None) -> tuple[int, int | None]:
    """(keys repaired: asked for and now equal, or deleted; keys still differing: None when
    the table could not be verified again)."""
    if after is None or after.diff is None:
        return repair.extra_deleted, None
    diff = after.diff
    left = {*diff.missing.keys, *diff.different.keys}
    fixed = sum(1 for k in repair.resnapshot if k not in left) + repair.extra_deleted
    return fixed, diff.total
