"""Apply a Plan to one live cluster: validate all, then write with bounded concurrency, wait
until ready, report per connector. One failing connector never stops the others.

Each write is preceded by its intent in the audit journal (no journal, no write) and is
reported ok only when Connect's answer said so *and* the connector was then seen ready
(`connect.ready`): running the new config, and still running after the stability window.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.connect.errors import ClusterUnreachable, OutcomeUnknown
from hephaestus.connect.ready import UNREACHABLE, ReadyOptions, Target, Verdict, wait_ready
from hephaestus.reconciler import moves
from hephaestus.reconciler.audit import AuditUnavailable, Journal
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.waves import batches as cut
from hephaestus.reconciler.waves import waves

Invalid = dict[str, dict[str, tuple[str, ...]]]


Progress = Callable[[StepResult, int, int], None]  # (finished step, done so far, total)
TARGET_STATES = frozenset({"RUNNING", "PAUSED", "STOPPED"})
WRITE_CONCURRENCY = 64  # measured: 100 updates take 7 s at 64 in flight, 36 s one at a time (bench/README.md)


@dataclass(frozen=True)
class ApplyOptions:
    concurrency: int = 4  # config/validate calls at once (answered by any worker, in parallel)
    # Writes at once. Connect queues every config write on one herder thread (forwarded to the
    # leader, written to the config topic, read back): in flight together they only wait on
    # each other (see bench/README.md, "apply").
    write_concurrency: int = WRITE_CONCURRENCY
    ready: ReadyOptions = field(default_factory=ReadyOptions)
    progress: Progress | None = None
    initial_state: str = "RUNNING"  # creates may start PAUSED or STOPPED (Connect 3.7+)
    # Paced rollouts: writes go in waves (reconciler.waves) and, with a batch size, in batches
    # of it, each ready before the next; after `max_failures` batches with a failure the rest
    # is left untouched (reported "not applied").
    batch_size: int = 0
    batch_interval_s: float = 0.0
    max_failures: int = 1
    sleep: Callable[[float], None] = time.sleep


def validate_all(client: ConnectClient, plan: Plan, concurrency: int) -> Invalid:
    """Every create/update checked by the live plugin's config/validate before any write."""
    steps = plan.of("create", "update")
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda s: _validate(client, s), steps))
    return {s.name: errs for s, errs in zip(steps, results, strict=False) if errs}


def _validate(client: ConnectClient, step: Step) -> dict[str, tuple[str, ...]]:
    try:
        result = client.validate(step.connector_class, {**step.config, "name": step.name})
    except ConnectError as exc:
        return {"connector.class": (str(exc),)}
    return dict(result.errors) if result.error_count else {}


def execute(client: ConnectClient, plan: Plan, options: ApplyOptions, journal: Journal) -> tuple[StepResult, ...]:
    """The writes wave by wave (deletes, sources and what reads none of them, the sinks of
    planned sources), each wave in batches; a batch's writes go concurrently and then one wait
    for all of them; the outcome of each step goes to the journal."""
    steps = plan.writes
    done = iter(range(1, len(steps) + 1))  # next() on a shared iterator is atomic under the GIL

    def report(result: StepResult) -> StepResult:
        if options.progress:
            options.progress(result, next(done), len(steps))
        return result

    batches = [b for w in waves(steps) for b in cut(w, options.batch_size)]
    results: dict[str, StepResult] = {}
    failed_batches = 0
    for i, batch in enumerate(batches):
        if options.batch_size and failed_batches >= options.max_failures:
            results.update({s.name: report(_aborted(s, failed_batches)) for s in batch})
            continue
        if i and options.batch_interval_s:
            options.sleep(options.batch_interval_s)
        got = _batch(client, batch, options, journal, report)
        results.update(got)
        failed_batches += any(not r.ok for r in got.values())
    return tuple(results[s.name] for s in steps)


def _batch(
    client: ConnectClient,
    steps: list[Step],
    options: ApplyOptions,
    journal: Journal,
    report: Callable[[StepResult], StepResult],
) -> dict[str, StepResult]:
    with ThreadPoolExecutor(max_workers=options.write_concurrency) as pool:
        written = list(pool.map(lambda s: _write(client, s, options, journal), steps))
    waiting = {r.name: s for s, r in zip(steps, written, strict=False) if r.ok and s.action != "delete"}
    for r in written:
        if r.name not in waiting:
            report(r)
    details = {r.name: r.detail for r in written}
    verdicts = wait_ready(
        client,
        [_target(s, options) for s in waiting.values()],
        options.ready,
        lambda v: report(_ready(waiting[v.name], v, details[v.name])),
    )
    return {r.name: _ready(waiting[r.name], verdicts[r.name], r.detail) if r.name in waiting else r for r in written}


def _aborted(step: Step, failed: int) -> StepResult:
    return StepResult(
        step.name,
        step.action,
        False,
        f"not applied: rollout stopped after {failed} batch(es) with a failure (--max-failures)",
    )


def record_outcomes(journal: Journal, plan: Plan, results: tuple[StepResult, ...]) -> str:
    """Each step's outcome in the journal; the error, if the journal refused (never raised:
    the changes are made, so the report and notifications must still go out)."""
    try:
        for step, result in zip(plan.writes, results, strict=False):
            journal.outcome(step, result)
    except AuditUnavailable as exc:
        return str(exc)
    return ""


def _state(step: Step, options: ApplyOptions) -> str:
    # git's `state` wins; else a create starts as asked, an update keeps the state the
    # connector had (a PUT does not resume a PAUSED or STOPPED connector), and a rename the
    # state of the one it replaces.
    if step.target_state:
        return step.target_state
    kept = step.action in ("update", "rename") and step.live_state in TARGET_STATES
    return step.live_state if kept else options.initial_state


def _converge(client: ConnectClient, name: str, state: str) -> None:
    {"RUNNING": client.resume, "PAUSED": client.pause, "STOPPED": client.stop}[state](name)


def _target(step: Step, options: ApplyOptions) -> Target:
    return Target(
        step.name,
        frozenset({_state(step, options)}),
        step.config if step.action in ("update", "rename", "state") else None,
    )


def _ready(step: Step, verdict: Verdict, written: str) -> StepResult:
    # A rename's own account (offsets carried) is kept before the state it reached.
    detail = f"{written}; {verdict.detail}" if step.action == "rename" else verdict.detail
    return StepResult(step.name, step.action, verdict.ok, detail, wrote=True)


def _write(client: ConnectClient, step: Step, options: ApplyOptions, journal: Journal) -> StepResult:
    try:
        journal.intent(step)
    except AuditUnavailable as exc:
        return StepResult(step.name, step.action, False, f"not applied: {exc}")
    try:
        detail = _send(client, step, options)
    except ClusterUnreachable:
        return StepResult(step.name, step.action, False, f"{UNREACHABLE} (not sent)")
    except OutcomeUnknown as exc:
        return StepResult(step.name, step.action, False, f"unknown: {exc.server_message}")
    except (ConnectError, moves.RenameFailed) as exc:
        return StepResult(step.name, step.action, False, str(exc))
    return StepResult(step.name, step.action, True, detail, wrote=True)


def _send(client: ConnectClient, step: Step, options: ApplyOptions) -> str:
    if step.action == "create":
        state = _state(step, options)
        return client.create(step.name, dict(step.config), initial_state=None if state == "RUNNING" else state)
    if step.action == "update":
        client.put_config(step.name, dict(step.config))
        if step.target_state and step.target_state != step.live_state and step.live_state in TARGET_STATES:
            _converge(client, step.name, step.target_state)
            return f"written, {step.target_state}"
        return "written"
    if step.action == "state":
        _converge(client, step.name, step.target_state)
        return step.target_state
    if step.action == "rename":
        return moves.rename(client, step, _state(step, options))
    return client.delete(step.name)
