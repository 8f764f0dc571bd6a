"""The pairs to compare (pure): every pipeline sink of every definition whose connectors the
selected clusters run, with the catalogs generation read."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from hephaestus.drift.model import UNKNOWN, Finding, Pair
from hephaestus.generator import naming
from hephaestus.generator.model import Catalog, Definition, Pipeline, SinkSpec, TableSchema

Runs = Callable[[str, str], bool]  # (cluster, connector) -> whether a selected cluster runs it


def pairs(defs: Sequence[Definition], catalogs: Mapping[str, Catalog], runs: Runs) -> tuple[list[Pair], list[Finding]]:
    """The pairs, and an `unknown` finding for each one a catalog cannot describe."""
    found: list[Pair] = []
    unknown: list[Finding] = []
    for d, p, s in ((dd, pp, ss) for dd in defs for pp in dd.pipelines for ss in pp.sinks):
        sinks = tuple(
            n for scope in naming.scopes(d) if runs(d.cluster, n := naming.sink_name(d, scope, p.source_table, s))
        )
        if not sinks:
            continue  # no selected cluster runs it
        pair = _pair(d, p, s, catalogs, sinks, runs)
        if isinstance(pair, Pair):
            found.append(pair)
        else:
            unknown.append(Finding(UNKNOWN, f"{d.database}.{p.source_table}", str(p.source_table), pair, sinks=sinks))
    return found, unknown


def _sources(d: Definition, runs: Runs) -> tuple[str, ...]:
    return tuple(n for scope in naming.scopes(d) if runs(d.cluster, n := naming.source_name(d, scope)))


def _pair(
    d: Definition, p: Pipeline, s: SinkSpec, catalogs: Mapping[str, Catalog], sinks: tuple[str, ...], runs: Runs
) -> Pair | str:
    src, dst = _table(catalogs, d.database, p.source_table), _table(catalogs, s.database, s.table)
    if isinstance(src, str) or isinstance(dst, str):
        return src if isinstance(src, str) else str(dst)
    return Pair(
        d.database,
        p.source_table,
        s.database,
        s.table,
        catalog_source=src,
        catalog_sink=dst,
        sinks=sinks,
        sources=_sources(d, runs),
        publication=d.source.publication,
        signal_table=str(d.source.signal_table),
        policy=p.schema_changes or d.schema_changes,
    )


def _table(catalogs: Mapping[str, Catalog], database: str, table: object) -> TableSchema | str:
    catalog = catalogs.get(database)
    if catalog is None:
        return f"no catalog for database {database}"
    found = next((t for ref, t in catalog.tables.items() if ref == table), None)
    return found if found is not None else f"{catalog.file} has no table {table}"
