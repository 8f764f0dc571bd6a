"""The offsets ledger's records (pure): what `offsets backup` keeps of each owned connector, and
how a restore picks one and judges it against the slot as it is now (issue 49).

A record holds Connect's offsets of the connector (a sink's are its consumer group's positions,
`kafka_topic`/`kafka_partition`/`kafka_offset`), and for a Debezium PostgreSQL source the slot's
`restart_lsn` and `confirmed_flush_lsn` when it was taken. A slot never goes back: a slot whose
confirmed position is behind the record's is not the slot the record was taken from (a database
restored from a backup), and a restore from it is refused as bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hephaestus.errors import InputError
from hephaestus.safety.restore import lsn_text

FORMAT = "hephaestus-offsets-ledger/1"


@dataclass(frozen=True)
class SlotAt:
    """A logical slot's positions (LSNs as integers: PostgreSQL's `X/Y` is X·2³² + Y)."""

    database: str
    name: str
    restart_lsn: int
    confirmed_flush_lsn: int


@dataclass(frozen=True)
class Record:
    project: str
    cluster: str
    connector: str
    kind: str  # source / sink
    taken_at: str  # ISO 8601, UTC
    run_id: str
    offsets: tuple[Mapping[str, Any], ...] = field(hash=False)
    slot: SlotAt | None = None

    @property
    def lsn(self) -> int | None:
        """The source's recorded position in the WAL (Debezium's `lsn`), if any."""
        found = [o["offset"].get("lsn") for o in self.offsets if isinstance(o.get("offset"), Mapping)]
        numbers = [n for n in found if isinstance(n, int) and not isinstance(n, bool)]
        return max(numbers) if numbers else None

    def describe(self) -> str:
        slot = f", slot {self.slot.name} at {lsn_text(self.slot.confirmed_flush_lsn)}" if self.slot else ""
        return f"{self.taken_at} {self.cluster}/{self.connector}: {len(self.offsets)} partition(s){slot}"


def lsn_of(text: str) -> int:
    """`16/B374D848` → its integer; ValueError for anything else."""
    high, _, low = text.partition("/")
    if not high or not low:
        raise ValueError(f"not an LSN: {text!r}")
    return (int(high, 16) << 32) + int(low, 16)


def at_or_before(records: Sequence[Record], when: datetime | None) -> Record | None:
    """The newest record taken at or before `when` (the newest of all when None)."""
    chosen = [r for r in records if when is None or _time(r.taken_at) <= when]
    return max(chosen, key=lambda r: _time(r.taken_at), default=None)


def kept(records: Iterable[Record], keep: int) -> list[Record]:
    """Retention: each connector's newest `keep` records (never fewer than one)."""
    by: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        by.setdefault((r.cluster, r.connector), []).append(r)
    out: list[Record] = []
    for found in by.values():
        out += sorted(found, key=lambda r: _time(r.taken_at))[-max(keep, 1) :]
    return sorted(out, key=lambda r: (r.cluster, r.connector, _time(r.taken_at)))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- the ledger's JSON: one document per project ------------------------------------------------


def as_doc(project: str, records: Sequence[Record]) -> dict[str, Any]:
    return {"format": FORMAT, "project": project, "records": [_record_doc(r) for r in records]}


def _record_doc(r: Record) -> dict[str, Any]:
    slot = None
    if r.slot is not None:
        s = r.slot
        slot = {
            "database": s.database,
            "name": s.name,
            "restart_lsn": s.restart_lsn,
            "confirmed_flush_lsn": s.confirmed_flush_lsn,
        }
    return {
        "cluster": r.cluster,
        "connector": r.connector,
        "kind": r.kind,
        "taken_at": r.taken_at,
        "run_id": r.run_id,
        "offsets": [dict(o) for o in r.offsets],
        "slot": slot,
    }


def from_doc(doc: Any, project: str, where: str) -> list[Record]:
    """A ledger document read back; InputError naming `where` and the field for anything that
    is not one, or is another project's."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(where, f"not an offsets ledger (expected format {FORMAT!r})", field="format")
    if doc.get("project") != project:
        raise InputError(where, f"the ledger of project {doc.get('project')!r}, not of {project!r}", field="project")
    records = doc.get("records")
    if not isinstance(records, list):
        raise InputError(where, "expected a list of records", field="records")
    return [_record(r, project, where, f"records[{i}]") for i, r in enumerate(records)]


def record_of(doc: Any, project: str, where: str, path: str) -> Record:
    return _record(doc, project, where, path)


def _record(doc: Any, project: str, where: str, path: str) -> Record:
    if not isinstance(doc, dict):
        raise InputError(where, "expected an object", field=path)
    for key in ("cluster", "connector", "kind", "taken_at", "run_id"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise InputError(where, "expected a non-empty string", field=f"{path}.{key}")
    try:
        _time(doc["taken_at"])
    except ValueError:
        raise InputError(where, "not an ISO 8601 time", field=f"{path}.taken_at") from None
    offsets = doc.get("offsets")
    if not isinstance(offsets, list) or not all(isinstance(o, dict) and "partition" in o for o in offsets):
        raise InputError(where, 'expected [{"partition": …, "offset": …}, …]', field=f"{path}.offsets")
    return Record(
        project, doc["cluster"], doc["connector"], doc["kind"], doc["taken_at"], doc["run_id"],
        tuple(offsets), _slot(doc.get("slot"), where, f"{path}.slot"),
    )  # fmt: skip


def _slot(doc: Any, where: str, path: str) -> SlotAt | None:
    if doc is None:
        return None
    ok = isinstance(doc, dict) and all(isinstance(doc.get(k), str) for k in ("database", "name"))
    ok = ok and all(type(doc.get(k)) is int and doc[k] >= 0 for k in ("restart_lsn", "confirmed_flush_lsn"))
    if not ok:
        raise InputError(where, "expected {database, name, restart_lsn, confirmed_flush_lsn}", field=path)
    return SlotAt(doc["database"], doc["name"], doc["restart_lsn"], doc["confirmed_flush_lsn"])
