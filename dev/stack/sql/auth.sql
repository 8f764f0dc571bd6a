-- Sink database fed from bob.users. Tables exist up front: sinks run with schema.evolution=none.
CREATE TABLE IF NOT EXISTS users (
    user_id       text PRIMARY KEY,
    name          text,
    email         text,
    resource_path text,
    created_at    timestamptz,
    updated_at    timestamptz,
    deleted_at    timestamptz
);
