"""How hard the client retries (hephaestus.http, shared by every client): validation of the policy, the waits, the
budget the breaker uses, and what is retried at all (mutation-tested core)."""

from __future__ import annotations

import pytest
import tenacity

from hephaestus.connect.errors import Call, ConnectError
from hephaestus.http import RetryPolicy

CALL = Call("dwh", "http://connect", "GET", "/connectors")


def waits(policy: RetryPolicy, n: int) -> list[float]:
    retrying = policy.retrying()
    state = tenacity.RetryCallState(retrying, fn=None, args=(), kwargs={})
    out = []
    for attempt in range(1, n + 1):
        state.attempt_number = attempt
        out.append(retrying.wait(state))
    return out


def run(policy: RetryPolicy, exc: BaseException) -> int:
    tries = 0
    with pytest.raises(type(exc)) as caught:
        for attempt in policy.retrying():
            with attempt:
                tries += 1
                raise exc
    assert caught.value is exc, "the last failure itself is raised, not tenacity's RetryError"
    return tries


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attempts": 0}, "RetryPolicy.attempts must be at least 1"),
        ({"initial_wait": -0.1}, "RetryPolicy waits must be >= 0 and multiplier >= 1"),
        ({"max_wait": -1.0}, "RetryPolicy waits must be >= 0 and multiplier >= 1"),
        ({"jitter": -1.0}, "RetryPolicy waits must be >= 0 and multiplier >= 1"),
        ({"multiplier": 0.9}, "RetryPolicy waits must be >= 0 and multiplier >= 1"),
    ],
)
def test_nonsense_is_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_the_edges_of_sense_are_accepted() -> None:
    RetryPolicy(attempts=1, initial_wait=0.0, max_wait=0.0, jitter=0.0, multiplier=1.0)
    RetryPolicy(multiplier=1.5)


def test_immediate_waits_for_nothing() -> None:
    assert RetryPolicy.immediate(3) == RetryPolicy(
        attempts=3, initial_wait=0.0, max_wait=0.0, multiplier=2.0, jitter=0.0
    )
    assert RetryPolicy.immediate().attempts == 6
    assert waits(RetryPolicy.immediate(), 3) == [0.0, 0.0, 0.0]
    assert RetryPolicy.immediate().budget_s == 0.0


def test_waits_grow_by_the_multiplier_up_to_the_cap() -> None:
    policy = RetryPolicy(attempts=6, initial_wait=1.0, max_wait=20.0, multiplier=3.0, jitter=0.0)
    assert waits(policy, 5) == [1.0, 3.0, 9.0, 20.0, 20.0]


def test_jitter_adds_up_to_its_seconds() -> None:
    policy = RetryPolicy(initial_wait=1.0, max_wait=10.0, multiplier=1.0, jitter=0.5)
    spread = waits(policy, 20)
    assert all(1.0 <= w <= 1.5 for w in spread) and len(set(spread)) > 1


def test_the_budget_is_the_sum_of_the_waits_without_jitter() -> None:
    assert RetryPolicy().budget_s == 0.5 + 1 + 2 + 4 + 8
    assert RetryPolicy(attempts=1).budget_s == 0.0
    assert RetryPolicy(attempts=4, initial_wait=1.0, max_wait=5.0, multiplier=3.0, jitter=9.0).budget_s == 1 + 3 + 5


def test_only_transient_connect_errors_are_retried_up_to_the_attempts() -> None:
    policy = RetryPolicy.immediate(3)
    assert run(policy, ConnectError("busy", CALL, 409, transient=True)) == 3
    assert run(policy, ConnectError("no", CALL, 500)) == 1
    assert run(policy, ValueError("not ours")) == 1
    assert run(RetryPolicy.immediate(1), ConnectError("busy", CALL, 409, transient=True)) == 1
