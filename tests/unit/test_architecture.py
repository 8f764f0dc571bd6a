"""The layers in ARCHITECTURE.md, enforced: a leak fails the tests, not a future reader."""

from __future__ import annotations

import subprocess
import sys

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
