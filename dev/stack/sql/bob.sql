-- Source database of the reference fleet (bob → auth/eureka/fatima).
-- Run by dev/stack/up inside a database named bob, and by tests inside fresh databases
-- (bob_t<hex>): so nothing here names the database, and everything is safe to re-run.

CREATE TABLE IF NOT EXISTS users (
    user_id       text PRIMARY KEY,
    name          text,
    email         text,
    resource_path text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz,
    internal_note text
);

CREATE TABLE IF NOT EXISTS students (
    student_id    text PRIMARY KEY,
    current_grade int,
    resource_path text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz
);

CREATE TABLE IF NOT EXISTS locations (
    location_id   text PRIMARY KEY,
    name          text,
    resource_path text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz
);

-- Debezium signal table (execute-snapshot etc.); the shape Debezium documents.
CREATE TABLE IF NOT EXISTS dbz_signals (
    id   varchar(42) PRIMARY KEY,
    type varchar(32) NOT NULL,
    data varchar(2048)
);

-- Target of heartbeat.action.query: keeps the replication slot advancing when the captured
-- tables are quiet.
CREATE TABLE IF NOT EXISTS debezium_heartbeat (
    id         int PRIMARY KEY,
    updated_at timestamptz NOT NULL
);
INSERT INTO debezium_heartbeat (id, updated_at) VALUES (1, now()) ON CONFLICT (id) DO NOTHING;

-- Publications are created by migration, never by Debezium (publication.autocreate.mode=disabled);
-- the signal table must be in it for signals to reach the connector.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'debezium_publication') THEN
        CREATE PUBLICATION debezium_publication FOR TABLE users, students, locations, dbz_signals;
    END IF;
END
$$;
