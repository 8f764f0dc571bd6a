"""Read table columns and primary keys from a live PostgreSQL (through the PostgreSQL edge)."""

from __future__ import annotations

from hephaestus import pg
from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema

_COLUMNS = """
SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t USING (table_catalog, table_schema, table_name)
WHERE t.table_type = 'BASE TABLE'
  AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
  AND c.table_schema NOT LIKE 'pg_toast%%'
ORDER BY c.table_schema, c.table_name, c.ordinal_position
"""

# Key columns in key order (array_position over indkey), not in table order.
_PRIMARY_KEYS = """
SELECT n.nspname, cl.relname, a.attname
FROM pg_index i
JOIN pg_class cl ON cl.oid = i.indrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary
ORDER BY n.nspname, cl.relname, array_position(i.indkey::int2[], a.attnum)
"""


def dump(dsn: str, database: str) -> Catalog:
    """The catalog of `database` (the DSN's dbname is overridden by `database`)."""
    with pg.session(dsn, f"cannot read schema of database {database!r}", dbname=database) as conn:
        columns = conn.execute(_COLUMNS).fetchall()
        keys = conn.execute(_PRIMARY_KEYS).fetchall()
    cols: dict[TableRef, list[Column]] = {}
    for schema, table, name, type_ in columns:
        cols.setdefault(TableRef(schema, table), []).append(Column(name, type_))
    pks: dict[TableRef, list[str]] = {}
    for schema, table, name in keys:
        pks.setdefault(TableRef(schema, table), []).append(name)
    tables = {ref: TableSchema(tuple(c), tuple(pks.get(ref, []))) for ref, c in cols.items()}
    return Catalog(f"{database}.json", database, tables)
