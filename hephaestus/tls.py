"""TLS verification settings for httpx, shared by every HTTP edge (Connect, ksqlDB)."""

from __future__ import annotations

import ssl

from hephaestus.errors import HephaestusError


def verify_for(verify: bool | str, what: str) -> bool | ssl.SSLContext:
    """True/False as given; a CA bundle path becomes an SSL context (httpx 0.28 wants one)."""
    if isinstance(verify, bool):
        return verify
    try:
        return ssl.create_default_context(cafile=verify)
    except (OSError, ssl.SSLError) as exc:
        raise HephaestusError(f"{what}: cannot load CA bundle {verify}: {exc}") from exc
