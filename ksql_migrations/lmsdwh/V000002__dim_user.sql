-- dim_user for the lmsdwh warehouse: the latest state of every bob user, joined with its
-- student record, written to public.dim_user by a JDBC sink connector that ksqlDB owns.
-- The connector's name is ALL-CAPS, so `hephaestus reconcile` never deletes it.

SET 'auto.offset.reset' = 'earliest';
DEFINE dwh_table = 'public.dim_user';

-- The latest row per key; deleted rows (AFTER is null) keep their last state, as the
-- warehouse soft-deletes.
CREATE TABLE IF NOT EXISTS BOB_USERS_LATEST AS
  SELECT PAYLOAD->AFTER->USER_ID AS USER_ID,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->NAME) AS NAME,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->EMAIL) AS EMAIL,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->RESOURCE_PATH) AS RESOURCE_PATH,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->UPDATED_AT) AS UPDATED_AT
  FROM BOB_USERS
  WHERE PAYLOAD->AFTER IS NOT NULL
  GROUP BY PAYLOAD->AFTER->USER_ID
  EMIT CHANGES;

CREATE TABLE IF NOT EXISTS BOB_STUDENTS_LATEST AS
  SELECT PAYLOAD->AFTER->STUDENT_ID AS STUDENT_ID,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->UPDATED_AT) AS UPDATED_AT
  FROM BOB_STUDENTS
  WHERE PAYLOAD->AFTER IS NOT NULL
  GROUP BY PAYLOAD->AFTER->STUDENT_ID
  EMIT CHANGES;

-- A user's dimension row changes when the user or its student record changes. The value is
-- the Connect JSON envelope ({"schema", "payload"}): without a Schema Registry that is how the
-- JDBC sink learns the column types (JsonConverter, schemas.enable=true); the ZonedTimestamp
-- name makes it write updated_at as a timestamptz. The key stays the raw user_id.
CREATE TABLE IF NOT EXISTS DIM_USER
  WITH (KAFKA_TOPIC = 'local.manabie.lmsdwh.dim_user', KEY_FORMAT = 'KAFKA', VALUE_FORMAT = 'JSON') AS
  SELECT U.USER_ID AS USER_ID,
         STRUCT(`type` := 'struct', `optional` := false, `fields` := ARRAY[
           STRUCT(`field` := 'user_id', `type` := 'string', `optional` := false, `name` := CAST(NULL AS STRING)),
           STRUCT(`field` := 'name', `type` := 'string', `optional` := true, `name` := CAST(NULL AS STRING)),
           STRUCT(`field` := 'email', `type` := 'string', `optional` := true, `name` := CAST(NULL AS STRING)),
           STRUCT(`field` := 'resource_path', `type` := 'string', `optional` := true, `name` := CAST(NULL AS STRING)),
           STRUCT(`field` := 'updated_at', `type` := 'string', `optional` := true,
                  `name` := 'io.debezium.time.ZonedTimestamp')]) AS `schema`,
         STRUCT(`user_id` := U.USER_ID, `name` := U.NAME, `email` := U.EMAIL,
                `resource_path` := U.RESOURCE_PATH,
                `updated_at` := COALESCE(GREATEST(U.UPDATED_AT, S.UPDATED_AT), U.UPDATED_AT)) AS `payload`
  FROM BOB_USERS_LATEST U
  LEFT JOIN BOB_STUDENTS_LATEST S ON U.USER_ID = S.STUDENT_ID
  EMIT CHANGES;

-- Connect resolves the ${file:…} placeholders; they are not ksqlDB variables.
CREATE SINK CONNECTOR IF NOT EXISTS LMSDWH_DIM_USER_SINK WITH (
  'connector.class' = 'io.debezium.connector.jdbc.JdbcSinkConnector',
  'tasks.max' = '1',
  'topics' = 'local.manabie.lmsdwh.dim_user',
  'connection.url' = '${file:secrets/connect.properties:lmsdwh_url}',
  'connection.username' = '${file:secrets/connect.properties:lmsdwh_username}',
  'connection.password' = '${file:secrets/connect.properties:lmsdwh_password}',
  'collection.name.format' = '${dwh_table}',
  'insert.mode' = 'upsert',
  'primary.key.mode' = 'record_value',
  'primary.key.fields' = 'user_id',
  'schema.evolution' = 'none',
  'key.converter' = 'org.apache.kafka.connect.storage.StringConverter',
  'value.converter' = 'org.apache.kafka.connect.json.JsonConverter',
  'value.converter.schemas.enable' = 'true'
);
