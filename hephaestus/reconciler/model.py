"""The inputs of a plan: what git wants and what Connect runs (values; pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Desired:
    name: str
    config: Mapping[str, str] = field(hash=False)
    origin: str = ""
    renamed_from: str = ""  # the live connector this one takes over (offsets and all)


@dataclass(frozen=True)
class Live:
    name: str
    config: Mapping[str, str] = field(hash=False)
    type: str = ""  # "source" / "sink" as Connect reports it
    state: str = ""  # RUNNING / PAUSED / STOPPED / FAILED … as Connect reports it



def comparable(config: Mapping[str, str], ignore: frozenset[str]) -> dict[str, str]:
    """The config as it should be compared: `name` (Connect adds it) and ignorable keys out."""
    return {k: v for k, v in config.items() if k != "name" and k not in ignore}
