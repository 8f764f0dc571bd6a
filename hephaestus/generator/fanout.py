"""env x org x table x sink: every connector the definitions describe (pure)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from hephaestus.errors import InputError, InputErrors
from hephaestus.generator import naming
from hephaestus.generator.model import (
    Catalog,
    Connector,
    Definition,
    Kind,
    Origin,
    Pipeline,
    SinkSpec,
    TableSchema,
    TopicPipeline,
)
from hephaestus.generator.sink import sink_config, topic_sink_config
from hephaestus.generator.source import source_config


def generate(defs: Sequence[Definition], catalogs: Mapping[str, Catalog]) -> list[Connector]:
    """All connectors, or InputErrors listing every problem (nothing partial comes out)."""
    errors: list[InputError] = []
    connectors: list[Connector] = []
    for d in defs:
        errors += _check_tables(d, catalogs)
    if errors:
        raise InputErrors(errors)
    for d in defs:
        connectors += _connectors(d, catalogs)
    errors += _duplicates(connectors)
    if errors:
        raise InputErrors(errors)
    return sorted(connectors, key=lambda c: c.relpath)


def _connector(d: Definition, kind: Kind, name: str, config: dict[str, str], origin: Origin, stem: str) -> Connector:
    """One connector of `d`, carrying what the definition says of all its files (state, consent)."""
    return Connector(d.cluster, kind, name, config, origin, stem, d.state, d.allow_destructive)


def _connectors(d: Definition, catalogs: Mapping[str, Catalog]) -> Iterator[Connector]:
    shared = _shared_columns(d, catalogs)  # once per sink, not once per env × org
    for scope in naming.scopes(d):
        name = naming.source_name(d, scope)
        if d.pipelines:  # a definition of topic sinks only captures nothing
            yield _connector(
                d,
                "source",
                name,
                source_config(d, scope),
                Origin(d.file, "database", d.line("database")),
                scope.file_stem(name),
            )
        for t in d.topics:
            for sink in t.sinks:
                name = naming.topic_sink_name(d, scope, sink)
                config = topic_sink_config(d, scope, t, sink, shared[sink.path])
                origin = Origin(d.file, sink.path, d.line(sink.path))
                yield _connector(d, "sink", name, config, origin, scope.file_stem(name))
        for p in d.pipelines:
            pk = catalogs[d.database].tables[p.source_table].primary_key
            for sink in p.sinks:
                name = naming.sink_name(d, scope, p.source_table, sink)
                config = sink_config(d, scope, p.source_table, sink, pk, shared[sink.path])
                origin = Origin(d.file, sink.path, d.line(sink.path))
                yield _connector(d, "sink", name, config, origin, scope.file_stem(name))


def _shared_columns(d: Definition, catalogs: Mapping[str, Catalog]) -> dict[str, tuple[str, ...]]:
    """Per sink (by its path in the definition): the source's columns the sink table also has,
    in the source's order. Linear in columns (one set per sink table)."""
    out: dict[str, tuple[str, ...]] = {}
    for p in d.pipelines:
        src = catalogs[d.database].tables[p.source_table]
        for sink in p.sinks:
            there = set(catalogs[sink.database].tables[sink.table].column_names)
            out[sink.path] = tuple(c for c in src.column_names if c in there)
    for t in d.topics:  # the topic's fields the table has; PostgreSQL folds unquoted names
        for sink in t.sinks:
            there = set(catalogs[sink.database].tables[sink.table].column_names)
            out[sink.path] = tuple(c for c in t.columns if c.lower() in there)
    return out


def _check_tables(d: Definition, catalogs: Mapping[str, Catalog]) -> list[InputError]:
    errors: list[InputError] = []
    source = catalogs.get(d.database)
    if source is None:
        return [
            _err(
                d,
                "database",
                f"no table catalog for database {d.database!r} (run: hephaestus catalog dump --database {d.database})",
            )
        ]
    for p in d.pipelines:
        src = source.tables.get(p.source_table)
        if src is None:
            errors.append(_err(d, f"{p.path}.source_table", f"table {p.source_table} not in {source.file}"))
            continue
        errors += [e for s in p.sinks for e in _check_sink(d, p, s, src, catalogs)]
    errors += [e for t in d.topics for s in t.sinks for e in _check_topic_sink(d, t, s, catalogs)]
    return errors


def _check_topic_sink(
    d: Definition, t: TopicPipeline, sink: SinkSpec, catalogs: Mapping[str, Catalog]
) -> list[InputError]:
    dst, errors = _sink_table(d, sink, catalogs)
    if dst is None:
        return errors
    key = {k.lower() for k in t.key}
    if key != set(dst.primary_key):
        return [
            _err(
                d,
                f"{t.path}.key",
                f"the topic's key ({', '.join(t.key)}) is not the primary key of "
                f"{sink.database}.{sink.table} ({', '.join(dst.primary_key) or 'none'})",
            )
        ]
    missing = key - {c.lower() for c in t.columns}
    if missing:
        return [_err(d, f"{t.path}.columns", f"key field(s) {', '.join(sorted(missing))} missing from columns")]
    return []


def _sink_table(
    d: Definition, sink: SinkSpec, catalogs: Mapping[str, Catalog]
) -> tuple[TableSchema | None, list[InputError]]:
    snap = catalogs.get(sink.database)
    if snap is None:
        return None, [_err(d, f"{sink.path}.database", f"no table catalog for database {sink.database!r}")]
    dst = snap.tables.get(sink.table)
    if dst is None:
        return None, [_err(d, f"{sink.path}.table", f"table {sink.table} not in {snap.file}")]
    return dst, []


def _check_sink(
    d: Definition, p: Pipeline, sink: SinkSpec, src: TableSchema, catalogs: Mapping[str, Catalog]
) -> list[InputError]:
    dst, errors = _sink_table(d, sink, catalogs)
    if dst is None:
        return errors
    if not src.primary_key:
        return [_err(d, f"{p.path}.source_table", f"{p.source_table} has no primary key: an upsert sink needs one")]
    if set(src.primary_key) != set(dst.primary_key):
        return [
            _err(
                d,
                f"{sink.path}.table",
                f"primary keys differ: {d.database}.{p.source_table} ({', '.join(src.primary_key)}) "
                f"vs {sink.database}.{sink.table} ({', '.join(dst.primary_key) or 'none'})",
            )
        ]
    return []


def _duplicates(connectors: list[Connector]) -> list[InputError]:
    seen: dict[tuple[str, str], Connector] = {}
    errors = []
    for c in connectors:
        first = seen.setdefault((c.cluster, c.name), c)
        if first is not c:
            errors.append(
                InputError(
                    c.origin.file,
                    f"connector name {c.name!r} is also produced by {first.origin}",
                    c.origin.field,
                    c.origin.line,
                )
            )
    return errors


def _err(d: Definition, field: str, message: str) -> InputError:
    return InputError(d.file, message, field=field, line=d.line(field))
