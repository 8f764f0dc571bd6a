"""TLS verification settings for httpx, shared by every HTTP edge (Connect, ksqlDB)."""

from __future__ import annotations

import ssl

from hephaestus.errors import HephaestusError


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
