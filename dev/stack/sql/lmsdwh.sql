-- Chained source: a warehouse that is itself a sink of bob and a Debezium source for
-- tokyo_jprep_dwh. Run inside a database named lmsdwh (or a fresh test copy); safe to re-run.

CREATE TABLE IF NOT EXISTS dim_user (
    user_id       text PRIMARY KEY,
    name          text,
    email         text,
    resource_path text,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS fact_student_enrollment (
    enrollment_id text PRIMARY KEY,
    student_id    text,
    location_id   text,
    resource_path text,
    enrolled_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS lmsdwh_dbz_signals (
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
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'lmsdwh_publication') THEN
        CREATE PUBLICATION lmsdwh_publication
            FOR TABLE dim_user, fact_student_enrollment, lmsdwh_dbz_signals;
    END IF;
END
$$;
