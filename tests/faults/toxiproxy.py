"""Toxiproxy (Shopify's TCP fault-injection proxy) driven over its HTTP API, for fault tests.

`Toxiproxy` runs a private toxiproxy-server (built by dev/tools/toxiproxy) on a free loopback
port; `Proxy` is one TCP proxy in it, in front of a real upstream, whose traffic tests degrade
with toxics (latency, resets, stalls, …) and then restore.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import httpx

TOOL = Path(__file__).resolve().parents[2] / "dev" / "tools" / "toxiproxy"
# The Connect REST port the stack publishes: the usual thing a fault test puts a proxy in front of.
DEFAULT_UPSTREAM = "127.0.0.1:28083"

# The toxics toxiproxy registers (toxics/*.go); attributes are integers (ms, KB/s, bytes; µs for
# slicer's delay).
ToxicType = Literal["latency", "reset_peer", "timeout", "bandwidth", "slow_close", "limit_data", "slicer"]
# downstream = upstream → client (responses), upstream = client → upstream (requests).
Stream = Literal["upstream", "downstream"]
ToxicSpec = tuple[ToxicType, Mapping[str, int]]


class ToxiproxyError(RuntimeError):
    """The server would not start, or its API refused a request."""


def _free_port() -> int:
    # The port is released before the server binds it; a rare steal shows up as a start failure.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _check(response: httpx.Response, *expected: int) -> httpx.Response:
    # The API answers errors as {"error": ..., "status": ...}; surface that rather than a bare code.
    if response.status_code not in expected:
        raise ToxiproxyError(
            f"toxiproxy {response.request.method} {response.request.url.path}: "
            f"{response.status_code} {response.text.strip()}"
        )
    return response


def server_binary() -> str:
    """Path of toxiproxy-server; the first call on a machine builds it (build log to stderr)."""
    done = subprocess.run([str(TOOL)], check=True, stdout=subprocess.PIPE, text=True)
    return done.stdout.strip()


class Proxy:
    """One TCP proxy: clients connect to `listen`; traffic goes on to `upstream` unless toxics bite."""

    def __init__(self, api: httpx.Client, name: str, listen: str, upstream: str) -> None:
        self._api = api
        self.name = name
        self.listen = listen
        self.upstream = upstream

    @property
    def url(self) -> str:
        return f"http://{self.listen}"

    def toxic(
        self,
        type: ToxicType,  # noqa: A002 - the API's own field name
        attributes: Mapping[str, int],
        stream: Stream = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
    ) -> str:
        """Add a toxic; returns its name (the server defaults it to `<type>_<stream>`)."""
        body: dict[str, Any] = {
            "type": type,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": dict(attributes),
        }
        if name is not None:
            body["name"] = name
        created = _check(self._api.post(f"/proxies/{self.name}/toxics", json=body), 200)
        toxic_name: str = created.json()["name"]
        return toxic_name

    def remove(self, toxic_name: str) -> None:
        _check(self._api.delete(f"/proxies/{self.name}/toxics/{toxic_name}"), 204)

    def clear(self) -> None:
        """Remove every toxic on this proxy, whoever added it."""
        listed = _check(self._api.get(f"/proxies/{self.name}/toxics"), 200).json()
        for toxic in listed:
            self.remove(toxic["name"])

    def disable(self) -> None:
        """Stop listening and drop open connections: the upstream looks down (connection refused)."""
        self._set_enabled(False)

    def enable(self) -> None:
        # Re-listens on the port it had, which toxiproxy kept after resolving `:0`.
        self._set_enabled(True)

    def delete(self) -> None:
        """Remove the proxy itself, closing its port and every connection through it."""
        _check(self._api.delete(f"/proxies/{self.name}"), 204)

    def _set_enabled(self, enabled: bool) -> None:
        _check(self._api.patch(f"/proxies/{self.name}", json={"enabled": enabled}), 200)

    @contextmanager
    def toxics(self, *specs: ToxicSpec, stream: Stream = "downstream") -> Iterator[list[str]]:
        """Apply toxics for the block, e.g. `with proxy.toxics(("latency", {"latency": 5000})):`."""
        names: list[str] = []
        try:
            for toxic_type, attributes in specs:
                names.append(self.toxic(toxic_type, attributes, stream=stream))
            yield names
        finally:
            for toxic_name in names:
                response = self._api.delete(f"/proxies/{self.name}/toxics/{toxic_name}")
                # 404: the block already removed it (remove()/clear()/reset), which is fine.
                _check(response, 204, 404)


class Toxiproxy:
    """A private toxiproxy-server on a free loopback port, for the duration of a `with` block."""

    def __init__(self, binary: str | None = None, start_timeout: float = 10.0) -> None:
        self._binary = binary
        self._start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        # The server logs a JSON line per event; a file, not a pipe nobody drains, so it never blocks.
        self._log: IO[bytes] | None = None
        self._api: httpx.Client | None = None
        self.api_url = ""

    def __enter__(self) -> Toxiproxy:
        binary = self._binary or server_binary()
        port = _free_port()
        self.api_url = f"http://127.0.0.1:{port}"
        self._log = tempfile.TemporaryFile()
        try:
            self._process = subprocess.Popen(
                [binary, "-host", "127.0.0.1", "-port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
            )
            self._api = httpx.Client(base_url=self.api_url, timeout=5.0)
            self._wait_until_up()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _wait_until_up(self) -> None:
        assert self._process is not None and self._api is not None
        deadline = time.monotonic() + self._start_timeout
        while True:
            if self._process.poll() is not None:
                raise ToxiproxyError(f"toxiproxy-server exited {self._process.returncode}: {self.log()}")
            try:
                if self._api.get("/version").status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise ToxiproxyError(
                    f"toxiproxy-server not answering on {self.api_url} after {self._start_timeout} s: {self.log()}"
                )
            time.sleep(0.02)  # poll interval; the deadline above bounds the wait

    def _stop(self) -> None:
        if self._api is not None:
            self._api.close()
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()  # SIGTERM: the server shuts its listeners down cleanly
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._log is not None:
            self._log.close()
        self._api = self._process = self._log = None

    def log(self) -> str:
        """The server's output so far (JSON lines), for failure messages."""
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    @property
    def api(self) -> httpx.Client:
        if self._api is None:
            raise ToxiproxyError("Toxiproxy is not running: use it as a context manager")
        return self._api

    def proxy(self, name: str, upstream: str = DEFAULT_UPSTREAM) -> Proxy:
        """Create a proxy on a free loopback port in front of `upstream` (host:port)."""
        # Port 0 lets the kernel pick, race-free; the API answers with the address it bound.
        body = {"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": True}
        created = _check(self.api.post("/proxies", json=body), 201).json()
        return Proxy(self.api, name, created["listen"], created["upstream"])

    def reset(self) -> None:
        """Re-enable every proxy and remove every toxic (between tests sharing one server)."""
        _check(self.api.post("/reset"), 204)

    def version(self) -> str:
        version: str = _check(self.api.get("/version"), 200).json()["version"]
        return version
