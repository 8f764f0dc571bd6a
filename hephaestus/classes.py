"""The connector classes hephaestus knows by name, in one place (pure)."""

from __future__ import annotations

POSTGRES_SOURCE = "io.debezium.connector.postgresql.PostgresConnector"
CONFLUENT_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
DEBEZIUM_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
# The JDBC sinks: the only connectors reconcile ever deletes (a sink's table stays; nothing is lost).
JDBC_SINK_CLASSES = frozenset({CONFLUENT_SINK, DEBEZIUM_SINK})

# The keys that pin a plugin's version (Connect 4.1+, KIP-891), each with the key naming the class
# it pins: the connector's own, or a converter's.
PIN_KEYS = {
    "connector.plugin.version": "connector.class",
    "key.converter.plugin.version": "key.converter",
    "value.converter.plugin.version": "value.converter",
    "header.converter.plugin.version": "header.converter",
}
