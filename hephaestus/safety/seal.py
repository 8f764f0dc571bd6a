"""The seal of a saved plan (pure): one content hash over everything the plan holds, an HMAC
when a key is given, and keyed fingerprints of what it was computed from that reveal nothing.

- `seal(body)`: SHA-256 of the body's canonical JSON (sorted keys, no spaces, UTF-8). An edit,
  a truncation or a reordering of the file changes it.
- `signature(body, key)`: HMAC-SHA256 with `HEPHAESTUS_PLAN_KEY` (CI holds the key; whoever can
  write the plan file but not read the key cannot forge one). Without a key the content hash
  guards against accidents, not against someone who recomputes it: the plan is then as
  trustworthy as whoever wrote the file, and every step still passes the gate when applied.
- `Fingerprints`: a live config's fingerprint covers its secret values (a password rotated
  between plan and apply moves it) without revealing them: each secret value is first
  stretched with scrypt under the plan's random salt (a guess costs one scrypt), then the
  whole config is HMAC'd with the key (or the salt when there is none).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from hephaestus.secrets import REDACTOR, is_sensitive

KEY_ENV = "HEPHAESTUS_PLAN_KEY"
# scrypt's cost for one secret value: 16 MiB and ~40 ms here, once per distinct value.
_SCRYPT = {"n": 1 << 14, "r": 8, "p": 1, "dklen": 32, "maxmem": 64 << 20}


def canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def seal(body: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(body)).hexdigest()


def signature(body: Any, key: bytes) -> str:
    return "hmac-sha256:" + hmac.new(key, canonical(body), hashlib.sha256).hexdigest()


def verify(found: str, expected: str) -> bool:
    return hmac.compare_digest(found.encode(), expected.encode())


def plan_key() -> bytes | None:
    """The signing key from the environment (CI's secret), when one is set."""
    value = os.environ.get(KEY_ENV, "")
    return value.encode() if value else None


def new_salt() -> str:
    return os.urandom(16).hex()


def is_secret(key: str, value: str) -> bool:
    """A value to keep out of the file: a secret key's, or one holding a credential."""
    return is_sensitive(key) or REDACTOR(value) != value


class Fingerprints:
    """Keyed fingerprints for one plan (its salt, and the signing key when there is one)."""

    def __init__(self, salt: str, key: bytes | None = None) -> None:
        self._salt = bytes.fromhex(salt)
        self._key = key or self._salt
        self._stretched: dict[str, str] = {}

    def value(self, secret: str) -> str:
        """A secret value, stretched: what the file may hold in its place."""
        if secret not in self._stretched:
            digest = hashlib.scrypt(secret.encode(), salt=self._salt, **_SCRYPT)
            self._stretched[secret] = hmac.new(self._key, digest, hashlib.sha256).hexdigest()[:32]
        return self._stretched[secret]

    def config(self, config: Mapping[str, str], state: str = "") -> str:
        """One config (its secrets stretched) and, when given, the state it is in."""
        shown = {k: ("secret:" + self.value(v) if is_secret(k, v) else v) for k, v in config.items() if k != "name"}
        return self.of([shown, state])

    def of(self, thing: Any) -> str:
        """Any JSON value (no secret in it), keyed."""
        return hmac.new(self._key, canonical(thing), hashlib.sha256).hexdigest()[:32]
