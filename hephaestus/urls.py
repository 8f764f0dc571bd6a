"""One spelling of a Connect cluster's URL (pure): what lock keys, a sealed plan's basis and the
project's shared-URL check compare. The standard library's parser: httpx costs ~50 ms to import,
and `validate` sends no request (issue 47); spelt as httpx.URL spelt it before, so that keys
recorded by earlier versions still match (tests/unit/test_core_ownership.py holds it to that)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote, urlsplit

__all__ = ["normalised_url"]


def normalised_url(url: str) -> str:
    """`http://host:port/path` with scheme and host lower-cased, the default port made explicit
    and credentials left out: one Connect cluster, one spelling; ValueError when unusable."""
    parts = urlsplit(url)
    port = parts.port  # ValueError: not a number, or out of range
    host = _host(parts.hostname or "")
    scheme = parts.scheme.lower()
    port = port or {"http": 80, "https": 443}.get(scheme, 0)
    return f"{scheme}://{host}:{port}{unquote(_without_dots(parts.path)).rstrip('/')}"


_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")


def _without_dots(path: str) -> str:
    """The path with its `.` and `..` segments resolved (RFC 3986, 5.2.4): `/a/./b/../c` is `/a/c`."""
    kept: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if kept and kept != [""]:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "/".join(kept)


def _host(host: str) -> str:
    """A DNS name (one IDNA can encode), or an IP address as ipaddress reads it ("027.0.0.1"
    refused); spelled as httpx spelt it before, so that lock keys and sealed plans keep theirs."""
    if ":" in host or re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+", host):
        return str(ipaddress.ip_address(host))
    try:
        ascii_name = host if host.isascii() else host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"invalid host {host!r}") from exc
    if not _NAME.fullmatch(ascii_name):
        raise ValueError(f"invalid host {host!r}")
    return host
