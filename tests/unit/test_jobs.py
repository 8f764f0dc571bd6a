"""The reference's job names (`gjob hephaestus_…`) run as aliases of ours: a Helm hook or cron
line written for the reference works unchanged, narrowed to its stack's cluster."""

from __future__ import annotations

import pytest

from hephaestus.jobs import ALIASES, JOBS, command_line
from tests.connect_double import ConnectDouble
from tests.unit.conftest import Project

SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
REFERENCE_NAMES = {  # the repo map's section 4, every name
    "hephaestus_upsert_kafka_connect",
    "hephaestus_validate_kafka_connectors",
    "hephaestus_upsert_lmsdwh_kafka_connector",
    "hephaestus_dwh_accuracy",
    "hephaestus_prepare_ksqldb_migration",
    "hephaestus_migrate_datalake",
    "hephaestus_migrate_datawarehouse",
    "hephaestus_migrate_lmsdwh",
}


def test_every_reference_job_name_is_an_alias_of_one_of_ours() -> None:
    assert set(ALIASES) == REFERENCE_NAMES
    assert all(a.job in JOBS and command_line(a.name) == (*JOBS[a.job].argv, *a.args) for a in ALIASES.values())
    assert command_line("hephaestus_migrate_lmsdwh") == ("ksql", "apply", "--all", "--cluster", "lmsdwh")
    assert command_line("no_such_job") is None


def test_job_list_shows_each_reference_name_with_the_job_it_maps_to(project: Project) -> None:
    out = project.cli("job", "list").out
    ours, _, theirs = out.partition("\nthe reference's job names:\n")
    assert [line.split()[0] for line in ours.splitlines() if line.strip()] == list(JOBS)
    rows = {line.split()[0]: line.split()[2] for line in theirs.splitlines() if line.strip()}
    assert rows == {a.name: a.job for a in ALIASES.values()}


@pytest.fixture
def two_clusters(project: Project, served: tuple[ConnectDouble, str]) -> tuple[Project, ConnectDouble]:
    double, url = served
    double.connectors.clear()
    double.log.clear()
    (project.root / "hephaestus.yaml").write_text(
        "clusters:\n  platforms:\n    url: http://127.0.0.1:9\n    connectors: connectors/platforms\n"
        f"  lmsdwh:\n    url: {url}\n    connectors: connectors/lmsdwh\n"
    )
    return project, double


def git_sink(project: Project) -> None:
    folder = project.root / "connectors/lmsdwh/sink"
    folder.mkdir(parents=True)
    (folder / "dwh_sink.json").write_text(
        '{"name": "dwh_sink", "config": {"connector.class": "' + SINK + '", "topics": "t"}}'
    )


def test_the_lmsdwh_upsert_reconciles_the_lmsdwh_cluster_only(two_clusters: tuple[Project, ConnectDouble]) -> None:
    project, double = two_clusters
    git_sink(project)
    out = project.cli(
        "job", "run", "hephaestus_upsert_lmsdwh_kafka_connector", "--project", str(project.root / "hephaestus.yaml")
    )
    assert out.code == 0, out.err  # platforms (nothing listening) is not waited for, nor written to
    assert "dwh_sink" in double.connectors and double.writes() == [("POST", "/connectors")]
    # The fleet's rules look at every cluster of the project once, with no retry: one that
    # does not answer is named in a warning, and the plan says what it could not check.
    assert "the fleet's rules did not see platforms" in out.out


def test_the_reference_validate_job_exits_2_on_drift(two_clusters: tuple[Project, ConnectDouble]) -> None:
    project, double = two_clusters
    git_sink(project)  # in git, not live: drift
    out = project.cli(
        "job",
        "run",
        "hephaestus_validate_kafka_connectors",
        "--project",
        str(project.root / "hephaestus.yaml"),
        "--cluster",
        "lmsdwh",
    )
    assert out.code == 2, out.out + out.err
    assert double.writes() == []


def test_an_unknown_job_name_is_exit_1_naming_it(project: Project) -> None:
    out = project.cli("job", "run", "hephaestus_upsert_everything")
    assert out.code == 1 and "no job 'hephaestus_upsert_everything'" in out.err


def test_a_reference_job_for_a_ksqldb_cluster_the_project_lacks_says_how_to_declare_it(project: Project) -> None:
    from tests.unit.conftest import REPO

    out = project.cli("job", "run", "hephaestus_migrate_datalake", "--project", str(REPO / "hephaestus.yaml"))
    assert out.code == 1 and "no ksqlDB cluster 'datalake' (have: lmsdwh, kec)" in out.err
    assert "declare it as ksqldb: {datalake: {url: …, migrations: ksql_migrations/datalake}}" in out.err
