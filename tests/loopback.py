"""A Slack-compatible webhook receiver on loopback: tests read what was posted."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` served on a loopback port in a thread; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class SlackReceiver:
    """What Slack's incoming webhooks do: 200 "ok" for a delivered message; `refusals` are
    answered first, one per post (429 with Retry-After when rate limited, 500 on an outage),
    and such a post is not delivered."""

    def __init__(self, refusals: tuple[int, ...] = ()) -> None:
        self.messages: list[dict[str, Any]] = []
        self.posts = 0
        self.refusals = list(refusals)
        self.url = ""

    def texts(self) -> list[str]:
        return [str(m.get("text", "")) for m in self.messages]


@contextmanager
def slack_receiver(refusals: tuple[int, ...] = ()) -> Iterator[SlackReceiver]:
    receiver = SlackReceiver(refusals)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.posts += 1
            if receiver.refusals:
                status = receiver.refusals.pop(0)
                self.send_response(status)
                self.send_header("Retry-After", "0")  # Slack sends it with a 429
                self.end_headers()
                self.wfile.write(b"rate_limited" if status == 429 else b"service_unavailable")
                return
            receiver.messages.append(json.loads(body))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as url:
        receiver.url = f"{url}/services/T000/B000/XXX"
        yield receiver
