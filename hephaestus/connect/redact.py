"""Keep config values that may be secrets out of every message we build or pass on.

Connect echoes config values in its own error texts ("Invalid value … for configuration …"),
so a server message about a request that carried a config is masked before it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from hephaestus.secrets import MASK, is_placeholder, is_sensitive

# Credentials can hide in a value whatever its key: `jdbc:…?password=x`, `http://user:pw@host`.
_EMBEDDED = re.compile(r"password=|://[^/@\s]+:[^/@\s]+@", re.IGNORECASE)

# Naming these keeps messages like "Failed to find any class … matches X" useful.
_NEVER_SECRET = frozenset({"name", "connector.class"})


def sensitive_values(config: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `config` to mask, longest first so no secret is left half-masked."""
    found = {value for key, value in config.items()
             if isinstance(value, str) and value and _sensitive(key, value)}
    return tuple(sorted(found, key=len, reverse=True))


def _sensitive(key: str, value: str) -> bool:
    if key in _NEVER_SECRET or is_placeholder(value):
        return False
    return is_sensitive(key) or bool(_EMBEDDED.search(value))


def redact(text: str, values: Iterable[str]) -> str:
    for value in values:
        text = text.replace(value, MASK)
    return text
