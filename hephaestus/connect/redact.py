"""Keep config values that may be secrets out of every message we build or pass on.

Connect echoes config values in its own error texts ("Invalid value … for configuration …"),
so a server message about a request that carried a config is masked before it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MASK = "****"

_SECRET_KEY = re.compile(
    r"password|passwd|secret|token|credential|jaas|private|api[._-]?key|access[._-]?key", re.I)

# Long values are masked whatever their key: a secret can be misplaced under any key
# (a typo'd key name), and URLs such as connection.url can embed credentials.
# Short values ("true", "1000", "none") stay readable so messages remain actionable.
_LONG = 8

# Naming these keeps messages like "Failed to find any class … matches X" useful.
_NEVER_SECRET = frozenset({"name", "connector.class"})


def sensitive_values(config: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `config` to mask, longest first so no secret is left half-masked."""
    found = {value for key, value in config.items()
             if isinstance(value, str) and value and _sensitive(key, value)}
    return tuple(sorted(found, key=len, reverse=True))


def _sensitive(key: str, value: str) -> bool:
    if key in _NEVER_SECRET:
        return False
    return bool(_SECRET_KEY.search(key)) or len(value) >= _LONG


def redact(text: str, values: Iterable[str]) -> str:
    for value in values:
        text = text.replace(value, MASK)
    return text
