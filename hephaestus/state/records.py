"""The records the deployment's state keeps (pure): what the stores read and write."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HealRecord:
    """What heal remembers of one connector between runs."""

    count: int = 0
    last_restart: float | None = None
    unassigned_since: float | None = None
    notified: int = -1  # the restart count at which the last Slack message was sent
