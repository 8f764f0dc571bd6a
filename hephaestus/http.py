"""The one HTTP edge under every client (Kafka Connect, ksqlDB, Schema Registry, Slack).

What is decided here, once, for all of them:

* **how a client is built** (`client`): base URL, basic auth (given, or the URL's own user
  info, which the redactor learns), TLS (`verify_for`: a CA bundle, on or off), the timeout, no
  redirects followed (a redirect would resend a request, body and credentials, somewhere else),
  and a transport a test double can take the place of;
* **how an address is shown** (`server_of`): without its credentials, in every message;
* **how hard a request is retried** (`RetryPolicy`: attempts, exponential waits with jitter, a
  line on stderr before each wait) — each client says which of its errors are worth it;
* **what a request with no answer means** (`no_answer`): never sent (refused, no connection: safe
  to send again) or sent and maybe acted on (a reset, a read timeout: *ambiguous* — a write is
  sent again only when the client can prove it did not land, as Connect's edge does by reading
  the live state back; ksqlDB's writes cannot be proven, so they are not).
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from hephaestus.errors import HephaestusError, first_line
from hephaestus.secrets import REDACTOR

_log = logging.getLogger("hephaestus.http")

Hooks = Mapping[str, list[Callable[..., Any]]]


def verify_for(verify: bool | str, what: str, url: str = "") -> bool | ssl.SSLContext:
    """True/False as given; a CA bundle path becomes an SSL context (httpx 0.28 wants one).
    A plain `http://` server gets no TLS settings at all: loading the default CA bundle costs
    60–140 ms per client and would never be used (redirects are not followed)."""
    if url.lower().startswith("http://"):
        return False
    if isinstance(verify, bool):
        return verify
    try:
        return ssl.create_default_context(cafile=verify)
    except (OSError, ssl.SSLError) as exc:
        raise HephaestusError(f"{what}: cannot load CA bundle {verify}: {exc}") from exc


def ssl_context(verify: bool | str, what: str) -> ssl.SSLContext:
    """The same TLS rules as an SSL context, for a library that takes only that (slack-sdk)."""
    found = verify_for(verify, what)
    if isinstance(found, ssl.SSLContext):
        return found
    context = ssl.create_default_context()
    if not found:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


def server_of(url: str) -> str:
    """`url` as it may appear in a message: its user info (credentials) dropped."""
    return str(httpx.URL(url).copy_with(username=None, password=None))


def client(
    url: str,
    *,
    what: str,
    auth: tuple[str, str] | None = None,
    verify: bool | str = True,
    timeout: float = 30.0,
    transport: httpx.BaseTransport | None = None,
    headers: Mapping[str, str] | None = None,
    hooks: Hooks | None = None,
) -> httpx.Client:
    """An httpx client for one server, built the same way for every client of ours. `what`
    names the server in errors ("Kafka Connect 'dwh'")."""
    REDACTOR.learn_embedded(url)  # user info in a URL: masked wherever it could be echoed
    return httpx.Client(
        base_url=url,
        auth=auth,
        verify=verify_for(verify, what, url),
        timeout=timeout,
        transport=transport,
        headers=dict(headers or {}),
        event_hooks={k: list(v) for k, v in (hooks or {}).items()},
        follow_redirects=False,
    )


@dataclass(frozen=True)
class NoAnswer:
    """A request that got no HTTP answer: what happened, and whether it may have been acted on."""

    what: str
    maybe_sent: bool  # False: refused before sending (safe to send again, even a write)
    network: bool  # a network failure at all (else a misuse such as an unsupported protocol)


# Failures that happen before a request leaves: nothing reached the server.
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_NETWORK = (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)


def no_answer(exc: httpx.TransportError) -> NoAnswer:
    what = f"no response ({type(exc).__name__}: {exc})" if str(exc) else f"no response ({type(exc).__name__})"
    never_sent = isinstance(exc, _NEVER_SENT)
    return NoAnswer(what, not never_sent, never_sent or isinstance(exc, _NETWORK))


def is_transient(exc: BaseException) -> bool:
    """The default retry rule: an error of ours that says sending again is safe."""
    return isinstance(exc, HephaestusError) and getattr(exc, "transient", False) is True


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` counts the first try. Waits grow `initial_wait * multiplier**n`, capped at
    `max_wait`, plus up to `jitter` seconds at random so workers retrying together spread out.

    With the defaults the waits are about 0.5, 1, 2, 4, 8 s: ~16 s, enough for a Connect
    rebalance or a ksqlDB command queue to settle, short enough that a dead server fails a run
    quickly. `sleep` is injectable so tests count attempts, not seconds.
    """

    attempts: int = 6
    initial_wait: float = 0.5
    max_wait: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.5
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if min(self.initial_wait, self.max_wait, self.jitter) < 0 or self.multiplier < 1:
            raise ValueError("RetryPolicy waits must be >= 0 and multiplier >= 1")

    @classmethod
    def immediate(cls, attempts: int = 6) -> RetryPolicy:
        """No waiting at all: for tests that count attempts, not seconds."""
        return cls(attempts=attempts, initial_wait=0.0, max_wait=0.0, jitter=0.0)

    @property
    def budget_s(self) -> float:
        """The longest a call keeps retrying (waits between attempts, jitter left out): past
        this without any answer, the server counts as unreachable (see `connect.edge.Breaker`)."""
        waits = (min(self.initial_wait * self.multiplier**n, self.max_wait) for n in range(self.attempts - 1))
        return sum(waits)

    def retrying(self, retry_if: Callable[[BaseException], bool] = is_transient) -> Retrying:
        # tenacity's `multiplier` is our initial wait; our `multiplier` is its `exp_base`.
        wait = wait_exponential_jitter(
            multiplier=self.initial_wait, max=self.max_wait, exp_base=self.multiplier, jitter=self.jitter
        )
        return Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait,
            retry=retry_if_exception(retry_if),
            reraise=True,
            before_sleep=self._say,
            sleep=self.sleep,
        )

    def _say(self, state: RetryCallState) -> None:
        """A line on stderr before each wait: a retrying run is not a hung one."""
        failed = state.outcome.exception() if state.outcome else None
        if failed is not None and state.next_action is not None:
            # the hint after " — " comes with the final error; here only what happened
            _log.warning(
                "%s; trying again in %.1f s (attempt %d of %d)",
                first_line(failed).split(" — ")[0],
                state.next_action.sleep,
                state.attempt_number + 1,
                self.attempts,
            )
