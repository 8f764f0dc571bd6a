-- Streams over invoicemgmt's Debezium change topics (definitions/kec.yaml captures them with
-- `sinks: []`, for ksqlDB only). On the local stack the topics are JSON carrying their Connect
-- schema ({"schema": …, "payload": {"before", "after", "op", …}}): the columns read PAYLOAD.
-- Production uses AVRO with a Schema Registry; there the value schema is read from it instead.
-- IF NOT EXISTS: ksqlDB has no transactions, so a file that failed halfway can be re-run.

CREATE STREAM IF NOT EXISTS INVOICEMGMT_INVOICES (
    PAYLOAD STRUCT<
      AFTER STRUCT<INVOICE_ID STRING, STUDENT_ID STRING, AMOUNT_CENTS BIGINT, STATUS STRING,
                   RESOURCE_PATH STRING, DELETED_AT STRING>,
      OP STRING>
  ) WITH (KAFKA_TOPIC = 'local.manabie.invoicemgmt.public.invoices', VALUE_FORMAT = 'JSON');

CREATE STREAM IF NOT EXISTS INVOICEMGMT_PAYMENTS (
    PAYLOAD STRUCT<
      AFTER STRUCT<PAYMENT_ID STRING, INVOICE_ID STRING, AMOUNT_CENTS BIGINT, DELETED_AT STRING>,
      OP STRING>
  ) WITH (KAFKA_TOPIC = 'local.manabie.invoicemgmt.public.payments', VALUE_FORMAT = 'JSON');
