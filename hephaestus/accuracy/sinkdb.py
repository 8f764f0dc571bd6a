"""The one write of an accuracy run (edge: psycopg): `--delete-extra` removes, by key, rows the
sink holds and the source no longer has. Deletes are dropped by design in this fleet, so this
runs only when asked, with the gate's pass, audited before and after, in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from hephaestus import pg
from hephaestus.accuracy.model import Endpoint, Key
from hephaestus.errors import HephaestusError
from hephaestus.generator.writers import SharedTable
from hephaestus.project import Project
from hephaestus.safety.effects import Effect
from hephaestus.safety.gate import Cleared, Item, check
from hephaestus.state.backend import journal_for
from hephaestus.state.lock import new_run_id

CHUNK = 500  # keys per DELETE statement
CONSENT = frozenset({"rows-deleted"})  # the flag is the ask


def where(sink: Endpoint) -> str:
    return f"database {sink.database}"


def judged(sink: Endpoint, keys: Sequence[Key], shared: SharedTable | None) -> Cleared:
    """The one gate: the rows deleted are what `--delete-extra` asks for (consented by it, as
    `slots --drop-orphan` consents its slot dropped); never in a table other pipelines fill."""
    return check([_item(sink, keys, shared)], consent=CONSENT)


def refuse_shared(tables: Sequence[tuple[Endpoint, SharedTable]]) -> None:
    """The gate, before anything is read or sent: `--delete-extra` over tables several
    pipelines fill is refused (Refused, exit 2) naming each table and its pipelines."""
    once = {shared: sink for sink, shared in tables}  # one item per table, however many pairs
    if once:
        check([_item(sink, (), shared) for shared, sink in once.items()], consent=CONSENT)


def _item(sink: Endpoint, keys: Sequence[Key], shared: SharedTable | None) -> Item:
    effects = [Effect("rows-deleted", f"{len(keys)} rows of {sink.table} deleted at the sink (gone at the source)")]
    if shared is not None:
        # The other pipelines' rows are extra to each one: deleting them empties a correct table.
        why = (
            f"{shared.describe()}: a row one of them lacks may be another's "
            "(run without --delete-extra, or leave the table out with --table)"
        )
        effects.append(Effect("second-writer", why, invariant=True))
    return Item(where(sink), str(sink.table), "delete extra rows", tuple(effects))


def remove_rows(project: Project, sink: Endpoint, key: Sequence[str], keys: Sequence[Key], cleared: Cleared) -> int:
    """Delete the rows of `keys` in one transaction; the rows deleted, counted by the database."""
    if str(sink.table) not in cleared.names() or cleared.cluster != where(sink):
        raise HephaestusError(f"deleting rows of {sink}: not cleared by the gate (a bug): nothing deleted")
    with journal_for(project, where(sink), new_run_id()) as journal:
        journal.check()  # a delete that cannot be audited is not done
        detail = f"{len(keys)} extra rows of {sink.table} by key ({', '.join(key)})"
        listed = {"keys": [[str(v) for v in k] for k in keys]}
        journal.event(str(sink.table), "accuracy-delete-extra", "intent", detail, listed)
        try:
            deleted = _delete(project, sink, key, keys)
        except HephaestusError as exc:
            journal.event(str(sink.table), "accuracy-delete-extra", "failed", str(exc))
            raise
        journal.event(str(sink.table), "accuracy-delete-extra", "ok", f"{deleted} of {detail}")
    return deleted


def _delete(project: Project, sink: Endpoint, key: Sequence[str], keys: Sequence[Key]) -> int:
    dsn = project.dsn(sink.database, "accuracy --delete-extra")
    what = f"deleting extra rows of {sink}"
    deleted = 0
    with pg.session(dsn, what, autocommit=False, application="hephaestus accuracy") as conn:
        for start in range(0, len(keys), CHUNK):
            text, params = statement(sink, key, keys[start : start + CHUNK])
            deleted += conn.execute(text, params).rowcount
    return deleted


def statement(sink: Endpoint, key: Sequence[str], keys: Sequence[Key]) -> tuple[sql.Composed, list[object]]:
    """`DELETE … WHERE (k, …) IN ((%s, …), …)`: keys as parameters, never SQL text."""
    one = sql.SQL("({})").format(sql.SQL(", ").join([sql.Placeholder()] * len(key)))
    text = sql.SQL("DELETE FROM {} WHERE ({}) IN ({})").format(
        sql.Identifier(sink.table.schema, sink.table.table),
        sql.SQL(", ").join(map(sql.Identifier, key)),
        sql.SQL(", ").join([one] * len(keys)),
    )
    return text, [v for k in keys for v in k]
