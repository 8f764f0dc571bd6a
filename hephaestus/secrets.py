"""Masking: secret values never reach output or logs. Placeholders are not secrets."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "****"
_SENSITIVE = re.compile(r"password|passwd|secret|token|credential|jaas|private|api[._-]?key|access[._-]?key",
                        re.IGNORECASE)
_PLACEHOLDER = re.compile(r"^\$\{[a-zA-Z0-9_.-]+:[^}]*\}$")


def is_sensitive(key: str) -> bool:
    return bool(_SENSITIVE.search(key))


def is_placeholder(value: str) -> bool:
    """`${file:/path:key}` and friends: resolved by Connect, not a secret themselves."""
    return bool(_PLACEHOLDER.match(value))


def mask_value(key: str, value: str | None) -> str | None:
    """A sensitive key's literal value is masked; a `${file:…}` placeholder is shown as is."""
    if value is None or not is_sensitive(key) or is_placeholder(value):
        return value
    return MASK


def mask_config(config: Mapping[str, str]) -> dict[str, str]:
    return {k: mask_value(k, v) or "" for k, v in config.items()}
