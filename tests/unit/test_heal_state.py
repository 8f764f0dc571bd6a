"""Heal's local state file: round trip, and a lock that a second run cannot take."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus.heal.policy import Record
from hephaestus.state.heal import HealBusy, HealFile


def test_round_trip_per_cluster(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with HealFile(path) as store:
        store.save("a", {"c1": Record(count=2, last_restart=10.0)})
        store.save("b", {"c2": Record(unassigned_since=5.0)})
    with HealFile(path) as store:
        assert store.load("a") == {"c1": Record(count=2, last_restart=10.0)}
        assert store.load("b") == {"c2": Record(unassigned_since=5.0)}
        assert store.load("none") == {}


def test_second_run_cannot_take_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with HealFile(path):
        with pytest.raises(HealBusy, match="another heal run"):
            HealFile(path).__enter__()
    with HealFile(path):  # released on exit
        pass
