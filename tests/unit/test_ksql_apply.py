"""The apply rules below the CLI: which files run, a table that lags its stream, failures while
recording a failure. Against the contract stub, with no waiting between reads."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from hephaestus.errors import HephaestusError
from hephaestus.ksql import operations, run
from hephaestus.ksql.apply import KsqlApplyOptions, KsqlTarget, MigrationFailed, select
from hephaestus.ksql.client import KsqlRetryPolicy
from hephaestus.ksql.files import scan
from hephaestus.ksql.metadata import NONE_VERSION, Names
from hephaestus.ksql.session import open_client
from hephaestus.ksql.store import BrokenChain
from hephaestus.project import KsqlDB, Project
from tests.ksqldb_stub import KsqlStub, ksqldb_stub

FAST = partial(open_client, retry=KsqlRetryPolicy.immediate())


def folder(tmp_path: Path, *versions: int) -> Path:
    for v in versions:
        (tmp_path / f"V{v:06d}__s{v}.sql").write_text(f"CREATE STREAM S{v} (A STRING) WITH (KAFKA_TOPIC='t{v}');\n")
    return tmp_path


@pytest.mark.parametrize(
    ("previous", "target", "expected", "skipped"),
    [
        (NONE_VERSION, KsqlTarget("all"), [1, 2, 5, 9], ()),
        ("2", KsqlTarget("all"), [5, 9], ()),
        ("2", KsqlTarget("next"), [5], ()),
        ("2", KsqlTarget("until", 6), [5], ()),
        ("2", KsqlTarget("until", 1), [], ()),
        (NONE_VERSION, KsqlTarget("version", 5), [5], (1, 2)),
        ("9", KsqlTarget("all"), [], ()),
    ],
)
def test_select(
    tmp_path: Path, previous: str, target: KsqlTarget, expected: list[int], skipped: tuple[int, ...]
) -> None:
    chosen = select(scan(folder(tmp_path, 1, 2, 5, 9)), previous, target)
    assert [f.version for f in chosen.migrations] == expected and chosen.skipped == skipped


@pytest.mark.parametrize(
    ("previous", "target", "message"),
    [
        ("9", KsqlTarget("next"), "no eligible migrations"),
        (NONE_VERSION, KsqlTarget("version", 3), "no migration file with version 3"),
        ("5", KsqlTarget("version", 2), "must be newer"),
    ],
)
def test_select_refuses(tmp_path: Path, previous: str, target: KsqlTarget, message: str) -> None:
    with pytest.raises(HephaestusError, match=message):
        select(scan(folder(tmp_path, 1, 2, 5, 9)), previous, target)


@pytest.fixture
def stub() -> Iterator[KsqlStub]:
    with ksqldb_stub() as running:
        yield running


def cluster(stub: KsqlStub, migrations: Path) -> KsqlDB:
    return KsqlDB("lmsdwh", stub.url, migrations)


def initialised(stub: KsqlStub, migrations: Path) -> list[run.PreparedCluster]:
    c = cluster(stub, migrations)
    list(run.init(project_at(migrations.parent), [c], None, FAST))
    return run.prepare([c], {})


def project_at(base: Path) -> Project:
    """A project whose cluster locks are files under `base` (the lock is the run's, not ours)."""
    return Project("p.yaml", {}, {}, base=base)


def test_a_table_that_lags_its_stream_is_read_again_before_the_next_file(stub: KsqlStub, tmp_path: Path) -> None:
    prepared = initialised(stub, folder(tmp_path, 1, 2, 3))
    stub.pull_lag = 2  # each write shows in the table only two reads later
    sleeps: list[float] = []
    options = KsqlApplyOptions(KsqlTarget("all"), settle_wait_s=0.25, sleep=sleeps.append)
    [result] = run.apply(project_at(tmp_path), prepared, options, None, FAST)
    assert [a.version for a in result.applied] == [1, 2, 3]
    assert sleeps == [0.25] * 4  # versions 1 and 2 each read RUNNING twice before MIGRATED


def test_a_previous_version_that_never_reads_migrated_stops_the_run(stub: KsqlStub, tmp_path: Path) -> None:
    prepared = initialised(stub, folder(tmp_path, 1, 2))
    stub.pull_lag = 50
    options = KsqlApplyOptions(KsqlTarget("all"), settle_attempts=3, settle_wait_s=0, sleep=lambda s: None)
    with pytest.raises(BrokenChain, match="version 1 reads absent, not MIGRATED, after 3 reads"):
        list(run.apply(project_at(tmp_path), prepared, options, None, FAST))
    assert "S2" not in stub.sources


def test_when_even_the_error_cannot_be_recorded_the_statement_failure_is_still_reported(
    stub: KsqlStub, tmp_path: Path
) -> None:
    prepared = initialised(stub, folder(tmp_path, 1))
    stub.fail("CREATE STREAM S1", "Kafka topic t1 does not exist")
    stub.fail("'ERROR'", "server going down", status=503, code=50303, times=None)
    with pytest.raises(MigrationFailed) as err:
        list(run.apply(project_at(tmp_path), prepared, KsqlApplyOptions(KsqlTarget("all")), None, FAST))
    assert "left RUNNING (could not record ERROR: server going down)" in str(err.value)
    assert "Kafka topic t1 does not exist" in str(err.value)


def test_a_broken_chain_is_reported(stub: KsqlStub, tmp_path: Path) -> None:
    prepared = initialised(stub, folder(tmp_path, 1, 2))
    names = Names()
    with open_client(prepared[0].cluster, retry=KsqlRetryPolicy.immediate()) as client:
        for key, state, previous in (("1", "ERROR", "<none>"), ("2", "ERROR", "1"), ("CURRENT", "ERROR", "1")):
            client.execute(
                f"INSERT INTO {names.stream} (VERSION_KEY, VERSION, NAME, STATE, CHECKSUM, STARTED_ON, "
                f"COMPLETED_ON, PREVIOUS, ERROR_REASON) VALUES ('{key}', '{key if key != 'CURRENT' else '2'}', "
                f"'x', '{state}', 'c', '1', '2', '{previous}', 'N/A');"
            )
        with pytest.raises(BrokenChain, match="version 2 follows version 1, whose state is ERROR"):
            operations.validate(client, names, prepared[0].scan)
