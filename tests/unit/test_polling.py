"""The one bounded poll (hephaestus.polling), on a fake clock: no test waits for real."""

from __future__ import annotations

from hephaestus.polling import Bound, until


class Clock:
    def __init__(self) -> None:
        self.now, self.waits = 0.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_the_answer_comes_as_soon_as_the_probe_gives_one() -> None:
    clock, asked = Clock(), []
    found = until(
        lambda: asked.append(1) or (len(asked) if len(asked) == 3 else None), Bound(10, 2, clock, clock.sleep)
    )
    assert found == 3 and clock.waits == [2, 2]


def test_the_bound_holds_and_the_last_probe_is_at_the_deadline() -> None:
    clock, asked = Clock(), []
    assert until(lambda: asked.append(clock.now), Bound(5, 2, clock, clock.sleep)) is None
    assert asked == [0, 2, 4, 5] and clock.waits == [2, 2, 1]


def test_waits_start_short_and_double_up_to_the_interval() -> None:
    clock = Clock()
    assert until(lambda: None, Bound(3, 1, clock, clock.sleep, first_s=0.25)) is None
    assert clock.waits == [0.25, 0.5, 1, 1, 0.25]


def test_a_falsy_answer_is_an_answer() -> None:
    clock = Clock()
    assert until(lambda: [], Bound(5, 1, clock, clock.sleep)) == [] and clock.waits == []
