-- Sink database at the end of the chain: fed from lmsdwh.
CREATE TABLE IF NOT EXISTS dim_user (
    user_id       text PRIMARY KEY,
    name          text,
    email         text,
    resource_path text,
    updated_at    timestamptz
);

CREATE TABLE IF NOT EXISTS fact_student_enrollment (
    enrollment_id text PRIMARY KEY,
    student_id    text,
    location_id   text,
    resource_path text,
    enrolled_at   timestamptz
);
