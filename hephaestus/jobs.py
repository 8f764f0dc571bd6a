"""The job registry: named jobs that Helm hooks and cron run (`hephaestus job run NAME`).

Names are the reference's, so its operators recognise them. A job is a command line of this
CLI; `job run NAME [ARGS]…` appends ARGS, so hooks can pass the reference's flags
(`--deployCustomSinkConnector`, `--sendIncrementalSnapshot`).

ALIASES are the reference's own job names (`gjob hephaestus_…`, its repo map section 4), each
one of our jobs, narrowed to a cluster where the reference had one job per stack: a Helm hook
or a cron line written for the reference runs unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    name: str
    argv: tuple[str, ...]
    help: str


JOBS: dict[str, Job] = {
    j.name: j
    for j in (
        Job(
            "upsert_kafka_connect",
            ("reconcile", "--auto-approve"),  # automation approves itself
            "Reconcile git's connectors into every cluster (create, update, safe delete, wait RUNNING).",
        ),
        Job(
            "validate_kafka_connectors",
            ("reconcile", "--dry-run", "--exit-code"),
            "Dry-run diff of git against the live clusters; exit 2 on drift.",
        ),
        Job("heal", ("heal",), "Restart FAILED connectors and tasks with backoff and a budget (cron)."),
        Job("dwh_accuracy", ("accuracy",), "Row-count reconciliation of every replicated table; exit 2 on mismatch."),
        Job(
            "prepare_ksqldb_migration",
            ("ksql", "init"),
            "Create the ksql-migrations metadata stream and table on every ksqlDB cluster (idempotent).",
        ),
        Job(
            "migrate_ksql",
            ("ksql", "apply", "--all"),
            "Apply pending ksql_migrations/<cluster>/V*.sql; exit 2 if an applied file changed.",
        ),
        Job(
            "offsets_backup",
            ("offsets", "backup"),
            "Record every owned connector's offsets and slot position in the offsets ledger (cron).",
        ),
        Job("generate_connectors", ("generate",), "Regenerate connectors/ from definitions/."),
        Job("check_generated", ("generate", "--check"), "Fail (exit 2) when connectors/ is stale."),
    )
}


@dataclass(frozen=True)
class Alias:
    name: str
    job: str  # a key of JOBS
    args: tuple[str, ...] = ()  # put before the caller's ARGS

    @property
    def argv(self) -> tuple[str, ...]:
        return (*JOBS[self.job].argv, *self.args)


# The reference's stacks: platforms (cross-service sync), kec (the data warehouse, ksqlDB
# prefix KEC_), lmsdwh (the LMS warehouse, LMSDWH_) and the datalake's ksqlDB (no prefix).
ALIASES: dict[str, Alias] = {
    a.name: a
    for a in (
        Alias("hephaestus_upsert_kafka_connect", "upsert_kafka_connect"),
        Alias("hephaestus_validate_kafka_connectors", "validate_kafka_connectors"),
        Alias("hephaestus_upsert_lmsdwh_kafka_connector", "upsert_kafka_connect", ("--cluster", "lmsdwh")),
        Alias("hephaestus_dwh_accuracy", "dwh_accuracy"),
        Alias("hephaestus_prepare_ksqldb_migration", "prepare_ksqldb_migration"),
        Alias("hephaestus_migrate_datalake", "migrate_ksql", ("--cluster", "datalake")),
        Alias("hephaestus_migrate_datawarehouse", "migrate_ksql", ("--cluster", "kec")),
        Alias("hephaestus_migrate_lmsdwh", "migrate_ksql", ("--cluster", "lmsdwh")),
    )
}


def command_line(name: str) -> tuple[str, ...] | None:
    """What job or alias `name` runs (None: no such name)."""
    if name in JOBS:
        return JOBS[name].argv
    return ALIASES[name].argv if name in ALIASES else None
