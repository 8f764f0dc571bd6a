-- The data warehouse of the KEC stack: tables ksqlDB builds, written by JDBC sinks that
-- hephaestus declares (definitions/kec.yaml, `source_topic:` pipelines).
CREATE TABLE IF NOT EXISTS fact_invoice (
    invoice_id    text PRIMARY KEY,
    student_id    text,
    amount_cents  bigint,
    paid_cents    bigint,
    status        text,
    resource_path text
);
