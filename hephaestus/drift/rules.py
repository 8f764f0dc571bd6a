"""Compare one pipeline's four views of a table (pure): the live source, the committed catalog,
the live sink table and the generated sink's field list; name each difference by its effect on
data (safety.effects' vocabulary: column-not-replicated, sink-write-fails, capture-dropped)."""

from __future__ import annotations

import re

from hephaestus.drift.model import Capture, Finding, LiveTable, Pair

# Integer types by width: a value of a narrower one always fits a wider one.
_INTS = {"smallint": 1, "integer": 2, "bigint": 3, "numeric": 4}
_TEXT = ("text", "character varying", "character")
_UNBOUNDED = ("text", "character varying")  # varchar without a length holds any text
_LENGTH = re.compile(r"^(character varying|character)\((\d+)\)$")


def compare(pair: Pair, source: LiveTable | None, sink: LiveTable | None, capture: Capture) -> tuple[Finding, ...]:
    """Every effect the live shapes have on what the pair's sinks receive."""
    if source is None:
        return (
            _capture(pair, str(pair.source), f"{pair.source_db}.{pair.source} no longer exists (dropped or renamed)"),
        )
    found = list(_captured(pair, capture))
    if sink is None:
        return (*found, _fails(pair, str(pair.sink), f"sink table {pair.sink_db}.{pair.sink} does not exist"))
    return (
        *found,
        *_keys(pair, source, sink),
        *_absent(pair, source, sink),
        *_required(pair, source, sink),
        *_narrowed(pair, source, sink),
        *_unwritten(pair, source, sink),
    )


def _finding(pair: Pair, code: str, subject: str, why: str) -> Finding:
    # A source is affected only when capture is: a sink that cannot write is the sink's problem.
    sources = pair.sources if code == "capture-dropped" else ()
    return Finding(code, pair.name, subject, why, sinks=pair.sinks, sources=sources, action=pair.action(code))


def _capture(pair: Pair, subject: str, why: str) -> Finding:
    return _finding(pair, "capture-dropped", subject, why)


def _fails(pair: Pair, subject: str, why: str) -> Finding:
    return _finding(pair, "sink-write-fails", subject, why)


def _col(pair: Pair, column: str) -> str:
    return f"{pair.source.table}.{column}"


def _captured(pair: Pair, capture: Capture) -> list[Finding]:
    found = []
    if capture.published is None:
        found.append(
            _capture(pair, str(pair.source), f"publication {pair.publication} does not exist in {pair.source_db}")
        )
    elif not capture.published:
        found.append(
            _capture(
                pair,
                str(pair.source),
                f"not in publication {pair.publication} of {pair.source_db}: its changes are not captured",
            )
        )
    if capture.published is not None and not capture.signal_ok:
        found.append(
            _capture(
                pair,
                pair.signal_table,
                f"signal table {pair.signal_table} is missing or not published: snapshots and back-fills are ignored",
            )
        )
    return found


def _keys(pair: Pair, source: LiveTable, sink: LiveTable) -> list[Finding]:
    live, catalogued, target = set(source.primary_key), set(pair.catalog_source.primary_key), set(sink.primary_key)
    if live == catalogued == target:
        return []
    shown = ", ".join(source.primary_key) or "none"
    why = f"primary key changed: source ({shown}), catalog ({', '.join(pair.catalog_source.primary_key) or 'none'}), "
    return [_fails(pair, str(pair.source), why + f"sink ({', '.join(sink.primary_key) or 'none'})")]


def _absent(pair: Pair, source: LiveTable, sink: LiveTable) -> list[Finding]:
    """A column the sink writes (the source sends it, the field list names it) that the sink table
    no longer has: with schema.evolution=none the sink's next write fails."""
    there = set(sink.names)
    return [
        _fails(pair, _col(pair, name), f"{pair.sink_db}.{pair.sink} has no column {name}, which the sink writes")
        for name in pair.fields
        if name in source.names and name not in there
    ]


def _required(pair: Pair, source: LiveTable, sink: LiveTable) -> list[Finding]:
    """A sink column an insert must fill that no record carries any more."""
    sent = set(pair.fields) & set(source.names)
    return [
        _fails(
            pair,
            _col(pair, c.name),
            f"{pair.sink_db}.{pair.sink}.{c.name} is NOT NULL without a default "
            f"and the source {'no longer sends it' if c.name in pair.fields else 'does not send it'}",
        )
        for c in sink.columns
        if not c.nullable and not c.has_default and c.name not in sent
    ]


def _narrowed(pair: Pair, source: LiveTable, sink: LiveTable) -> list[Finding]:
    """A column whose source type changed (since the catalog) to one the sink's cannot hold."""
    catalogued = {c.name: c.type for c in pair.catalog_source.columns}
    found = []
    for name in pair.fields:
        src, dst = source.column(name), sink.column(name)
        if src and dst and catalogued.get(name) != _base(src.type) and not fits(src.type, dst.type):
            found.append(_fails(pair, _col(pair, name), f"type narrows: source {src.type}, sink {dst.type}"))
    return found


def _unwritten(pair: Pair, source: LiveTable, sink: LiveTable) -> list[Finding]:
    """Source columns no sink writes: one the sink table has (the field list is stale), or one the
    catalog lacks (added since it was written)."""
    written, there, catalogued = set(pair.fields), set(sink.names), set(pair.catalog_source.column_names)
    found = []
    for name in source.names:
        if name in written:
            continue
        if name in there:
            why = "source and sink tables have it; the sink does not write it (catalog refresh, then generate)"
        elif name not in catalogued:
            why = f"the catalog lacks it and {pair.sink_db}.{pair.sink} has no such column"
        else:
            continue  # catalogued, and the sink table lacks it: left out on purpose
        found.append(_finding(pair, "column-not-replicated", _col(pair, name), why))
    return found


def _base(type_: str) -> str:
    """The type as a catalog stores it (information_schema's data_type, no length)."""
    return type_.split("(", 1)[0]


def fits(source: str, sink: str) -> bool:
    """Whether every value of the source's type fits the sink's (pairs not known here: only equal)."""
    if source == sink:
        return True
    if source in _INTS and sink in _INTS:
        return _INTS[source] <= _INTS[sink]
    if _base(source) not in _TEXT or _base(sink) not in _TEXT:
        return False
    if sink in _UNBOUNDED:
        return True
    src, dst = _LENGTH.match(source), _LENGTH.match(sink)
    return src is not None and dst is not None and int(src.group(2)) <= int(dst.group(2))
