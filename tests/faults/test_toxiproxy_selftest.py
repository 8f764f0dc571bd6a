"""Self-test of the Toxiproxy helper: a throwaway loopback HTTP server behind one proxy."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from tests.faults.toxiproxy import Proxy, Toxiproxy
from tests.loopback import serving

pytestmark = pytest.mark.faults


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    # ThreadingHTTPServer's handler threads are daemons: one a toxic left hanging never
    # holds up shutdown.
    with serving(_Hello) as url:
        yield url.removeprefix("http://")


@pytest.fixture(scope="module")
def toxiproxy() -> Iterator[Toxiproxy]:
    # One server for the module: starting it is the slow part, and reset() isolates tests.
    with Toxiproxy() as running:
        yield running


@pytest.fixture
def proxy(toxiproxy: Toxiproxy, upstream: str) -> Iterator[Proxy]:
    created = toxiproxy.proxy("selftest", upstream=upstream)
    try:
        yield created
    finally:
        created.delete()


def _get(proxy: Proxy, timeout: float = 5.0) -> httpx.Response:
    # A fresh connection per request: a pooled one opened before a toxic would dodge it.
    return httpx.get(proxy.url + "/", timeout=timeout)


def test_traffic_passes(proxy: Proxy, upstream: str) -> None:
    assert proxy.listen.startswith("127.0.0.1:") and not proxy.listen.endswith(":0")
    assert proxy.upstream == upstream
    assert _get(proxy).text == "hello"


def test_latency_times_the_client_out_then_lifts(proxy: Proxy) -> None:
    with proxy.toxics(("latency", {"latency": 1500})) as names:
        assert names == ["latency_downstream"]
        with pytest.raises(httpx.ReadTimeout):
            _get(proxy, timeout=0.5)
    assert _get(proxy, timeout=0.5).text == "hello"


def test_reset_peer_is_a_transport_error(proxy: Proxy) -> None:
    name = proxy.toxic("reset_peer", {"timeout": 0})
    with pytest.raises(httpx.TransportError):
        _get(proxy)
    proxy.remove(name)
    assert _get(proxy).text == "hello"


def test_disable_refuses_then_enable_restores(proxy: Proxy) -> None:
    proxy.disable()
    with pytest.raises(httpx.ConnectError):
        _get(proxy)
    proxy.enable()
    assert _get(proxy).text == "hello"


def test_clear_removes_every_toxic(proxy: Proxy) -> None:
    proxy.toxic("timeout", {"timeout": 0}, name="stall")
    proxy.toxic("bandwidth", {"rate": 1}, stream="upstream")
    proxy.clear()
    assert _get(proxy).text == "hello"
