-- Sink database fed from bob.students and bob.locations.
CREATE TABLE IF NOT EXISTS students (
    student_id    text PRIMARY KEY,
    current_grade int,
    resource_path text,
    created_at    timestamptz,
    updated_at    timestamptz,
    deleted_at    timestamptz
);

CREATE TABLE IF NOT EXISTS locations (
    location_id   text PRIMARY KEY,
    name          text,
    resource_path text,
    created_at    timestamptz,
    updated_at    timestamptz,
    deleted_at    timestamptz
);
