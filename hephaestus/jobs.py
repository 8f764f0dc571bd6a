"""The job registry: named jobs that Helm hooks and cron run (`hephaestus job run NAME`).

Names are the reference's, so its operators recognise them. A job is a command line of this
CLI; `job run NAME [ARGS]…` appends ARGS, so hooks can pass the reference's flags.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    name: str
    argv: tuple[str, ...]
    help: str


JOBS: dict[str, Job] = {j.name: j for j in (
    Job("upsert_kafka_connect", ("reconcile",),
        "Reconcile git's connectors into every cluster (create, update, safe delete, wait RUNNING)."),
    Job("validate_kafka_connectors", ("reconcile", "--dry-run", "--exit-code"),
        "Dry-run diff of git against the live clusters; exit 2 on drift."),
    Job("heal", ("heal",), "Restart FAILED connectors and tasks with backoff and a budget (cron)."),
    Job("dwh_accuracy", ("accuracy",), "Row-count reconciliation of every replicated table; exit 2 on mismatch."),
    Job("prepare_ksqldb_migration", ("ksql", "init"),
        "Create the ksql-migrations metadata stream and table on every ksqlDB cluster (idempotent)."),
    Job("migrate_ksql", ("ksql", "apply", "--all"),
        "Apply pending ksql_migrations/<cluster>/V*.sql; exit 2 if an applied file changed."),
    Job("generate_connectors", ("generate",), "Regenerate connectors/ from definitions/."),
    Job("check_generated", ("generate", "--check"), "Fail (exit 2) when connectors/ is stale."),
)}
