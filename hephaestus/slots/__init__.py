"""Logical replication slots of the source databases: WAL retained, owner, orphans."""
