"""Keep config values that may be secrets out of every message we build or pass on.

Connect echoes config values in its own error texts ("Invalid value … for configuration …"),
so a server message about a request that carried a config is masked before it is shown. The
masking itself is the one process-wide redactor (`hephaestus.secrets.REDACTOR`): what is
learnt here is masked in every channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hephaestus.secrets import MASK, REDACTOR, is_placeholder

# Naming these keeps messages like "Failed to find any class … matches X" useful.
_NEVER_SECRET = frozenset({"name", "connector.class"})


def sensitive_values(config: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `config` to mask, longest first (and learnt by the redactor)."""
    REDACTOR.learn_config({k: v for k, v in config.items() if k not in _NEVER_SECRET})
    found = {value for key, value in config.items() if isinstance(value, str) and value and _sensitive(key, value)}
    return tuple(sorted(found, key=len, reverse=True))


def _sensitive(key: str, value: str) -> bool:
    if key in _NEVER_SECRET or is_placeholder(value):
        return False
    return REDACTOR.is_secret_key(key) or REDACTOR(value) != value


def redact(text: str, values: Iterable[str]) -> str:
    for value in values:
        text = text.replace(value, MASK)
    return REDACTOR(text)
