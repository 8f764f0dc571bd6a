-- dim_user for the lmsdwh warehouse: the latest state of every bob user, joined with its
-- student record, written to public.dim_user by a JDBC sink connector that ksqlDB owns.
-- The connector's name is ALL-CAPS, so `hephaestus reconcile` never deletes it.

SET 'auto.offset.reset' = 'earliest';
DEFINE dwh_table = 'public.dim_user';

-- The latest row per key; deleted rows (AFTER is null) keep their last state, as the
-- warehouse soft-deletes.
CREATE TABLE IF NOT EXISTS BOB_USERS_LATEST AS
  SELECT AFTER->USER_ID AS USER_ID,
         LATEST_BY_OFFSET(AFTER->NAME) AS NAME,
         LATEST_BY_OFFSET(AFTER->EMAIL) AS EMAIL,
         LATEST_BY_OFFSET(AFTER->RESOURCE_PATH) AS RESOURCE_PATH,
         LATEST_BY_OFFSET(AFTER->UPDATED_AT) AS UPDATED_AT
  FROM BOB_USERS
  WHERE AFTER IS NOT NULL
  GROUP BY AFTER->USER_ID
  EMIT CHANGES;

CREATE TABLE IF NOT EXISTS BOB_STUDENTS_LATEST AS
  SELECT AFTER->STUDENT_ID AS STUDENT_ID,
         LATEST_BY_OFFSET(AFTER->UPDATED_AT) AS UPDATED_AT
  FROM BOB_STUDENTS
  WHERE AFTER IS NOT NULL
  GROUP BY AFTER->STUDENT_ID
  EMIT CHANGES;

-- A user's dimension row changes when the user or its student record changes.
CREATE TABLE IF NOT EXISTS DIM_USER
  WITH (KAFKA_TOPIC = 'local.manabie.lmsdwh.dim_user', VALUE_FORMAT = 'AVRO') AS
  SELECT U.USER_ID AS USER_ID,
         U.NAME AS NAME,
         U.EMAIL AS EMAIL,
         U.RESOURCE_PATH AS RESOURCE_PATH,
         COALESCE(GREATEST(U.UPDATED_AT, S.UPDATED_AT), U.UPDATED_AT) AS UPDATED_AT
  FROM BOB_USERS_LATEST U
  LEFT JOIN BOB_STUDENTS_LATEST S ON U.USER_ID = S.STUDENT_ID
  EMIT CHANGES;

-- Connect resolves the ${file:…} placeholders; they are not ksqlDB variables.
CREATE SINK CONNECTOR IF NOT EXISTS LMSDWH_DIM_USER_SINK WITH (
  'connector.class' = 'io.confluent.connect.jdbc.JdbcSinkConnector',
  'tasks.max' = '1',
  'topics' = 'local.manabie.lmsdwh.dim_user',
  'connection.url' = '${file:secrets/connect.properties:lmsdwh_url}',
  'connection.user' = '${file:secrets/connect.properties:lmsdwh_username}',
  'connection.password' = '${file:secrets/connect.properties:lmsdwh_password}',
  'table.name.format' = '${dwh_table}',
  'insert.mode' = 'upsert',
  'pk.mode' = 'record_key',
  'pk.fields' = 'user_id',
  'quote.sql.identifiers' = 'never',
  'auto.create' = 'false',
  'key.converter' = 'org.apache.kafka.connect.storage.StringConverter',
  'value.converter' = 'io.confluent.connect.avro.AvroConverter',
  'value.converter.schema.registry.url' = 'http://127.0.0.1:28081'
);
