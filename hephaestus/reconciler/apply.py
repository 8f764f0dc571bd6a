"""Apply a Plan to one live cluster: validate all, then write with bounded concurrency, wait
until ready, report per connector. One failing connector never stops the others.

Each write is preceded by its intent in the audit journal (no journal, no write) and is
reported ok only when Connect's answer said so *and* the connector was then seen ready
(`connect.ready`): running the new config, and still running after the stability window.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from hephaestus.classes import POSTGRES_SOURCE as SOURCE
from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.connect.errors import ClusterUnreachable, OutcomeUnknown
from hephaestus.connect.ready import UNREACHABLE, ReadyOptions, ReadyVerdict, Target, wait_ready
from hephaestus.errors import HephaestusError
from hephaestus.reconciler import moves
from hephaestus.reconciler.journal import StepJournal as Journal
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import TARGET_STATES, Plan, Step
from hephaestus.reconciler.waves import batches as cut
from hephaestus.reconciler.waves import reads, topic_prefix, waves
from hephaestus.safety.gate import Cleared
from hephaestus.settings import CONCURRENCY, INITIAL_STATE, WRITE_CONCURRENCY
from hephaestus.state.audit import AuditUnavailable

Invalid = dict[str, dict[str, tuple[str, ...]]]


Progress = Callable[[StepResult, int, int], None]  # (finished step, done so far, total)


@dataclass(frozen=True, kw_only=True)  # keywords only: counts and seconds side by side
class ApplyOptions:
    concurrency: int = CONCURRENCY  # config/validate calls at once (answered by any worker, in parallel)
    # Writes at once. Connect queues every config write on one herder thread (forwarded to the
    # leader, written to the config topic, read back): in flight together they only wait on
    # each other (see bench/README.md, "apply").
    write_concurrency: int = WRITE_CONCURRENCY
    ready: ReadyOptions = field(default_factory=ReadyOptions)
    progress: Progress | None = None
    initial_state: str = INITIAL_STATE  # creates may start PAUSED or STOPPED (Connect 3.7+)
    # Paced rollouts: writes go in waves (reconciler.waves) and, with a batch size, in batches
    # of it, each ready before the next; after `max_failures` batches with a failure the rest
    # is left untouched (reported "not applied").
    batch_size: int = 0
    batch_interval_s: float = 0.0
    # None: one failure stops the rest only when the rollout is batched (then 1); a number
    # counts failed batches, and a wave is one batch when there is no batch size.
    max_failures: int | None = None
    sleep: Callable[[float], None] = time.sleep
    claims: Claims | None = None  # the ownership record: a delete releases its claim first
    topics: Topics | None = None  # a sink's needed topics, created just before it is sent
    # The clusters moves leave (issue 49): their clients and ownership records, by name.
    peers: Mapping[str, moves.Peer] = field(default_factory=dict)

    @property
    def stop_after(self) -> int | None:
        return self.max_failures if self.max_failures is not None else (1 if self.batch_size else None)


class Claims(Protocol):
    """The ownership record as apply sees it: a connector is released *before* it is deleted
    (or renamed away), so a record that cannot be written stops the delete instead of leaving
    a claim behind that a later run would act on; a delete Connect refused is claimed again."""

    def release(self, name: str) -> None: ...

    def forget(self, name: str) -> None: ...

    def moving(self, name: str, source: str) -> None:
        """Marks `name` this deployment's here before a move from `source` writes anything."""


class Topics(Protocol):
    """Creates the topics a sink needs (reconciler.topicwrite): "" when they exist, else why not."""

    def before(self, step: Step) -> str: ...


def validate_all(client: ConnectClient, plan: Plan, concurrency: int) -> Invalid:
    """Every create/update checked by the live plugin's config/validate before any write."""
    steps = plan.of("create", "update", "move")  # a move: the plugin here takes the config
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda s: _validate(client, s), steps))
    return {s.name: errs for s, errs in zip(steps, results, strict=False) if errs}


def _validate(client: ConnectClient, step: Step) -> dict[str, tuple[str, ...]]:
    try:
        result = client.validate(step.connector_class, {**step.config, "name": step.name})
    except ConnectError as exc:
        return {"connector.class": (str(exc),)}
    return dict(result.errors) if result.error_count else {}


def execute(
    client: ConnectClient, plan: Plan, options: ApplyOptions, journal: Journal, cleared: Cleared
) -> tuple[StepResult, ...]:
    """The writes the gate cleared, wave by wave (deletes, sources and what reads none of
    them, the sinks of planned sources), each wave in batches; a batch's writes go concurrently
    and then one wait for all of them; the outcome of each step goes to the journal. A sink
    whose source failed in this run is not written; after `stop_after` failed batches the
    rest is left untouched."""
    runner = Runner(client, plan, options, journal, cleared)
    runner.run(plan.writes)
    return runner.outcome()


class Runner:
    """One cluster's cleared writes in one run, given in parts (a progressive rollout's
    stages) or all at once: the results so far, the failed batches, the progress count."""

    def __init__(self, client: ConnectClient, plan: Plan, options: ApplyOptions, journal: Journal, cleared: Cleared):
        steps = plan.writes
        if cleared.cluster != plan.cluster or not {s.name for s in steps} <= cleared.names():
            raise HephaestusError(f"cluster {plan.cluster}: writes the gate did not clear (a bug): nothing applied")
        self.client, self.steps, self.options, self.journal = client, steps, options, journal
        self.results: dict[str, StepResult] = {}
        self.failed_batches = 0
        self._done = iter(range(1, len(steps) + 1))  # next() on a shared iterator is atomic under the GIL

    def report(self, result: StepResult) -> StepResult:
        if self.options.progress:
            self.options.progress(result, next(self._done), len(self.steps))
        return result

    def run(self, part: Sequence[Step]) -> dict[str, StepResult]:
        """`part` (steps of the plan), wave by wave and batch by batch: their results."""
        options, first = self.options, not self.results
        got_all: dict[str, StepResult] = {}
        for i, batch in enumerate(b for w in waves(part) for b in cut(w, options.batch_size)):
            stop = options.stop_after is not None and self.failed_batches >= options.stop_after
            held = {s.name: self.report(_aborted(s, self.failed_batches)) for s in batch if stop}
            held |= {
                s.name: self.report(orphan)
                for s in batch
                if not stop and (orphan := _orphaned(s, self.steps, self.results))
            }
            self.results.update(held)
            todo = [s for s in batch if s.name not in held]
            if (i or not first) and todo and options.batch_interval_s:
                options.sleep(options.batch_interval_s)
            got = _batch(self.client, todo, options, self.journal, self.report) if todo else {}
            self.results.update(got)
            got_all |= held | got
            self.failed_batches += any(not r.ok for r in got.values())
        return got_all

    def settle(self, results: Mapping[str, StepResult]) -> None:
        """Results decided outside a batch (a rollout's gate, a rollback, steps left out)."""
        self.results.update(results)

    def outcome(self) -> tuple[StepResult, ...]:
        return tuple(self.results[s.name] for s in self.steps if s.name in self.results)


def _orphaned(step: Step, steps: tuple[Step, ...], results: dict[str, StepResult]) -> StepResult | None:
    """A sink's create, rename or topic change whose source failed in this run: not written."""
    if step.action not in ("create", "rename", "move", "update") or step.connector_class == SOURCE:
        return None
    if step.action == "update" and not any(c.key in ("topics", "topics.regex") for c in step.changes):
        return None
    failed = [s for s in steps if s.connector_class == SOURCE and s.name in results and not results[s.name].ok]
    source = next((s for s in failed if reads(step, [topic_prefix(s.config)])), None)
    if source is None:
        return None
    return StepResult(step.name, step.action, False, f"not applied: its source {source.name} failed in this run")


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


def state_of(step: Step, options: ApplyOptions) -> str:
    # git's `state` wins; else a create starts as asked, an update keeps the state the
    # connector had (a PUT does not resume a PAUSED or STOPPED connector), and a rename the
    # state of the one it replaces.
    if step.target_state:
        return step.target_state
    kept = step.action in ("update", "rename", "move") and step.live_state in TARGET_STATES
    return step.live_state if kept else options.initial_state


def _converge(client: ConnectClient, name: str, state: str) -> None:
    {"RUNNING": client.resume, "PAUSED": client.pause, "STOPPED": client.stop}[state](name)


def _target(step: Step, options: ApplyOptions) -> Target:
    return Target(
        step.name,
        frozenset({state_of(step, options)}),
        step.config if step.action in ("update", "rename", "move", "state") else None,
    )


def _ready(step: Step, verdict: ReadyVerdict, written: str) -> StepResult:
    # A rename's own account (offsets carried) is kept before the state it reached.
    detail = f"{written}; {verdict.detail}" if step.action in ("rename", "move") else verdict.detail
    return StepResult(step.name, step.action, verdict.ok, detail, wrote=True)


def _write(client: ConnectClient, step: Step, options: ApplyOptions, journal: Journal) -> StepResult:
    try:
        journal.intent(step)
    except AuditUnavailable as exc:
        return StepResult(step.name, step.action, False, f"not applied: {exc}")
    if options.topics is not None and (missing := options.topics.before(step)):
        return StepResult(step.name, step.action, False, f"not applied: {missing}")
    leaving = step.renamed_from if step.action == "rename" else step.name if step.action == "delete" else ""
    if leaving and options.claims is not None:
        try:
            options.claims.release(leaving)
        except HephaestusError as exc:
            return StepResult(step.name, step.action, False, f"not applied: {exc}")
    result = _sent(client, step, options)
    if leaving and options.claims is not None and result.ok and result.wrote:
        options.claims.forget(leaving)  # confirmed: the claim goes with it
    # Otherwise the mark stays: owned while it runs the config it had (it was not deleted),
    # and never again once gone, nor for another connector given its name.
    return result


def _sent(client: ConnectClient, step: Step, options: ApplyOptions) -> StepResult:
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
        state = state_of(step, options)
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
    if step.action == "restart":  # every task too, not only failed ones: each reads the secret anew
        client.restart(step.name, include_tasks=True, only_failed=False)
        return "restarted"
    if step.action == "rename":
        return moves.rename(client, step, state_of(step, options))
    if step.action == "move":
        return _moved(client, step, options)
    return client.delete(step.name)


def _moved(client: ConnectClient, step: Step, options: ApplyOptions) -> str:
    peer = options.peers.get(step.moved_from)
    if peer is None:  # the cluster it leaves is not selected in this run: nothing is written
        raise moves.RenameFailed(f"not applied: {step.moved_from} is not reconciled in this run (select both clusters)")
    return moves.move(client, step, state_of(step, options), peer, options.claims)
