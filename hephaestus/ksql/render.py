"""Text and JSON for the ksql results. Pure: the CLI prints what these return.

Statements are always shown masked (`Statement.shown`): a connector's password literal in a
migration never reaches a terminal or a CI log.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

from hephaestus.ksql.apply import ApplyResult
from hephaestus.ksql.compiler import CompiledMigration
from hephaestus.ksql.operations import InfoResult, InfoRow, InitResult, ValidateResult
from hephaestus.ksql.undo import UndoResult

# ksql-migrations' `info` table (MigrationVersionInfoFormatter), column for column.
NA = "N/A"
_INFO_HEADER = ("Version", "Name", "State", "Previous Version", "Started On", "Completed On", "Error Reason")


def init_text(r: InitResult) -> list[str]:
    lines = [f"ksqlDB '{r.cluster}' (server {r.server_version}): migrations metadata ready"]
    topics = {r.names.stream: r.names.stream_topic, r.names.table: r.names.table_topic}
    lines += [f"  created {name} (topic {topics[name]})" for name in r.created]
    lines += [f"  exists  {name}" for name in r.existed]
    return lines + [f"  warning: {w}" for w in r.warnings]


def apply_text(r: ApplyResult) -> list[str]:
    head = f"ksqlDB '{r.cluster}': last migrated version {r.previous}"
    if not r.plan:
        return [f"{head}; no eligible migrations, nothing to apply"]
    lines = [head]
    if r.skipped:
        lines.append(
            f"  warning: versions {', '.join(map(str, r.skipped))} are skipped and will not be applied by later runs"
        )
    if r.dry_run:
        lines.append(
            f"  dry run: would apply {len(r.plan)} file(s); nothing written (applied versions read from the server)"
        )
        return lines + [line for m in r.plan for line in _planned(m)]
    return lines + [f"  migrated {a.version} {a.name} ({a.statements} statements)" for a in r.applied]


def undo_text(r: UndoResult) -> list[str]:
    lines = [f"ksqlDB '{r.cluster}': current version {r.current}"]
    if r.dry_run:
        lines.append(
            f"  dry run: would undo {len(r.plan)} version(s), newest first, leaving version {r.after} current; "
            "nothing written (applied versions read from the server)"
        )
        return lines + [line for m in r.plan for line in _planned(m)]
    lines += [f"  undone {u.version} {u.name} ({u.statements} statements)" for u in r.undone]
    return lines + [f"  current version now {r.after}"]


def _planned(m: CompiledMigration) -> list[str]:
    lines = [f"  {m.file.path.name} (version {m.file.version}, {len(m.statements)} statements)"]
    for s in m.statements:
        props = f"  -- with {', '.join(f'{k}={v}' for k, v in s.properties)}" if s.properties else ""
        lines.append(f"    line {s.line}:{props}")
        lines += [f"      {text}" for text in s.shown.splitlines()]
    return lines


def info_text(r: InfoResult) -> list[str]:
    """ksql-migrations' layout: the current version, then one row per local file (PENDING when
    never applied; `N/A` where it has no value; a blank Completed On while RUNNING). What it
    does not show, hephaestus adds after the table: which versions have an undo file, applied
    versions whose file is gone or changed (in JSON they are rows, with `file`). An undone
    version reads UNDONE, with its undo's times."""
    lines = [f"ksqlDB '{r.cluster}'", f"Current migration version: {r.current}"]
    shown = [x for x in r.rows if x.file != "missing"]
    if not shown:
        lines.append("No migrations files found")
    else:
        lines += _table([_INFO_HEADER] + [_info_cells(x) for x in shown])
    lines += _undo_files(shown)
    lines += [
        f"warning: version {x.version} ({x.name}) is {x.state.value} on the server but has no migration file"
        for x in r.rows
        if x.file == "missing"
    ]
    return lines + [
        f"warning: the file of version {x.version} ({x.name}) changed since it was applied (checksum)"
        for x in r.rows
        if x.file == "changed"
    ]


def _undo_files(rows: list[InfoRow]) -> list[str]:
    """One line after the table, when the folder has undo files at all: which versions have one
    (ksql-migrations' table stays as it lays it out). In JSON each row has `undo_file`."""
    have = [str(x.version) for x in rows if x.undo_file]
    if not have:
        return []
    lacking = [str(x.version) for x in rows if not x.undo_file]
    return [
        f"Undo files (U<version>__<name>.sql): versions {', '.join(have)}"
        + (f"; none for {', '.join(lacking)}" if lacking else "")
    ]


def _info_cells(x: InfoRow) -> tuple[str, ...]:
    """N/A for what a version does not have, as ksql-migrations' MigrationVersionInfo shows a
    pending one (util/MigrationVersionInfo.java, in confluentinc/ksql); only a RUNNING row's
    Completed On stays blank: ksql-migrations writes it empty then and prints it as it is."""
    if x.state.value == "PENDING":
        return (str(x.version), x.name or NA, x.state.value, NA, NA, NA, NA)
    running = x.state.value == "RUNNING"
    completed = _when(x.completed_on) or ("" if running else NA)
    return (
        str(x.version),
        x.name or NA,
        x.state.value,
        x.previous or NA,
        _when(x.started_on) or NA,
        completed,
        x.error_reason or NA,
    )


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    """` a | b ` cells padded to the widest; a rule of dashes above the header, under it and at
    the end, as util/MigrationVersionInfoFormatter.java lays it out (confluentinc/ksql#7157
    added the top one)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    line = [" " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + " " for row in rows]
    rule = "-" * (sum(widths) + 3 * len(widths) - 1)
    return [rule, line[0], rule, *line[1:], rule]


def info_json(results: list[InfoResult]) -> str:
    def row(x: InfoRow) -> dict[str, object]:
        return {**asdict(x), "state": x.state.value}

    doc = [{"cluster": r.cluster, "current": r.current, "versions": [row(x) for x in r.rows]} for r in results]
    return json.dumps(doc, indent=2)


def validate_text(r: ValidateResult) -> list[str]:
    if r.ok:
        versions = ", ".join(map(str, sorted(r.checked))) or "none applied"
        return [f"ksqlDB '{r.cluster}': applied migrations match their files ({versions})"]
    return [f"ksqlDB '{r.cluster}': {len(r.problems)} problem(s)"] + [f"  {p}" for p in r.problems]


def _when(epoch_ms: str) -> str:
    """Epoch milliseconds as ksql-migrations shows them (`yyyy-MM-dd HH:mm:ss.SSS z`,
    util/MigrationVersionInfo.java), always in UTC: ksql-migrations uses the JVM's default
    zone, hephaestus says UTC so every machine prints the same. Anything else (empty, N/A)
    as it is."""
    if not epoch_ms.isdigit():
        return epoch_ms
    seconds, millis = divmod(int(epoch_ms), 1000)
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.") + f"{millis:03d} UTC"
