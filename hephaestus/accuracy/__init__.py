"""Warehouse accuracy: prove each replicated table matches its source (`hephaestus accuracy`).

pairs (what to compare, pure) → db (psycopg: connections, table shapes, slot lag) → bisect
(`--deep`: the data-diff algorithm over range checksums) → run (many tables at once) →
render / publish (text, JSON, Slack, Prometheus).
"""
