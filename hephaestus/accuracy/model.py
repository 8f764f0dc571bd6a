"""Values of an accuracy run (pure): table pairs, counts, key differences, verdicts, report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hephaestus.generator.model import AccuracySpec, TableRef, TenantFilter

Verdict = Literal["match", "within_tolerance", "mismatch", "partial", "error"]
Key = tuple[object, ...]
EXIT_FOR = {"error": 1, "mismatch": 2, "partial": 2}


@dataclass(frozen=True)
class Endpoint:
    database: str
    table: TableRef  # for an expectation: expect.<sink table>, a name for reports and metrics
    query: str = ""  # an expectation (`accuracy.expect`): a SELECT compared instead of a table

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class TablePair:
    """One pipeline sink of a definition: source table → sink table, and how to compare them."""

    source: Endpoint
    sink: Endpoint
    delete: bool  # deletes propagate to the sink (else dropped: soft delete)
    tenant_filter: TenantFilter | None
    spec: AccuracySpec
    origin: str  # "definitions/bob.yaml at pipelines[0].sinks[1]", for messages

    @property
    def name(self) -> str:
        return f"{self.source} → {self.sink}"


@dataclass(frozen=True)
class Counts:
    source: int
    sink: int

    @property
    def delta(self) -> int:
        """Sink minus source: negative when the sink lacks rows."""
        return self.sink - self.source


@dataclass(frozen=True)
class KeyList:
    total: int
    keys: tuple[Key, ...]  # the first ones found (bounded)


@dataclass(frozen=True)
class KeyDiff:
    """What `--deep` found: keys only in the source, only in the sink, or with other values."""

    missing: KeyList
    extra: KeyList
    different: KeyList
    queries: int  # checksum/key queries per side, a cost figure
    uncompared: int = 0  # rows (the larger side's) in ranges left when the time budget ran out

    @property
    def total(self) -> int:
        return self.missing.total + self.extra.total + self.different.total


@dataclass(frozen=True)
class Filters:
    """The SQL conditions each side was counted with ("" = every row)."""

    source: str
    sink: str


@dataclass(frozen=True)
class TableResult:
    pair: TablePair
    verdict: Verdict
    counts: Counts | None = None
    filters: Filters = Filters("", "")
    slot: str | None = None
    lag_bytes: int | None = None  # None: no slot found (or not measured)
    allowed: int = 0  # the tolerance in effect (0 unless the slot lags)
    diff: KeyDiff | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class AccuracyReport:
    results: tuple[TableResult, ...]
    deep: bool
    seconds: float

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def exit_code(self) -> int:
        """1 when any table could not be compared, else 2 on any mismatch, else 0."""
        return max((EXIT_FOR.get(r.verdict, 0) for r in self.results), key=_severity, default=0)


def _severity(code: int) -> int:
    return {0: 0, 2: 1, 1: 2}[code]


def allowance(spec: AccuracySpec, source_rows: int) -> int:
    """Rows of difference the tolerance accepts: the larger of its two forms."""
    return max(spec.tolerance_rows, int(spec.tolerance_percent * source_rows / 100))


def judge(spec: AccuracySpec, counts: Counts, diff: KeyDiff | None, lag_bytes: int | None) -> tuple[Verdict, int]:
    """The verdict and the tolerance applied. Tolerance covers replication in flight only:
    with the slot caught up (or no slot to tell), any difference is a mismatch."""
    allowed = allowance(spec, counts.source) if lag_bytes else 0
    off = abs(counts.delta) if diff is None else max(abs(counts.delta), diff.total)
    if off > allowed:
        return "mismatch", allowed
    if diff is not None and diff.uncompared:
        return "partial", allowed  # nothing found so far proves nothing about what was left
    return ("match" if off == 0 else "within_tolerance"), allowed
