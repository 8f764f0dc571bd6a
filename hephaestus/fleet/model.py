"""A connector as git wants it (a value; pure): what fleet.desired loads and a plan takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hephaestus.safety.gate import Allow


@dataclass(frozen=True)
class Desired:
    name: str
    config: Mapping[str, str] = field(hash=False)
    origin: str = ""
    renamed_from: str = ""  # the live connector this one takes over (offsets and all)
    allow: Allow = Allow()  # the file's `allow_destructive` (true, or effect codes): what of it may go
    state: str = ""  # the file's `state` (RUNNING, PAUSED, STOPPED): converged; "" = `unmanaged`
