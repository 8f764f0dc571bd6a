"""Heal's local state file: round trip, and a lock that a second run cannot take."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus.heal.policy import Record
from hephaestus.heal.state import FileStore, HealBusy


def test_round_trip_per_cluster(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with FileStore(path) as store:
        store.save("a", {"c1": Record(count=2, last_restart=10.0)})
        store.save("b", {"c2": Record(unassigned_since=5.0)})
    with FileStore(path) as store:
        assert store.load("a") == {"c1": Record(count=2, last_restart=10.0)}
        assert store.load("b") == {"c2": Record(unassigned_since=5.0)}
        assert store.load("none") == {}


def test_second_run_cannot_take_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with FileStore(path):
        with pytest.raises(HealBusy, match="another heal run"):
            FileStore(path).__enter__()
    with FileStore(path):  # released on exit
        pass
