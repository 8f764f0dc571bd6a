"""ksqlDB migrations: versioned `ksql_migrations/<cluster>/V000001__name.sql`, applied like
Confluent's ksql-migrations (same files, metadata stream and table, rows and rules).

files (the folder) → compiler (DEFINE/SET resolved, pure) → apply/operations (the rules) →
store (metadata rows via /ksql and pull queries) → client (the REST edge). `run` ties them to
the project file's `ksqldb:` clusters; `render` turns results into text for the CLI.
"""
