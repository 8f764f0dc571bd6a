-- fact_invoice for the KEC warehouse: every invoice with what its live payments paid. ksqlDB
-- writes the topic; the JDBC sink that reads it is declared in definitions/kec.yaml (a
-- `source_topic:` pipeline), so hephaestus owns, diffs and heals it like any other sink, and
-- `hephaestus accuracy` checks the table against the same join written in SQL (`expect`).

SET 'auto.offset.reset' = 'earliest';

-- The latest state of each row. A soft-deleted payment (deleted_at set) leaves the sum; an
-- invoice stays (the warehouse soft-deletes by its status).
CREATE TABLE IF NOT EXISTS INVOICES_LATEST AS
  SELECT PAYLOAD->AFTER->INVOICE_ID AS INVOICE_ID,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->STUDENT_ID) AS STUDENT_ID,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->AMOUNT_CENTS) AS AMOUNT_CENTS,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->STATUS) AS STATUS,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->RESOURCE_PATH) AS RESOURCE_PATH,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->DELETED_AT) AS DELETED_AT
  FROM INVOICEMGMT_INVOICES
  WHERE PAYLOAD->AFTER IS NOT NULL
  GROUP BY PAYLOAD->AFTER->INVOICE_ID
  EMIT CHANGES;

CREATE TABLE IF NOT EXISTS PAYMENTS_LATEST AS
  SELECT PAYLOAD->AFTER->PAYMENT_ID AS PAYMENT_ID,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->INVOICE_ID) AS INVOICE_ID,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->AMOUNT_CENTS) AS AMOUNT_CENTS,
         LATEST_BY_OFFSET(PAYLOAD->AFTER->DELETED_AT) AS DELETED_AT
  FROM INVOICEMGMT_PAYMENTS
  WHERE PAYLOAD->AFTER IS NOT NULL
  GROUP BY PAYLOAD->AFTER->PAYMENT_ID
  EMIT CHANGES;

-- A table-to-table aggregate: a payment's update retracts its old amount first.
CREATE TABLE IF NOT EXISTS PAID_BY_INVOICE AS
  SELECT INVOICE_ID, SUM(AMOUNT_CENTS) AS PAID_CENTS
  FROM PAYMENTS_LATEST
  WHERE DELETED_AT IS NULL
  GROUP BY INVOICE_ID
  EMIT CHANGES;

-- The value is the Connect JSON envelope ({"schema", "payload"}): without a Schema Registry,
-- that is how a JDBC sink learns the column types (JsonConverter, schemas.enable=true). The
-- key stays the raw invoice_id (KEY_FORMAT KAFKA), read by the sink's StringConverter.
CREATE TABLE IF NOT EXISTS FACT_INVOICE
  WITH (KAFKA_TOPIC = 'local.manabie.kec.fact_invoice', KEY_FORMAT = 'KAFKA', VALUE_FORMAT = 'JSON') AS
  SELECT I.INVOICE_ID AS INVOICE_ID,
         STRUCT(`type` := 'struct', `optional` := false, `fields` := ARRAY[
           STRUCT(`field` := 'invoice_id', `type` := 'string', `optional` := false),
           STRUCT(`field` := 'student_id', `type` := 'string', `optional` := true),
           STRUCT(`field` := 'amount_cents', `type` := 'int64', `optional` := true),
           STRUCT(`field` := 'paid_cents', `type` := 'int64', `optional` := true),
           STRUCT(`field` := 'status', `type` := 'string', `optional` := true),
           STRUCT(`field` := 'resource_path', `type` := 'string', `optional` := true)]) AS `schema`,
         STRUCT(`invoice_id` := I.INVOICE_ID, `student_id` := I.STUDENT_ID,
                `amount_cents` := I.AMOUNT_CENTS,
                `paid_cents` := COALESCE(P.PAID_CENTS, CAST(0 AS BIGINT)),
                `status` := I.STATUS, `resource_path` := I.RESOURCE_PATH) AS `payload`
  FROM INVOICES_LATEST I
  LEFT JOIN PAID_BY_INVOICE P ON I.INVOICE_ID = P.INVOICE_ID
  EMIT CHANGES;
