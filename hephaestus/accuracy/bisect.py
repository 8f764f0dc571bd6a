"""`--deep`: find the rows that differ without pulling whole tables (the data-diff algorithm).

Cut the key range at `factor - 1` keys of the side with more rows, checksum every part on
both sides in one scan each, and recurse into the parts whose checksums differ. Below
`threshold` rows a part's keys and row hashes are compared in memory; a part one side lacks
entirely is listed from the other side without hashing. Only the first `limit` keys of each
kind are kept; the totals are exact. Past `deadline` (`--budget-s`) no further range is
compared: its rows are counted as uncompared and the diff is partial (a query already running
finishes first).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from hephaestus.accuracy.model import Counts, Key, KeyDiff, KeyList
from hephaestus.accuracy.queries import FULL, Range

T = TypeVar("T")
U = TypeVar("U")
KINDS = ("missing", "extra", "different")


class Side(Protocol):
    """One table of the pair, restricted to the rows being compared."""

    queries: int

    def count(self) -> int: ...

    def checksums(self, rng: Range, cuts: Sequence[Key]) -> list[tuple[int, int]]:
        """(rows, checksum) of each of the len(cuts) + 1 parts of `rng` cut at `cuts`."""

    def checkpoints(self, rng: Range, step: int) -> list[Key]:
        """Every `step`-th key of `rng` in key order, the first one excluded."""

    def sampled_cuts(self, parts: int, rows: int) -> list[Key]:
        """About `parts - 1` cut points of the whole table, in key order, from a sample
        (cheap, roughly even); [] when the sample is too small to cut."""

    def row_hashes(self, rng: Range) -> dict[Key, str]: ...

    def first_keys(self, rng: Range, limit: int) -> list[Key]: ...


class Both(Protocol):
    """Runs the two sides' queries (concurrently, in a real run)."""

    def __call__(self, f: Callable[[], T], g: Callable[[], U]) -> tuple[T, U]: ...


def one_then_other(f: Callable[[], T], g: Callable[[], U]) -> tuple[T, U]:
    return f(), g()


@dataclass(frozen=True)
class DeepOptions:
    factor: int = 32
    threshold: int = 16384
    limit: int = 100
    max_depth: int = 16  # a safety net: every level shrinks the larger side by `factor`
    deadline: float | None = None  # `clock()` time after which no range is compared (--budget-s)
    clock: Callable[[], float] = time.monotonic

    def out_of_time(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline


class _Found:
    """Keys found so far: the first `limit` of each kind, and exact totals."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.keys: dict[str, list[Key]] = {k: [] for k in KINDS}
        self.totals = dict.fromkeys(KINDS, 0)
        self.uncompared = 0

    def room(self, kind: str) -> int:
        return self.limit - len(self.keys[kind])

    def add(self, kind: str, keys: Sequence[Key], total: int | None = None) -> None:
        self.totals[kind] += len(keys) if total is None else total
        self.keys[kind].extend(keys[: max(self.room(kind), 0)])

    def lists(self) -> list[KeyList]:
        return [KeyList(self.totals[k], tuple(self.keys[k])) for k in KINDS]


@dataclass(frozen=True)
class _Bisection:
    source: Side
    sink: Side
    options: DeepOptions
    both: Both
    found: _Found


def deep_diff(
    source: Side, sink: Side, options: DeepOptions = DeepOptions(), both: Both = one_then_other
) -> tuple[Counts, KeyDiff]:
    """The counts of both sides and the keys that differ."""
    run = _Bisection(source, sink, options, both, _Found(options.limit))
    # No whole-table checksum first: --deep mostly runs where counts already told of a
    # difference, and going straight to per-range checksums saves a full hashing pass there.
    n_source, n_sink = both(source.count, sink.count)
    _resolve(run, FULL, n_source, n_sink, 0)
    missing, extra, different = run.found.lists()
    queries = max(source.queries, sink.queries)
    return Counts(n_source, n_sink), KeyDiff(missing, extra, different, queries, run.found.uncompared)


def _resolve(run: _Bisection, rng: Range, n_source: int, n_sink: int, depth: int) -> None:
    """A range whose checksums differ (or, for the whole table, are not known yet)."""
    if n_source == 0 and n_sink == 0:
        return
    if run.options.out_of_time():
        # data-diff#402: past the budget, report what was compared, and how much was not.
        run.found.uncompared += max(n_source, n_sink)
    elif n_source == 0 or n_sink == 0:
        _one_sided(run, rng, n_source, n_sink)
    elif max(n_source, n_sink) <= run.options.threshold or depth >= run.options.max_depth:
        _in_memory(run, rng)
    else:
        _bisect(run, rng, n_source, n_sink, depth)


def _bisect(run: _Bisection, rng: Range, n_source: int, n_sink: int, depth: int) -> None:
    # Cut on the side with more rows: its parts are then all small, whatever the other holds.
    # The whole table is cut at sampled keys (a pass over every key costs a third of a checksum
    # pass); ranges below, and uneven parts the sample left, are cut exactly.
    larger, rows, factor = run.source if n_source >= n_sink else run.sink, max(n_source, n_sink), run.options.factor
    cuts = larger.sampled_cuts(factor, rows) if rng == FULL else []
    cuts = cuts or larger.checkpoints(rng, math.ceil(rows / factor))
    a, b = run.both(lambda: run.source.checksums(rng, cuts), lambda: run.sink.checksums(rng, cuts))
    for part, x, y in zip(parts(rng, cuts), a, b, strict=False):
        if x != y:
            _resolve(run, part, x[0], y[0], depth + 1)


def parts(rng: Range, cuts: Sequence[Key]) -> list[Range]:
    bounds = [rng[0], *cuts, rng[1]]
    return list(zip(bounds, bounds[1:], strict=False))


def _in_memory(run: _Bisection, rng: Range) -> None:
    a, b = run.both(lambda: run.source.row_hashes(rng), lambda: run.sink.row_hashes(rng))
    run.found.add("missing", ordered(a.keys() - b.keys()))
    run.found.add("extra", ordered(b.keys() - a.keys()))
    run.found.add("different", ordered(k for k in a.keys() & b.keys() if a[k] != b[k]))


def _one_sided(run: _Bisection, rng: Range, n_source: int, n_sink: int) -> None:
    kind, side, total = ("missing", run.source, n_source) if n_sink == 0 else ("extra", run.sink, n_sink)
    room = run.found.room(kind)
    run.found.add(kind, side.first_keys(rng, room) if room > 0 and total else [], total=total)


def ordered(keys: Iterable[Key]) -> list[Key]:
    """Keys sorted for stable output; by their text when values do not compare."""
    items = list(keys)
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)
