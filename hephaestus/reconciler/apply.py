"""Apply a Plan to one live cluster: validate all, then write with bounded concurrency,
wait until RUNNING, report per connector. One failing connector never stops the others."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step

Invalid = dict[str, dict[str, tuple[str, ...]]]


@dataclass(frozen=True)
class ApplyOptions:
    concurrency: int = 4
    ready_timeout_s: float = 180.0
    poll_interval_s: float = 1.0


def validate_all(client: ConnectClient, plan: Plan, concurrency: int) -> Invalid:
    """Every create/update checked by the live plugin's config/validate before any write."""
    steps = plan.of("create", "update")
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda s: _validate(client, s), steps))
    return {s.name: errs for s, errs in zip(steps, results) if errs}


def _validate(client: ConnectClient, step: Step) -> dict[str, tuple[str, ...]]:
    try:
        result = client.validate(step.connector_class, {**step.config, "name": step.name})
    except ConnectError as exc:
        return {"connector.class": (str(exc),)}
    return dict(result.errors) if result.error_count else {}


def execute(client: ConnectClient, plan: Plan, options: ApplyOptions) -> tuple[StepResult, ...]:
    """Writes first (concurrently), then wait for every written connector to run."""
    with ThreadPoolExecutor(max_workers=options.concurrency) as pool:
        written = list(pool.map(lambda s: _write(client, s), plan.writes))
        waits = [r if not r.ok or r.action == "delete" else pool.submit(_wait, client, r, options)
                 for r in written]
        return tuple(w if isinstance(w, StepResult) else w.result() for w in waits)


def _write(client: ConnectClient, step: Step) -> StepResult:
    try:
        if step.action == "create":
            client.create(step.name, dict(step.config))
        elif step.action == "update":
            client.put_config(step.name, dict(step.config))
        else:
            client.delete(step.name)
    except ConnectError as exc:
        return StepResult(step.name, step.action, False, str(exc))
    return StepResult(step.name, step.action, True, "deleted" if step.action == "delete" else "written")


def _wait(client: ConnectClient, written: StepResult, options: ApplyOptions) -> StepResult:
    state = wait_ready(client, written.name, options.ready_timeout_s, options.poll_interval_s)
    return StepResult(written.name, written.action, state == "RUNNING", state)


def wait_ready(client: ConnectClient, name: str, timeout_s: float, interval_s: float,
               clock: Callable[[], float] = time.monotonic) -> str:
    """RUNNING once the connector and all its tasks run; a FAILED one is reported at once."""
    deadline = clock() + timeout_s
    last = "not reported yet"
    while True:
        last, done = _readiness(client, name)
        if done or clock() >= deadline:
            return last if done else f"not RUNNING after {timeout_s:.0f}s ({last})"
        time.sleep(interval_s)  # polling a condition, bounded by the deadline above


def _readiness(client: ConnectClient, name: str) -> tuple[str, bool]:
    try:
        st = client.status(name)
    except ConnectError:
        return "not reported yet", False  # status lags behind a create (404 for a moment)
    if st.state == "FAILED" or any(t.state == "FAILED" for t in st.tasks):
        trace = next((t.trace for t in st.tasks if t.trace), st.trace) or ""
        return f"FAILED: {first_line(trace)}", True
    if st.state == "RUNNING" and st.tasks and all(t.state == "RUNNING" for t in st.tasks):
        return "RUNNING", True
    return f"{st.state}, tasks {[t.state for t in st.tasks]}", False


def first_line(trace: str) -> str:
    return trace.strip().splitlines()[0][:300] if trace.strip() else "no trace"


def failed_names(results: Sequence[StepResult]) -> list[str]:
    return [r.name for r in results if not r.ok]
