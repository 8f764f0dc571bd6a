"""The shared reads every feature builds on: git's desired connectors (desired), the Debezium
sources and what they capture (sources), the live listings and the replication slots judged
(read, slots), the topics a sink reads and its dead-letter queue (topics). The features
(reconcile's followers snapshot and status, dlq, slots, heal, accuracy, ksql) read from here
and never from one another: the import contract in pyproject.toml holds them independent."""
