"""The accuracy report as text (a table), JSON, and the Slack message (pure)."""

from __future__ import annotations

import io
import json
from typing import Any

from hephaestus.accuracy.model import AccuracyReport, Endpoint, Key, KeyList, TableResult, Verdict
from hephaestus.accuracy.repair import RepairPreview, RepairReport, TableIntent, TableRepair, outcome
from hephaestus.terminal import printable

_HEADER = ("TABLE", "SOURCE", "SINK", "DELTA", "LAG", "VERDICT")
_KINDS = (
    ("missing", "in the source, not in the sink"),
    ("extra", "in the sink, not in the source"),
    ("different", "in both, with other values"),
)


# Verdict colours, for a terminal that wants them (the command decides; NO_COLOR honoured there).
_STYLES = {
    "MATCH": "green",
    "WITHIN TOLERANCE": "yellow",
    "PARTIAL": "yellow",
    "MISMATCH": "bold red",
    "ERROR": "bold red",
}
_VERDICTS: tuple[Verdict, ...] = ("match", "within_tolerance", "mismatch", "partial", "error")


def text(report: AccuracyReport, width: int | None = None, colour: bool = False) -> str:
    """The table (rich), each table's details on the rows under it, in the VERDICT column, then
    the summary. `width`: the terminal's; None (a pipe, a log) never folds a line."""
    from rich.console import Console

    rows = [_cells(r) for r in report.results]
    widths = [max(len(x) for x in (name, *(row[i] for row in rows))) for i, name in enumerate(_HEADER[:5])]
    if width is not None and width < sum(widths) + 2 * 5 + len("WITHIN TOLERANCE"):
        width = None  # too narrow to fold only the verdicts: whole lines, the terminal wraps them
    out = io.StringIO()
    console = Console(
        file=out,
        width=width or 10_000,
        markup=False,  # names and errors come from databases: a "[" in them is text, not markup
        highlight=False,
        force_terminal=colour,
        color_system="standard" if colour else None,
    )
    console.print(_table(report, rows, widths, colour))
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    return "\n".join([*lines, summary(report)]) + "\n"


def _table(report: AccuracyReport, rows: list[tuple[str, ...]], widths: list[int], colour: bool) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold" if colour else "")
    for i, name in enumerate(_HEADER):
        # The figures keep their width on a narrow terminal; only the verdict and details fold.
        least = widths[i] if i < 5 else None
        table.add_column(name, justify="right" if i in (1, 2, 3) else "left", min_width=least, no_wrap=i < 5)
    for r, cells in zip(report.results, rows, strict=True):
        table.add_row(*map(printable, cells[:5]), Text(cells[5], style=_STYLES.get(cells[5], "") if colour else ""))
        for line in _details(r):
            table.add_row("", "", "", "", "", printable(line.strip()))
    return table


def _cells(r: TableResult) -> tuple[str, ...]:
    if r.counts is None:
        return (r.pair.name, "-", "-", "-", "-", r.verdict.upper())
    delta = f"{r.counts.delta:+d}" if r.counts.delta else "0"
    return (
        r.pair.name,
        str(r.counts.source),
        str(r.counts.sink),
        delta,
        lag_text(r.lag_bytes),
        r.verdict.upper().replace("_", " "),
    )


def _details(r: TableResult) -> list[str]:
    out = [f"    error: {r.error}"] if r.error else []
    if r.verdict == "within_tolerance":
        out.append(f"    within the tolerance of {r.allowed} rows while slot {r.slot} lags")
    if r.verdict == "partial" and r.counts is None:
        out.append("    not compared: the time budget (--budget-s) ran out before its turn")
    if r.diff is not None and r.diff.uncompared:
        out.append(f"    partial: {r.diff.uncompared} rows not compared when the time budget (--budget-s) ran out")
    if r.slot is None and r.counts is not None:
        out.append("    lag unknown: no replication slot of this definition in the source database")
    return out + [
        _keys_line(kind, meaning, getattr(r.diff, kind))
        for kind, meaning in _KINDS
        if r.diff and getattr(r.diff, kind).total
    ]


def _keys_line(kind: str, meaning: str, found: KeyList) -> str:
    shown = ", ".join(key_text(k) for k in found.keys)
    more = f" (first {len(found.keys)})" if found.total > len(found.keys) else ""
    return f"    {kind} ({meaning}): {found.total}{more}{': ' + shown if shown else ''}"


def summary(report: AccuracyReport) -> str:
    counts = [f"{report.count(v)} {v.replace('_', ' ')}" for v in _VERDICTS if report.count(v)]
    mode = "deep (checksums)" if report.deep else "counts"
    n = len(report.results)
    return f"{n} table{'' if n == 1 else 's'}, {mode}: {', '.join(counts) or 'none'} ({report.seconds:.2f}s)"


def lag_text(lag: int | None) -> str:
    if lag is None:
        return "?"
    size = float(lag)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{lag} B"  # pragma: no cover - the loop always returns


def key_text(key: Key) -> str:
    return str(key[0]) if len(key) == 1 else "(" + ", ".join(map(str, key)) + ")"


def as_json(report: AccuracyReport) -> str:
    return json.dumps(json_doc(report), indent=2, default=str) + "\n"


def json_doc(report: AccuracyReport) -> dict[str, Any]:
    return {
        "tables": [_json_row(r) for r in report.results],
        "deep": report.deep,
        "summary": {v: report.count(v) for v in _VERDICTS},
        "seconds": round(report.seconds, 3),
        "exit_code": report.exit_code,
    }


def _json_row(r: TableResult) -> dict[str, Any]:
    return {
        "source": _side(r.pair.source, r.counts.source if r.counts else None, r.filters.source),
        "sink": _side(r.pair.sink, r.counts.sink if r.counts else None, r.filters.sink),
        "delta": r.counts.delta if r.counts else None,
        "verdict": r.verdict,
        "slot": r.slot,
        "lag_bytes": r.lag_bytes,
        "tolerance_rows": r.allowed,
        "deep": _json_diff(r),
        "error": r.error,
        "definition": r.pair.origin,
        "seconds": r.seconds,
    }


def _side(end: Endpoint, rows: int | None, where: str) -> dict[str, Any]:
    side = {"database": end.database, "table": str(end.table), "filter": where, "rows": rows}
    return {**side, "expect": end.query} if end.query else side


def _json_diff(r: TableResult) -> dict[str, Any] | None:
    if r.diff is None:
        return None
    out: dict[str, Any] = {
        k: {"total": getattr(r.diff, k).total, "keys": [_json_key(x) for x in getattr(r.diff, k).keys]}
        for k, _ in _KINDS
    }
    return {**out, "queries_per_side": r.diff.queries, "uncompared_rows": r.diff.uncompared}


def _json_key(key: Key) -> object:
    return key[0] if len(key) == 1 else list(key)


def slack_text(report: AccuracyReport) -> str | None:
    """Mismatches and errors, counts only: keys stay out of chat (rows may be personal data)."""
    bad = [r for r in report.results if r.verdict in ("mismatch", "error")]
    if not bad:
        return None
    lines = [
        f"hephaestus accuracy: {report.count('mismatch')} mismatch, {report.count('error')} error "
        f"of {len(report.results)} tables"
    ]
    for r in bad:
        lines.append(f"• `{r.pair.name}`: " + (f"error: {r.error}" if r.error else _slack_counts(r)))
    return "\n".join(lines)


def _slack_counts(r: TableResult) -> str:
    assert r.counts is not None
    text = f"source {r.counts.source}, sink {r.counts.sink}, delta {r.counts.delta:+d}, lag {lag_text(r.lag_bytes)}"
    if r.diff is not None:
        text += f"; {r.diff.missing.total} missing, {r.diff.extra.total} extra, {r.diff.different.total} different"
    return text


def repair_text(report: RepairReport, width: int | None = None, colour: bool = False) -> str:
    """Before, what the repair did per table, after: three blocks."""
    parts = ["before:\n" + text(report.before, width, colour)]
    if not report.tables:
        return parts[0] + "repair: nothing to repair\n"
    lines = [f"  {printable(t['table'])}: {_repair_words(t)}" for t in repair_rows(report)]
    parts.append("repair:\n" + "\n".join(lines) + "\n")
    if report.after is not None:
        parts.append("after:\n" + text(report.after, width, colour))
    return "".join(parts)


def _repair_words(t: dict[str, Any]) -> str:
    words = f"missing {t['missing']}, different {t['different']}, extra {t['extra']}"
    words += f"; re-snapshotted {t['resnapshotted']} keys in {len(t['signals'])} signals"
    if t["extra_deleted"] or t["extra_kept"]:
        kept = f", {t['extra_kept']} kept (--delete-extra removes them)" if t["extra_kept"] else ""
        words += f"; extra deleted {t['extra_deleted']}{kept}"
    still = "not verified" if t["still_different"] is None else str(t["still_different"])
    words += f"; repaired {t['repaired']}, still different {still}"
    return words + (f"; error: {t['error']}" if t["error"] else "")


def repair_json(report: RepairReport) -> str:
    doc = {
        "before": json_doc(report.before),
        "repair": repair_rows(report),
        "after": json_doc(report.after) if report.after else None,
        "exit_code": report.exit_code,
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def repair_rows(report: RepairReport) -> list[dict[str, Any]]:
    before = {r.pair.name: r for r in report.before.results}
    return [_repair_row(t, before[t.pair], report.after_of(t)) for t in report.tables]


def _repair_row(t: TableRepair, before: TableResult, after: TableResult | None) -> dict[str, Any]:
    diff = before.diff
    repaired, still = outcome(t, after)
    return {
        "table": t.pair,
        "connector": t.connector,
        "missing": diff.missing.total if diff else 0,
        "different": diff.different.total if diff else 0,
        "extra": diff.extra.total if diff else 0,
        "resnapshotted": len(t.resnapshot),
        "signals": list(t.signals),
        "extra_deleted": t.extra_deleted,
        "extra_kept": 0 if t.extra_deleted else len(t.extra),
        "repaired": repaired,
        "still_different": still,
        "error": t.error,
    }


def preview_text(preview: RepairPreview, width: int | None = None, colour: bool = False) -> str:
    """`--repair --dry-run`: the compare, then per table the keys each signal would name and
    the rows a delete would remove (or keep)."""
    head = "before:\n" + text(preview.before, width, colour)
    if not preview.tables:
        return head + "dry run: nothing to repair\n"
    lines = [printable(line) for t in preview.tables for line in _intent_lines(t)]
    return head + "dry run (no signal sent, no row deleted):\n" + "\n".join(lines) + "\n"


def _intent_lines(t: TableIntent) -> list[str]:
    if t.error:
        return [f"  {t.pair}: error: {t.error}"]
    signals = f"{len(t.batches)} signal{'' if len(t.batches) == 1 else 's'}"
    out = [f"  {t.pair}: would re-snapshot {len(t.resnapshot)} keys in {signals} ({t.connector}); {_extra_words(t)}"]
    out += [f"    signal {i}: {b.filter}" for i, b in enumerate(t.batches, 1)]
    if t.extra:
        out.append(f"    {'delete' if t.delete else 'keep'}: {', '.join(key_text(k) for k in t.extra)}")
    return out


def _extra_words(t: TableIntent) -> str:
    if not t.extra:
        return "no extra rows"
    if t.delete:
        return f"would delete {len(t.extra)} extra rows"
    return f"{len(t.extra)} extra rows kept (--delete-extra removes them)"


def preview_json(preview: RepairPreview) -> str:
    doc = {
        "dry_run": True,
        "before": json_doc(preview.before),
        "repair": [_intent_row(t) for t in preview.tables],
        "exit_code": preview.exit_code,
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def _intent_row(t: TableIntent) -> dict[str, Any]:
    return {
        "table": t.pair,
        "connector": t.connector,
        "resnapshot": [_json_key(k) for k in t.resnapshot],
        "signals": [b.filter for b in t.batches],
        "extra": [_json_key(k) for k in t.extra],
        "delete_extra": t.delete,
        "error": t.error,
    }
