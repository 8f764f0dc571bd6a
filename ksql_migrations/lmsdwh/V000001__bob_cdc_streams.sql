-- Streams over bob's Debezium change topics, named as the generator names them:
-- {env}.{org}.{database}.{schema}.{table}. The value schema (the Debezium envelope with
-- BEFORE/AFTER structs) is read from the Schema Registry, as in the reference.
-- IF NOT EXISTS: ksqlDB has no transactions, so a file that failed halfway can be re-run.

CREATE STREAM IF NOT EXISTS BOB_USERS
  WITH (KAFKA_TOPIC = 'local.manabie.bob.public.users', VALUE_FORMAT = 'AVRO');

CREATE STREAM IF NOT EXISTS BOB_STUDENTS
  WITH (KAFKA_TOPIC = 'local.manabie.bob.public.students', VALUE_FORMAT = 'AVRO');
