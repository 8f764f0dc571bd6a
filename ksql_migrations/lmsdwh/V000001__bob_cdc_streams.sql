-- Streams over bob's Debezium change topics, named as the generator names them:
-- {env}.{org}.{database}.{schema}.{table}. definitions/bob.yaml writes them as JSON carrying
-- their Connect schema ({"schema": …, "payload": {"before", "after", "op", …}}), so the
-- columns read PAYLOAD (the reference used Avro and read the value schema from its registry;
-- with `converter: {format: avro}` these become VALUE_FORMAT AVRO without columns).
-- Timestamps arrive as ISO-8601 strings (Debezium's ZonedTimestamp), which order as text.
-- IF NOT EXISTS: ksqlDB has no transactions, so a file that failed halfway can be re-run.

CREATE STREAM IF NOT EXISTS BOB_USERS (
    PAYLOAD STRUCT<
      AFTER STRUCT<USER_ID STRING, NAME STRING, EMAIL STRING, RESOURCE_PATH STRING, UPDATED_AT STRING>,
      OP STRING>
  ) WITH (KAFKA_TOPIC = 'local.manabie.bob.public.users', VALUE_FORMAT = 'JSON');

CREATE STREAM IF NOT EXISTS BOB_STUDENTS (
    PAYLOAD STRUCT<
      AFTER STRUCT<STUDENT_ID STRING, UPDATED_AT STRING>,
      OP STRING>
  ) WITH (KAFKA_TOPIC = 'local.manabie.bob.public.students', VALUE_FORMAT = 'JSON');
