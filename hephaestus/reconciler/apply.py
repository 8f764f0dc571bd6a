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


Progress = Callable[[StepResult, int, int], None]  # (finished step, done so far, total)


@dataclass(frozen=True)
class ApplyOptions:
    concurrency: int = 4
    ready_timeout_s: float = 180.0
    poll_interval_s: float = 1.0
    progress: Progress | None = None
    initial_state: str = "RUNNING"  # creates may start PAUSED or STOPPED (Connect 3.7+)


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
    total = len(plan.writes)
    done = iter(range(1, total + 1))  # next() on a shared iterator is atomic under the GIL

    def report(result: StepResult) -> StepResult:
        if options.progress:
            options.progress(result, next(done), total)
        return result

    with ThreadPoolExecutor(max_workers=options.concurrency) as pool:
        written = list(pool.map(lambda s: _write(client, s, options), plan.writes))
        waits = [report(r) if not r.ok or r.action == "delete"
                 else pool.submit(lambda r: report(_wait(client, r, options)), r) for r in written]
        return tuple(w if isinstance(w, StepResult) else w.result() for w in waits)


def _write(client: ConnectClient, step: Step, options: ApplyOptions) -> StepResult:
    try:
        if step.action == "create":
            initial = None if options.initial_state == "RUNNING" else options.initial_state
            client.create(step.name, dict(step.config), initial_state=initial)
        elif step.action == "update":
            client.put_config(step.name, dict(step.config))
        else:
            client.delete(step.name)
    except ConnectError as exc:
        return StepResult(step.name, step.action, False, str(exc))
    return StepResult(step.name, step.action, True, "deleted" if step.action == "delete" else "written")


def _wait(client: ConnectClient, written: StepResult, options: ApplyOptions) -> StepResult:
    # A create starts as asked; an update keeps the target state the connector had
    # (a PUT does not resume a PAUSED or STOPPED connector).
    targets = {options.initial_state} if written.action == "create" else {"RUNNING", "PAUSED", "STOPPED"}
    state = wait_ready(client, written.name, options.ready_timeout_s, options.poll_interval_s, frozenset(targets))
    return StepResult(written.name, written.action, state in targets, state)


def wait_ready(client: ConnectClient, name: str, timeout_s: float, interval_s: float,
               targets: frozenset[str] = frozenset({"RUNNING"}),
               clock: Callable[[], float] = time.monotonic) -> str:
    """A target state once reached (RUNNING counts when all tasks run too); FAILED at once."""
    deadline = clock() + timeout_s
    last = "not reported yet"
    while True:
        last, done = _readiness(client, name, targets)
        if done or clock() >= deadline:
            return last if done else f"not {'/'.join(sorted(targets))} after {timeout_s:.0f}s ({last})"
        time.sleep(interval_s)  # polling a condition, bounded by the deadline above


def _readiness(client: ConnectClient, name: str, targets: frozenset[str]) -> tuple[str, bool]:
    try:
        st = client.status(name)
    except ConnectError:
        return "not reported yet", False  # status lags behind a create (404 for a moment)
    if st.state == "FAILED" or any(t.state == "FAILED" for t in st.tasks):
        trace = next((t.trace for t in st.tasks if t.trace), st.trace) or ""
        return f"FAILED: {first_line(trace)}", True
    if st.state == "RUNNING":
        running = bool(st.tasks) and all(t.state == "RUNNING" for t in st.tasks)
        if running:
            return "RUNNING", "RUNNING" in targets
    elif st.state in targets:
        return st.state, True
    return f"{st.state}, tasks {[t.state for t in st.tasks]}", False


def first_line(trace: str) -> str:
    return trace.strip().splitlines()[0][:300] if trace.strip() else "no trace"


def failed_names(results: Sequence[StepResult]) -> list[str]:
    return [r.name for r in results if not r.ok]
