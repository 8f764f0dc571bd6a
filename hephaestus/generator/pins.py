"""Plugin versions pinned fleet-wide by the project file, written into generated connectors (pure;
issue 50): a connector's class gets `connector.plugin.version`, a converter's class the converter's
pin, unless its definition's options pin it already (the definition is nearer the pipeline)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hephaestus.classes import PIN_KEYS
from hephaestus.generator.model import Connector


def pinned(c: Connector, versions: Mapping[str, str]) -> Connector:
    config = dict(c.config)
    for key, class_key in PIN_KEYS.items():
        cls = config.get(class_key, "").strip()
        if cls in versions and not config.get(key, "").strip():
            config[key] = versions[cls]
    return c if config == c.config else replace(c, config=config)
