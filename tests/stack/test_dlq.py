"""Dead-letter queues on the real stack: a record the sink's pipeline rejects is parked, found,
shown, replayed once the pipeline is fixed, and read back from the sink database.

The rejection happens in a transform (a Groovy filter that throws on one row), not in the
database: Connect's DLQ takes converter and transform failures, and the Debezium JDBC sink
(3.6) fails its task on a write the table refuses instead of reporting the record (routing
those to the DLQ came with debezium/dbz#984, after 3.6). The test shows both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.stack.fleet import Fleet, make_fleet
from tests.stack.support import ConnectClient, Stack, execute, read_rows, wait_until


@pytest.fixture
def fleet(tmp_path: Path, stack: Stack, fresh_db: Callable[..., str], connect: ConnectClient,
          capsys: pytest.CaptureFixture[str]) -> Iterator[Fleet]:
    fleet = make_fleet(tmp_path, stack, fresh_db, capsys, ["bob"], {"platforms": connect})
    fleet.only_users_to_auth()
    poisoned(fleet, True)
    yield fleet


def poisoned(fleet: Fleet, on: bool) -> None:
    """A transform that throws on the row named 'poison' (on), or none (off); regenerated."""
    definition = fleet.definition("bob")
    sink = definition["pipelines"][0]["sinks"][0]
    sink["options"] = {"transforms": "poison", "transforms.poison.type": "io.debezium.transforms.Filter",
                       "transforms.poison.language": "jsr223.groovy",
                       "transforms.poison.condition": "value?.after?.name == 'poison' ? (1 / 0 > 0) : true"} if on else {}
    fleet.write_definition("bob", definition)
    fleet.generate()


def dlq(fleet: Fleet, *args: str) -> tuple[int, str]:
    return fleet.cli("dlq", *args, "--project", str(fleet.root / "hephaestus.yaml"))


def names(fleet: Fleet) -> list[str]:
    return [r[0] for r in read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT name FROM users ORDER BY user_id")]


def test_a_rejected_record_is_parked_shown_replayed_after_the_fix_and_read_back(fleet: Fleet) -> None:
    bob = fleet.stack.dsn(fleet.dbs["bob"])
    assert fleet.reconcile()[0] == 0
    sink = fleet.name("platforms", "to_" + fleet.dbs["auth"])
    execute(bob, "INSERT INTO users (user_id, name, email) VALUES ('u-1', 'fine', 'a@x'), "
                 "('u-2', 'poison', 'secret-canary@x'), ('u-3', 'also fine', 'c@x')")
    wait_until(lambda: names(fleet) == ["fine", "also fine"] or None, timeout=120, message="the good rows")

    code, out = dlq(fleet, "list", "-o", "json")
    (found,) = [d for d in json.loads(out)["dlqs"] if d["connector"] == sink]
    wait_until(lambda: json.loads(dlq(fleet, "list", "-o", "json")[1])["dlqs"][0]["depth"] == 1 or None,
               timeout=60, message="one parked record")
    code, out = dlq(fleet, "list")
    assert code == 2 and f"{sink}: 1 record(s) in dlq.{sink}" in out, out

    code, out = dlq(fleet, "show", "--connector", sink, "-o", "json")
    assert code == 0, out
    (record,) = json.loads(out)["records"]
    assert record["error"]["topic"] == fleet.topic("users") and record["error"]["stage"], record
    assert record["value"]["format"] == "json" and record["value"]["value"]["payload"]["after"]["name"] == "poison"

    assert dlq(fleet, "replay", "--connector", sink, "--dry-run")[1].endswith("would replay 1 record(s) to "
                                                                             f"{fleet.topic('users')}[0]\n")
    poisoned(fleet, False)
    assert fleet.reconcile()[0] == 0
    code, out = dlq(fleet, "replay", "--connector", sink)
    assert code == 0 and "replayed 1 record(s)" in out, out
    wait_until(lambda: names(fleet) == ["fine", "poison", "also fine"] or None, timeout=120,
               message="the replayed row in the sink database")
    code, out = dlq(fleet, "replay", "--connector", sink)
    assert code == 0 and "replayed 0 record(s) (nothing parked since the last replay)" in out, out

    code, out = dlq(fleet, "purge", "--connector", sink, "--before", "1", "--yes")
    assert code == 0 and f"{sink}: 0 record(s) left" in out, out
    assert dlq(fleet, "list")[0] == 0
    audit = (fleet.root / "audit.jsonl").read_text()
    assert '"action": "dlq-replay"' in audit and '"action": "dlq-purge"' in audit
