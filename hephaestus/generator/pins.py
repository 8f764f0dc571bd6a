"""Plugin versions pinned fleet-wide by the project file, written into generated connectors (pure;
issue 50): a connector's class gets `connector.plugin.version`, a converter's class the converter's
pin, unless its definition's options pin it already (the definition is nearer the pipeline).
Then each key is spelled as the pinned version reads it (`hephaestus.keyrenames`): a bump across a
release that renamed a key rewrites it, a rollback below it rewrites it back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hephaestus.classes import PIN_KEYS
from hephaestus.errors import InputError, InputErrors
from hephaestus.generator.model import Connector
from hephaestus.keyrenames import RenameClash, rewritten


def pinned(c: Connector, versions: Mapping[str, str]) -> Connector:
    config = dict(c.config)
    for key, class_key in PIN_KEYS.items():
        cls = config.get(class_key, "").strip()
        if cls in versions and not config.get(key, "").strip():
            config[key] = versions[cls]
    return c if config == c.config else replace(c, config=config)


def renamed(connectors: list[Connector]) -> list[Connector]:
    """Every connector's keys as its pin reads them; InputErrors naming each definition that
    sets one setting under both names (nothing is written then)."""
    out, errors = [], []
    for c in connectors:
        try:
            config = rewritten(c.config)
        except RenameClash as exc:
            errors.append(InputError(c.origin.file, f"connector {c.name!r}: {exc}", c.origin.field, c.origin.line))
            continue
        out.append(c if config == c.config else replace(c, config=config))
    if errors:
        raise InputErrors(errors)
    return out
