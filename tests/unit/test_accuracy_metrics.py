"""Prometheus output: the generic metrics module (textfile, Pushgateway) and accuracy's gauges."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hephaestus.accuracy.model import (
    AccuracyReport,
    Counts,
    Endpoint,
    Filters,
    KeyDiff,
    KeyList,
    TablePair,
    TableResult,
)
from hephaestus.accuracy.publish import PUSH_JOB, metrics_of, publish_metrics
from hephaestus.generator.model import AccuracySpec, TableRef
from hephaestus.notify.metrics import Metrics


@contextmanager
def pushgateway() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    """A loopback stand-in recording (method, path, body) of each request."""
    seen: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # noqa: N802 - http.server's name
            seen.append(("PUT", self.path, self.rfile.read(int(self.headers.get("Content-Length", 0)))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_textfile_holds_the_gauges(tmp_path: Path) -> None:
    metrics = Metrics()
    metrics.set("things", "Things.", 3, {"kind": "a"})
    metrics.set("things", "Things.", 4, {"kind": "b"})
    path = tmp_path / "textfile" / "heph.prom"
    assert metrics.write_textfile(path)
    text = path.read_text()
    assert 'hephaestus_things{kind="a"} 3.0' in text and 'hephaestus_things{kind="b"} 4.0' in text
    assert list(path.parent.iterdir()) == [path], "written atomically, no temp file left"


def test_each_run_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.set("x", "X.", 1)
    second.set("x", "X.", 2)  # no "duplicated timeseries" error: registries are separate


def test_push_puts_the_registry_under_the_job() -> None:
    metrics = Metrics()
    metrics.set("x", "X.", 1)
    with pushgateway() as (url, seen):
        assert metrics.push(url, "my_job", {"env": "local"})
    ((method, path, body),) = seen
    assert method == "PUT" and path == "/metrics/job/my_job/env/local"
    assert b"hephaestus_x 1.0" in body


def test_publishing_failures_never_raise(tmp_path: Path) -> None:
    metrics = Metrics()
    assert not metrics.push("http://127.0.0.1:9", "job")
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert not metrics.write_textfile(blocker / "sub" / "x.prom")


def report() -> AccuracyReport:
    users = TablePair(
        Endpoint("bob", TableRef("public", "users")),
        Endpoint("auth", TableRef("public", "users")),
        False,
        None,
        AccuracySpec(),
        "bob.yaml",
    )
    found = KeyDiff(KeyList(2, ()), KeyList(0, ()), KeyList(1, ()), 5)
    return AccuracyReport(
        (
            TableResult(users, "mismatch", Counts(10, 8), Filters("", ""), "s", 0, 0, found),
            TableResult(users, "error", error="boom"),
        ),
        True,
        1.5,
    )


def test_accuracy_gauges_per_table(tmp_path: Path) -> None:
    text = tmp_path / "a.prom"
    assert metrics_of(report(), now=123.0).write_textfile(text)
    body = text.read_text()
    labels = 'sink_database="auth",sink_table="public.users",source_database="bob",source_table="public.users"'
    for line in (
        f"hephaestus_accuracy_source_rows{{{labels}}} 10.0",
        f"hephaestus_accuracy_delta_rows{{{labels}}} -2.0",
        f"hephaestus_accuracy_match{{{labels}}} 0.0",
        f"hephaestus_accuracy_missing_rows{{{labels}}} 2.0",
        f"hephaestus_accuracy_replication_lag_bytes{{{labels}}} 0.0",
        "hephaestus_accuracy_tables_mismatched 1.0",
        "hephaestus_accuracy_tables_failed 1.0",
        "hephaestus_accuracy_last_run_timestamp_seconds 123.0",
    ):
        assert line in body, line


def test_publish_writes_the_textfile_and_pushes(tmp_path: Path) -> None:
    with pushgateway() as (url, seen):
        publish_metrics(report(), tmp_path / "a.prom", url)
    assert (tmp_path / "a.prom").is_file()
    assert seen[0][1] == f"/metrics/job/{PUSH_JOB}"
