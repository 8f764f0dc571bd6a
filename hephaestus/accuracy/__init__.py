"""Warehouse accuracy: prove each replicated table matches its source (`hephaestus accuracy`).

pairs (what to compare, pure) → db (psycopg: connections, table shapes, slot lag) → bisect
(`--deep`: the data-diff algorithm over range checksums, bounded by `--budget-s`) → run (many
tables at once) → render / publish (text, JSON, Slack, Prometheus). `--repair`: repair (pure:
keys, signal filters, batches, the report) → mend (one plan: `--dry-run` shows it; else
signals through a `Signaller`, waits, verifies again) → sinkdb (`--delete-extra`, the one
write, cleared by the gate and audited).
"""
