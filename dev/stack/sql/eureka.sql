-- Sink database fed from bob.users and bob.students.
CREATE TABLE IF NOT EXISTS users (
    user_id       text PRIMARY KEY,
    name          text,
    email         text,
    resource_path text,
    created_at    timestamptz,
    updated_at    timestamptz,
    deleted_at    timestamptz
);

CREATE TABLE IF NOT EXISTS students (
    student_id    text PRIMARY KEY,
    current_grade int,
    resource_path text,
    created_at    timestamptz,
    updated_at    timestamptz,
    deleted_at    timestamptz
);
