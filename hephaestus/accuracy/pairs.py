"""What to compare (pure): table pairs from definitions, `--table` selection, filters, slots."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from hephaestus.accuracy.model import Endpoint, Filters, TablePair
from hephaestus.errors import InputError
from hephaestus.generator import writers
from hephaestus.generator.model import Definition, SinkSpec, TableRef
from hephaestus.generator.writers import SharedTable

SOFT_DELETE_COLUMN = "deleted_at"
EXPECT = "expect"  # the schema part of an expectation's name in reports: expect.<sink table>


def table_pairs(defs: Sequence[Definition]) -> list[TablePair]:
    """Every pipeline sink of every definition, in definition order; a topic sink (ksqlDB's
    output) only with an expectation, the one thing its table can be compared with."""
    return [pair for d in defs for pair in (*_table_pairs(d), *_topic_pairs(d))]


def _table_pairs(d: Definition) -> list[TablePair]:
    return [
        TablePair(
            _source(d, p.source_table, s),
            Endpoint(s.database, s.table),
            s.delete,
            s.tenant_filter,
            s.accuracy,
            _origin(d, s.path),
        )
        for p in d.pipelines
        for s in p.sinks
    ]


def _topic_pairs(d: Definition) -> list[TablePair]:
    # The tenant filter was applied by the sink to ksqlDB's rows: the expectation says its own.
    return [
        TablePair(_source(d, s.table, s), Endpoint(s.database, s.table), s.delete, None, s.accuracy, _origin(d, s.path))
        for t in d.topics
        for s in t.sinks
        if s.accuracy.expect
    ]


def _source(d: Definition, table: TableRef, sink: SinkSpec) -> Endpoint:
    if sink.accuracy.expect:
        return Endpoint(d.database, TableRef(EXPECT, table.table), sink.accuracy.expect)
    return Endpoint(d.database, table)


def _origin(d: Definition, path: str) -> str:
    return writers.origin(d, path)


def sharing(
    defs: Sequence[Definition], chosen: Sequence[TablePair], place: writers.Place
) -> dict[TablePair, SharedTable]:
    """The chosen pairs whose sink table other sinks of the definitions fill too (whether
    chosen or not): that table holds their rows as well, so its extras are not this pair's."""
    tables = {writers.table_key(t.database, t.table, place): t for t in writers.shared(writers.writers(defs), place)}
    keyed = ((p, writers.table_key(p.sink.database, p.sink.table, place)) for p in chosen)
    return {p: tables[k] for p, k in keyed if k in tables}


def names_of(pair: TablePair) -> set[str]:
    """What `--table` may say for a pair: either table, bare or schema-qualified, with or
    without its database (`users`, `public.users`, `auth.users`, `auth.public.users`)."""
    names: set[str] = set()
    for end in (pair.source, pair.sink):
        for table in (end.table.table, str(end.table)):
            names |= {table, f"{end.database}.{table}"}
    return names


def select(pairs: Sequence[TablePair], wanted: Sequence[str], where: str = "--table") -> list[TablePair]:
    """The pairs any of `wanted` names (all when none); a name matching nothing is an error."""
    if not wanted:
        return list(pairs)
    unknown = [w for w in wanted if not any(w in names_of(p) for p in pairs)]
    if unknown:
        raise InputError(where, f"no pipeline compares a table named {unknown[0]!r}")
    return [p for p in pairs if any(w in names_of(p) for w in wanted)]


def filters(pair: TablePair, source_columns: Sequence[str], sink_columns: Sequence[str]) -> Filters:
    """Conditions per side. Default: with deletes dropped at the sink and a `deleted_at` on both
    tables, only live rows compare — a purged row was soft-deleted first, so the sink's copy
    carries `deleted_at` and drops out. The tenant filter always narrows the source side: the
    sink only ever receives that tenant's rows."""
    soft = not pair.delete and SOFT_DELETE_COLUMN in source_columns and SOFT_DELETE_COLUMN in sink_columns
    default = f"{SOFT_DELETE_COLUMN} IS NULL" if soft else None
    source = [c for c in (pair.spec.source_filter or default, _tenant(pair)) if c]
    sink = [c for c in (pair.spec.sink_filter or default,) if c]
    return Filters(_and(source), _and(sink))


def _tenant(pair: TablePair) -> str | None:
    # Values cannot hold quotes or backslashes (the definitions schema forbids them) and the
    # field is an identifier: a plain literal list is safe here.
    f = pair.tenant_filter
    if f is None:
        return None
    values = ", ".join(f"'{v}'" for v in f.values)
    return f'"{f.field}"::text IN ({values})'


def _and(conditions: list[str]) -> str:
    if len(conditions) <= 1:
        return "".join(conditions)
    return " AND ".join(f"({c})" for c in conditions)


def slot_candidates(d: Definition, env: str | None, org: str | None, select_globs: Sequence[str] = ()) -> list[str]:
    """Slots (`{env}_{org}_{db}`) this deployment may measure lag on: --env/--org when given,
    else the definition's envs x orgs whose source connector the cluster's `select` runs."""
    scopes = [(e, o) for e in ([env] if env else d.envs) for o in ([org] if org else d.orgs)]
    if select_globs and not (env and org):
        scopes = [
            (e, o)
            for e, o in scopes
            if any(fnmatchcase(f"{e}_{o}_{d.database}_source_connector", g) for g in select_globs)
        ]
    return [f"{e}_{o}_{d.database}" for e, o in scopes]


def pick_slot(database: str, candidates: Sequence[str], existing: Sequence[str]) -> str | None:
    """The one candidate slot that exists in the source database; None when none does."""
    found = [c for c in candidates if c in set(existing)]
    if len(found) > 1:
        raise InputError(
            "--env/--org",
            f"database {database} has several replication slots of this "
            f"definition ({', '.join(found)}): pass --env and --org to pick one",
        )
    return found[0] if found else None
