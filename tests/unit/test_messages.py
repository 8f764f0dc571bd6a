"""Messages that help (issue 48): an unset credential named by its variable in every command,
hephaestus's own prose never masked by its redactor, a URL that is not Connect's said at once."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from hephaestus.cli import run
from hephaestus.errors import HephaestusError
from hephaestus.project import SecretRef
from hephaestus.secrets import MASK, Redactor
from tests.loopback import serving

UNSET = "HEPH_ISSUE48_UNSET_PASSWORD"


def project(tmp_path: Path) -> Path:
    (tmp_path / "connectors/c").mkdir(parents=True)
    path = tmp_path / "hephaestus.yaml"
    path.write_text(
        "clusters:\n  c:\n    url: http://127.0.0.1:9\n    connectors: connectors/c\n"
        f"    username: admin\n    password: {{env: {UNSET}}}\n"
    )
    return path


@pytest.mark.parametrize("command", [["reconcile", "--dry-run"], ["import", "--dry-run"]])
def test_an_unset_credential_is_named_by_its_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """reconcile said "no client (its credentials are not set here)"; import named the variable
    but its redactor masked the next word: "password: **** variable … is not set"."""
    monkeypatch.delenv(UNSET, raising=False)
    code = run([*command, "--project", str(project(tmp_path))])
    out = capsys.readouterr()
    assert code == 1
    assert f"environment variable {UNSET} is not set: it holds the password of cluster c" in out.out + out.err
    assert MASK not in out.out + out.err and "no client (its credentials" not in out.out + out.err


@pytest.mark.parametrize(
    ("ref", "what"),
    [
        (SecretRef(env=UNSET), "the password of cluster c"),
        (SecretRef(env=UNSET), "the password of database auth"),
        (SecretRef(env=UNSET), "the Slack webhook"),
        (SecretRef(file="/nonexistent/issue48/secret"), "the password of ksqlDB k"),
    ],
)
def test_the_redactor_leaves_an_unresolved_secrets_message_whole(
    monkeypatch: pytest.MonkeyPatch, ref: SecretRef, what: str
) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    with pytest.raises(HephaestusError) as caught:
        ref.resolve(what)
    message = str(caught.value)
    assert what in message
    assert Redactor()(message) == message


def test_the_redactor_still_masks_a_password_after_a_colon() -> None:
    """The wording moved, not the redactor's rule: a real `password: value` is still masked."""
    redact = Redactor()
    assert redact("password: hunter2 was rejected") == f"password: {MASK} was rejected"
    assert redact("cluster c password: environment") == f"cluster c password: {MASK}"


class NotConnect(BaseHTTPRequestHandler):
    """Another web server where Connect was expected: 404 as an HTML page, for every path."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body><h1>404 Not Found</h1></body></html>")

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_that_is_not_connect_is_named_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was retried for 16 s as "not ready"."""
    (tmp_path / "connectors/c").mkdir(parents=True)
    with serving(NotConnect) as url:
        (tmp_path / "hephaestus.yaml").write_text(f"clusters:\n  c:\n    url: {url}\n    connectors: connectors/c\n")
        started = time.monotonic()
        code = run(["reconcile", "--dry-run", "--project", str(tmp_path / "hephaestus.yaml")])
        took = time.monotonic() - started
    out = capsys.readouterr()
    assert code == 1 and took < 5, (code, took)
    assert f"{url} is not a Kafka Connect REST API: GET /connectors answered 404 (Not Found)" in out.out + out.err
    assert "not ready" not in out.out + out.err
