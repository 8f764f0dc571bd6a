"""`accuracy --deep --repair --dry-run` on the real stack: the plan the real run would carry
out (keys to re-snapshot, signal filters, rows to delete), and nothing written: no signal row,
no sink row touched (same `xmin`), no audit record."""

from __future__ import annotations

import json
from pathlib import Path

from tests.stack.fleet import Fleet
from tests.stack.support import execute
from tests.stack.test_accuracy_repair import repair, signals, users, xmins

__all__ = ["users"]  # the fixture, shared with the real repair's test


def test_the_dry_run_shows_the_plan_and_writes_nothing(users: Fleet) -> None:
    fleet = users
    auth = fleet.stack.dsn(fleet.dbs["auth"])
    execute(auth, "DELETE FROM users WHERE user_id = 'u-3'")
    execute(auth, "UPDATE users SET name = 'tampered' WHERE user_id = 'u-5'")
    execute(auth, "INSERT INTO users (user_id, name) VALUES ('u-999', 'only here')")
    before, sent = xmins(fleet), signals(fleet)
    audit = Path(fleet.root / "audit.jsonl")
    audited = audit.read_text() if audit.exists() else ""

    code, report = repair(fleet, "--delete-extra", "--dry-run")
    assert code == 2, json.dumps(report, indent=1)  # as `accuracy --deep`: something to repair
    (table,) = report["repair"]
    assert report["dry_run"] is True and table["resnapshot"] == ["u-3", "u-5"] and table["extra"] == ["u-999"]
    assert table["delete_extra"] is True and table["signals"] == ["\"user_id\" IN (E'u-3', E'u-5')"]
    assert signals(fleet) == sent and xmins(fleet) == before
    assert (audit.read_text() if audit.exists() else "") == audited
