"""The deployment's state: the cluster lock, the ownership record, heal's records and the audit
journal, on one backend (state.backend): files on one machine, or a PostgreSQL database a
whole fleet of runners shares (`state: {database: NAME}`). Tables: state.schema."""
