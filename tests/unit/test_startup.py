"""Start-up costs that stay paid for (issue 15): nothing loaded that a command does not use."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_plain_http_loads_no_ca_bundle_and_https_checks_it(tmp_path: Path) -> None:
    from hephaestus.errors import HephaestusError
    from hephaestus.http import verify_for

    missing = str(tmp_path / "no-such-ca.pem")
    assert verify_for(missing, "Kafka Connect 'c'", "HTTP://connect:8083") is False
    assert verify_for(True, "Kafka Connect 'c'", "http://connect:8083") is False
    assert verify_for(True, "Kafka Connect 'c'", "https://connect") is True
    with pytest.raises(HephaestusError, match="Kafka Connect 'c': cannot load CA bundle"):
        verify_for(missing, "Kafka Connect 'c'", "https://connect")


def test_httpx_cli_is_not_loaded() -> None:
    import subprocess
    import sys

    code = "import hephaestus, httpx, sys; print('rich' in sys.modules, 'pygments' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_version_fast_path_prints_what_click_prints(capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    from hephaestus.cli import run

    assert run(["--version"]) == 0
    clicks = capsys.readouterr().out
    fast = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.argv = ['hephaestus', '--version']; "
            "from hephaestus.entry import main; main(); print('click' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert fast == clicks + "False\n"


def test_a_dry_run_imports_neither_psycopg_nor_rich_nor_the_snapshot_hooks() -> None:
    import subprocess
    import sys

    code = (
        "import sys, hephaestus.cli, hephaestus.reconciler.run, hephaestus.reconciler.render; "
        "print(sorted(m for m in ('psycopg', 'rich', 'slack_sdk', 'hephaestus.snapshot.hooks', 'confluent_kafka') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
