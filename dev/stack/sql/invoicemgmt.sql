-- Source database of the data-warehouse (KEC) stack: captured only for ksqlDB, which joins
-- invoices with their payments into kec_dwh.fact_invoice (definitions/kec.yaml,
-- ksql_migrations/kec/). Safe to re-run; names no database (tests run it in fresh ones).

CREATE TABLE IF NOT EXISTS invoices (
    invoice_id    text PRIMARY KEY,
    student_id    text NOT NULL,
    amount_cents  bigint NOT NULL,
    status        text NOT NULL DEFAULT 'open',
    resource_path text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz
);

CREATE TABLE IF NOT EXISTS payments (
    payment_id    text PRIMARY KEY,
    invoice_id    text NOT NULL,
    amount_cents  bigint NOT NULL,
    resource_path text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz
);

CREATE TABLE IF NOT EXISTS dbz_signals (
    id   varchar(42) PRIMARY KEY,
    type varchar(32) NOT NULL,
    data varchar(2048)
);

CREATE TABLE IF NOT EXISTS debezium_heartbeat (
    id         int PRIMARY KEY,
    updated_at timestamptz NOT NULL
);
INSERT INTO debezium_heartbeat (id, updated_at) VALUES (1, now()) ON CONFLICT (id) DO NOTHING;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'debezium_publication') THEN
        CREATE PUBLICATION debezium_publication FOR TABLE invoices, payments, dbz_signals;
    END IF;
END
$$;
