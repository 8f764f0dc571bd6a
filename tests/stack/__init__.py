"""Tests against the real stack (dev/stack/): PostgreSQL, Kafka, Connect, Debezium."""
