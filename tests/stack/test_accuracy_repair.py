"""`accuracy --deep --repair` on the real stack: the keys a sink lost or holds wrong are
re-snapshotted by Debezium (incremental snapshot signals with additional-conditions), exactly
them, read back from the sink database; every other row keeps its commit position.

"Commit position" is PostgreSQL's `xmin` of each sink row: the id of the transaction that
wrote the row version. An upsert by the JDBC sink (or any UPDATE) makes a new row version with
a new xmin, so a row whose xmin is the same before and after the repair was not written.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.stack.fleet import Fleet
from tests.stack.support import Stack, execute, read_rows, wait_until

USERS = 40
HOSTILE = "q'uo\"te\\back ü 🙂 ? $1"  # quotes, a backslash, unicode, JDBC's placeholder: one literal


@pytest.fixture
def users(bob_fleet: Fleet, stack: Stack) -> Fleet:
    """bob.users -> auth.users, replicated: 40 users, the hostile key, u-40 soft-deleted."""
    fleet = bob_fleet
    fleet.only_users_to_auth()
    bob = stack.dsn(fleet.dbs["bob"])
    execute(
        bob,
        f"INSERT INTO users (user_id, name, email) SELECT 'u-' || g, 'name ' || g, g || '@example.com' "
        f"FROM generate_series(1, {USERS}) g",
    )
    execute(bob, "INSERT INTO users (user_id, name) VALUES (%s, 'hostile')", [HOSTILE])
    execute(bob, "UPDATE users SET deleted_at = now() WHERE user_id = 'u-40'")
    code, report = fleet.reconcile()
    assert code == 0, json.dumps(report, indent=1)
    auth = stack.dsn(fleet.dbs["auth"])
    wait_until(
        lambda: (
            read_rows(auth, "SELECT count(*) FROM users WHERE deleted_at IS NOT NULL")[0][0] == 1
            and read_rows(auth, "SELECT count(*) FROM users")[0][0] == USERS + 1
        ),
        timeout=180,
        message="every user, and u-40 soft-deleted, in auth",
    )
    return fleet


def xmins(fleet: Fleet) -> dict[str, str]:
    rows = read_rows(fleet.stack.dsn(fleet.dbs["auth"]), "SELECT user_id, xmin::text FROM users")
    return {str(k): str(x) for k, x in rows}


def rows(fleet: Fleet, db: str) -> dict[str, tuple[Any, ...]]:
    found = read_rows(
        fleet.stack.dsn(fleet.dbs[db]), "SELECT user_id, name, email, deleted_at IS NULL, created_at FROM users"
    )
    return {str(r[0]): tuple(r[1:]) for r in found}


def signals(fleet: Fleet) -> int:
    return int(read_rows(fleet.stack.dsn(fleet.dbs["bob"]), "SELECT count(*) FROM dbz_signals")[0][0])


def repair(fleet: Fleet, *args: str) -> tuple[int, dict[str, Any]]:
    return fleet.accuracy("--deep", "--repair", "--table", f"{fleet.dbs['auth']}.users", *args)


def test_repair_restores_exactly_the_keys_that_differ_and_deletes_extras_only_when_asked(users: Fleet) -> None:
    fleet = users
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    lost, corrupt = ["u-3", "u-7", "u-11", HOSTILE], ["u-5", "u-9"]
    execute(auth, "DELETE FROM users WHERE user_id = ANY(%s)", [lost])
    execute(auth, "UPDATE users SET name = 'tampered' WHERE user_id = ANY(%s)", [corrupt])
    execute(auth, "UPDATE users SET deleted_at = NULL WHERE user_id = 'u-40'")  # stale: soft-deleted at the source
    execute(auth, "INSERT INTO users (user_id, name) VALUES ('u-999', 'only here')")  # extra: gone at the source
    before = xmins(fleet)
    start = time.monotonic()

    code, report = repair(fleet, "--batch-keys", "2")
    seconds = time.monotonic() - start
    assert code == 2, json.dumps(report, indent=1)  # the extra row is kept: still differing
    (table,) = report["repair"]
    assert (table["missing"], table["different"], table["extra"]) == (4, 2, 2), table
    assert table["resnapshotted"] == 7 and len(table["signals"]) == 4, table  # 6 + the stale u-40, 2 a batch
    assert (table["extra_kept"], table["extra_deleted"], table["repaired"], table["still_different"]) == (1, 0, 7, 1)
    (after,) = report["after"]["tables"]
    assert after["deep"]["extra"] == {"total": 1, "keys": ["u-999"]} and after["verdict"] == "mismatch"

    source, sink = rows(fleet, "bob"), rows(fleet, "auth")
    assert {k: v for k, v in sink.items() if k != "u-999"} == source, "every row the source has, as it has it"
    assert sink["u-999"] == ("only here", None, True, None), "an extra row stays without --delete-extra"
    now = xmins(fleet)
    repaired = set(lost + corrupt + ["u-40"])
    untouched = {k: x for k, x in before.items() if k not in repaired}
    assert {k: now[k] for k in untouched} == untouched, "no other row was written (same xmin)"
    assert all(now[k] != before.get(k) for k in repaired), "each repaired row was written once more"

    # More keys differ than --max-keys: refused before any signal, exit 2, saying how many.
    execute(auth, "UPDATE users SET email = 'x' WHERE user_id IN ('u-20', 'u-21', 'u-22')")
    sent = signals(fleet)
    code, out = fleet.cli(
        "accuracy",
        "--project",
        str(fleet.root / "hephaestus.yaml"),
        "--definitions",
        str(fleet.root / "definitions"),
        "--deep",
        "--repair",
        "--max-keys",
        "2",
    )
    assert code == 2 and "3 keys differ, more than --max-keys 2" in out and "nothing sent" in out, out
    assert signals(fleet) == sent

    before = xmins(fleet)
    code, report = repair(fleet, "--delete-extra")
    assert code == 0, json.dumps(report, indent=1)
    (table,) = report["repair"]
    assert (table["resnapshotted"], table["extra_deleted"], table["repaired"], table["still_different"]) == (3, 1, 4, 0)
    assert rows(fleet, "auth") == rows(fleet, "bob")
    now = xmins(fleet)
    assert {k: now[k] for k in before if k not in ("u-20", "u-21", "u-22", "u-999")} == {
        k: x for k, x in before.items() if k not in ("u-20", "u-21", "u-22", "u-999")
    }
    audit = [json.loads(line) for line in (fleet.root / "audit.jsonl").read_text().splitlines()]
    deletes = [(e["action"], e["outcome"]) for e in audit if e["action"] == "accuracy-delete-extra"]
    assert deletes == [("accuracy-delete-extra", "intent"), ("accuracy-delete-extra", "ok")]
    signalled = [e for e in audit if e["action"] == "snapshot-signal" and e["outcome"] == "ok"]
    assert len(signalled) == 4 + 1, "every signal audited: 4 batches of 2, then 3 keys in one"
    print(f"first repair: 7 keys in 4 signals, {seconds:.1f}s")
