"""The layers in ARCHITECTURE.md, enforced: a leak fails the tests, not a future reader."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.conftest import REPO


def test_import_contracts_hold() -> None:
    lint = [
        sys.executable,
        "-c",
        "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
    ]
    result = subprocess.run(lint, cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# Every call that changes a cluster, a database or a topic, by the name it is called with.
WRITES = {
    # Connect (connect.client): config writes, state, offsets
    "create", "put_config", "delete", "pause", "resume", "stop", "restart", "alter_offsets", "reset_offsets",
    # Kafka (hephaestus.kafka): a transactional copy, a deletion of records, topics created
    "replay", "delete_before", "create_topics",
    # PostgreSQL: a publication altered, a signal row, a slot dropped
    "alter", "insert_signal",
    # git and the ownership record: an import's files
    "write_files",
}  # fmt: skip
# The executors: each writes only what a `Cleared` from safety.gate lets it (checked below), or
# is the edge that implements the write itself.
EXECUTORS = {
    "hephaestus/reconciler/apply.py": "apply.execute takes the cluster's Cleared",
    "hephaestus/reconciler/moves.py": "a rename, called by apply._send only",
    "hephaestus/reconciler/prepare.py": "publication changes, each in the Cleared handed by run._written",
    "hephaestus/offsets/run.py": "offsets.apply takes a Cleared",
    "hephaestus/offsets/restore.py": "offsets restore: restore.apply takes a Cleared and checks each item is in it",
    "hephaestus/adopt/run.py": "import.write takes a Cleared",
    "hephaestus/slots/run.py": "slots.drop takes a Cleared",
    "hephaestus/dlq/run.py": "replay._send takes a Cleared; purge clears itself",
    "hephaestus/heal/run.py": "heal._act takes the cluster's Cleared",
    "hephaestus/snapshot/manual.py": "snapshot.send takes a Cleared",
    "hephaestus/reconciler/topicwrite.py": "topics cleared by safety.gate.check, then created",
    "hephaestus/snapshot/hooks.py": "a reconcile's follow-up, called after apply.execute with the cleared plan",
    "hephaestus/generator/output.py": "generate's own files (connector JSON from definitions)",
    "hephaestus/commands/generate.py": "generate's own files",
    "hephaestus/commands/dlq.py": "calls dlq.run.replay, which judges at the gate before anything is sent",
    "hephaestus/commands/ksql.py": "`ksql new` creates a migration file (files.create), no data",
}
EDGES = {
    "hephaestus/connect/client.py",
    "hephaestus/kafka.py",
    "hephaestus/publications/db.py",
    "hephaestus/snapshot/db.py",
}


def _write_calls(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in WRITES and not _harmless(node):
                found.append((name, node.lineno))
    return found


def _harmless(call: ast.Call) -> bool:
    """`dict.pop`-like calls that share a name: a `.delete` on the ownership store's file, etc."""
    target = call.func.value if isinstance(call.func, ast.Attribute) else None
    return isinstance(target, ast.Name) and target.id in {"records", "self", "store", "conn", "cur", "sql"}


def test_no_module_writes_around_the_gate() -> None:
    """Issue 29: every write of every command passes the one gate; a write path that bypasses it
    is a defect. A module that calls a write is an executor taking a Cleared, or the edge itself."""
    strays = {}
    for path in sorted((REPO / "hephaestus").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        calls = _write_calls(path)
        if calls and rel not in EXECUTORS and rel not in EDGES:
            strays[rel] = calls
    assert strays == {}


@pytest.mark.parametrize("rel", sorted(k for k in EXECUTORS if "/commands/" not in k and "output" not in k))
def test_every_executor_takes_the_gates_pass(rel: str) -> None:
    source = (REPO / rel).read_text()
    takes = "Cleared" in source or rel.endswith(("moves.py", "hooks.py"))
    assert takes, f"{rel} writes without taking a safety.gate.Cleared"


def test_a_replication_slot_is_dropped_in_one_place() -> None:
    found = [
        p.relative_to(REPO).as_posix()
        for p in sorted((REPO / "hephaestus").rglob("*.py"))
        if "pg_drop_replication_slot" in p.read_text()
    ]
    assert found == ["hephaestus/slots/run.py"]
