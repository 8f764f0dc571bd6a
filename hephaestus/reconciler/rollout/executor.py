"""A progressive rollout of one cluster's cleared writes (edge: orchestrates Connect writes and
health reads): stage by stage (`rollout.rules`), each ready, then watched for its analysis
window against the gates; paced by lag when a budget is set. A failed gate, by `on_failure`:

- `rollback` (the default): the rest is not written; every connector the run changed is put
  back to the config read live before the run (held in memory only, never written anywhere
  else), the sinks it created are deleted, each step through the same gate as any write (a
  destructive one is not taken: the report says so), and watched against the same gates; then
  what each sink put back parked in its DLQ while the rollout ran (from the DLQ's end before
  its write to its end now) is replayed the way `dlq replay` does, or, with `replay_parked:
  false`, named with the command that replays it (a failed result: the run exits 1);
- `pause`: the rest is not written, what was written stays;
- `continue`: the failing connectors are reported failed and the next stage goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from shlex import quote

from hephaestus import kafka
from hephaestus.classes import POSTGRES_SOURCE as SOURCE
from hephaestus.connect import ConnectClient
from hephaestus.errors import HephaestusError
from hephaestus.fleet import health
from hephaestus.fleet.lag import HealthSample
from hephaestus.fleet.model import Live
from hephaestus.fleet.topics import DLQ_KEY
from hephaestus.reconciler import apply
from hephaestus.reconciler.journal import StepJournal as Journal
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.rollout.rules import Failure, Stage, failures, stages, total_lag, undo
from hephaestus.reconciler.rotation import masked_keys
from hephaestus.safety.gate import Cleared
from hephaestus.settings import RolloutSettings
from hephaestus.state.audit import Journal as AuditJournal

# The rollback's steps judged at the gate: the plan of those it cleared, their pass, and the
# refusals (each a step not taken).
UndoGate = Callable[[Plan], tuple[Plan, Cleared, tuple[str, ...]]]
REPLAY = "dlq-replay"  # the action of a rollback's result for what a sink parked


@dataclass(frozen=True)
class Parked:
    """What one sink parked in its DLQ while a rollout ran, in one partition: offsets
    [first, end), from the DLQ's end before the sink's write to its end once put back."""

    cluster: str
    bootstrap: str
    sink: str  # as it runs again (a rename rolled back: its old name)
    topic: str
    partition: int
    first: int
    end: int
    config: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)  # put back: where they go

    def where(self) -> str:
        return (
            f"{self.end - self.first} record(s) in {self.topic}[{self.partition}], offsets {self.first}-{self.end - 1}"
        )

    def command(self) -> str:
        """The `dlq replay` that sends these and no others (names quoted: a shell reads it)."""
        return (
            f"hephaestus dlq replay --cluster {quote(self.cluster)} --connector {quote(self.sink)} "
            f"--partition {self.partition} --from {self.first} --until {self.end - 1}"
        )


# Sends back what a sink parked, as `dlq replay` does (the gate, exactly once), writing to the
# run's audit journal: how many it sent. The dlq feature's (`dlq.run.replay_parked`), given
# from above: the reconciler imports no feature.
GiveBack = Callable[[Parked, AuditJournal], int]


@dataclass(frozen=True)
class Watch:
    settings: RolloutSettings
    probe: health.HealthProbe
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    give_back: GiveBack | None = None  # None: what the rollback's sinks parked is only named


@dataclass(frozen=True)
class Rolled:
    results: tuple[StepResult, ...]  # the plan's steps
    rollback: tuple[StepResult, ...] = ()  # the steps that put back what they changed
    report: tuple[str, ...] = ()  # one line per stage, and the rollback's
    undone: frozenset[str] = frozenset()  # created or renamed here, gone again: never claimed
    restored: tuple[str, ...] = ()  # deleted or renamed away here, back again: owned as before


def execute(
    client: ConnectClient,
    plan: Plan,
    options: apply.ApplyOptions,
    journal: Journal,
    cleared: Cleared,
    watch: Watch,
    before: Mapping[str, Live],
    gate: UndoGate,
) -> Rolled:
    run = _Rollout(client, apply.Runner(client, plan, options, journal, cleared), watch, options)
    written: list[Step] = []
    for i, stage in enumerate(stages(plan.writes, watch.settings)):
        why = run.paced([s for s in written if s.connector_class != SOURCE]) if i else ""
        found = [Failure("", why, True)] if why else run.stage(stage)
        written += [s for s in stage.steps if s.name in run.runner.results]
        if not found:
            run.lines.append(f"{stage.label}: {len(stage.steps)} passed")
            continue
        reason = _reason(stage, found)
        run.lines.append(f"{stage.label}: failed its gate: {reason}")
        run.fail(found, reason)
        if watch.settings.on_failure == "continue":
            continue
        run.hold(plan.writes, f"not applied: the rollout stopped at {stage.label} ({reason})")
        if watch.settings.on_failure == "rollback":
            return run.rolled_back(plan, written, before, gate, journal, reason)
        run.lines.append("paused: what was written stays; rerun to go on, or revert in git")
        break
    return Rolled(run.runner.outcome(), (), tuple(run.lines))


def _reason(stage: Stage, found: Sequence[Failure]) -> str:
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{first.name}: {first.why}{more}" if first.name else first.why


class _Rollout:
    def __init__(self, client: ConnectClient, runner: apply.Runner, watch: Watch, options: apply.ApplyOptions):
        self.client, self.runner, self.watch, self.options = client, runner, watch, options
        self.lines: list[str] = []
        self.marks: dict[str, _Mark] = {}  # each sink's DLQ ends before its write

    def stage(self, stage: Stage) -> list[Failure]:
        """The stage written, ready, then watched: what its gates found."""
        watched = [s for s in stage.steps if s.action != "delete"]
        self.mark(stage.steps)
        baseline = self._sample(watched) if watched else {}
        got = self.runner.run(stage.steps)
        bad = [Failure(r.name, f"not ready: {r.detail}", True) for r in got.values() if not r.ok]
        if bad:
            return bad
        return self.analysed([s for s in watched if s.name in got], baseline)

    def analysed(self, steps: Sequence[Step], baseline: Mapping[str, HealthSample]) -> list[Failure]:
        """Samples every interval for the analysis window: a hard failure at once, a soft one
        when still there at the window's end (without a window, one sample: hard ones only)."""
        r, w = self.watch.settings, self.watch
        wanted = {s.name: apply.state_of(s, self.options) for s in steps}
        deadline = w.clock() + r.analysis_s
        while True:
            found = failures(r, baseline, self._sample(steps), wanted)
            hard = [f for f in found if f.hard]
            if hard or w.clock() >= deadline:
                return hard or (found if r.analysis_s > 0 else [])
            w.sleep(min(r.interval_s, max(deadline - w.clock(), 0.0)))

    def paced(self, sinks: Sequence[Step]) -> str:
        """Wait until the sinks written so far lag less than the budget in total ("" once they
        do; why not, after pace_timeout_s)."""
        r, w = self.watch.settings, self.watch
        if r.lag_budget is None or not sinks:
            return ""
        deadline = w.clock() + r.pace_timeout_s
        while True:
            total = total_lag(self._sample(sinks), [s.name for s in sinks])
            if total <= r.lag_budget:
                return ""
            if w.clock() >= deadline:
                return f"pacing: the lag of the sinks written so far is {total}, over the budget {r.lag_budget}"
            w.sleep(r.interval_s)

    def _sample(self, steps: Sequence[Step]) -> dict[str, HealthSample]:
        return health.sample(self.client, self.watch.probe, {s.name: s.config for s in steps})

    def mark(self, steps: Sequence[Step]) -> None:
        """Where each sink's DLQ ends before its write: what it parks from there on, the
        rollout's doing, is what a rollback gives back (and nothing parked before)."""
        dlqs, bootstrap = _dlqs(steps), self.watch.probe.bootstrap
        if not (dlqs and bootstrap):
            return
        try:
            ends = _ends(bootstrap, list(dlqs.values()))
        except HephaestusError as exc:
            self.marks |= {n: _Mark(t, bootstrap, error=str(exc)) for n, t in dlqs.items()}
            return
        self.marks |= {n: _Mark(t, bootstrap, ends[t]) for n, t in dlqs.items()}

    def given_back(
        self, cluster: str, back: Sequence[Step], done: Sequence[StepResult], journal: Journal
    ) -> list[StepResult]:
        """For each sink put back (and watched), what it parked while the rollout ran."""
        oks = {r.name for r in done if r.ok}
        out: list[StepResult] = []
        for u in [u for u in back if u.name in oks and (u.renamed_from or u.name) in self.marks]:
            try:
                out += [self._give_back(p, journal) for p in self._parked(cluster, u)]
            except HephaestusError as exc:
                out.append(StepResult(u.name, REPLAY, False, f"what it parked while the rollout ran is unknown: {exc}"))
        return out

    def _parked(self, cluster: str, back: Step) -> list[Parked]:
        """What the sink put back by `back` parked from its mark to now, per partition (a
        partition new since: from its start)."""
        mark = self.marks[back.renamed_from or back.name]
        if mark.error:
            raise HephaestusError(f"{mark.topic} could not be read before the write: {mark.error}")
        now = _ends(mark.bootstrap, [mark.topic])[mark.topic]
        firsts = {p: mark.ends.get(p, 0) for p in now}
        return [
            Parked(cluster, mark.bootstrap, back.name, mark.topic, p, firsts[p], end, back.config)
            for p, end in sorted(now.items())
            if end > firsts[p]
        ]

    def _give_back(self, parked: Parked, journal: Journal) -> StepResult:
        """Replayed, or named with the command that replays exactly these (a failed result)."""
        give, what = self.watch.give_back, f"{parked.where()}, parked while the rollout ran"
        if not self.watch.settings.replay_parked or give is None:
            why = (
                "this run cannot replay them" if self.watch.settings.replay_parked else "rollout replay_parked is false"
            )
            return StepResult(parked.sink, REPLAY, False, f"not replayed ({why}): {what}: `{parked.command()}`")
        try:
            sent = give(parked, journal.journal)
        except HephaestusError as exc:
            return StepResult(parked.sink, REPLAY, False, f"not replayed: {exc}; {what}: `{parked.command()}`")
        return StepResult(parked.sink, REPLAY, True, f"replayed {sent} record(s): {what}")

    def fail(self, found: Sequence[Failure], reason: str) -> None:
        """The connectors the gate failed are reported failed (the write itself was made)."""
        results = self.runner.results
        named = {f.name: f.why for f in found if f.name in results and results[f.name].ok}
        self.runner.settle(
            {n: replace(results[n], ok=False, detail=f"failed the rollout gate: {why}") for n, why in named.items()}
        )

    def hold(self, steps: Sequence[Step], why: str) -> None:
        """Every step not yet written: reported not applied."""
        self.runner.settle(
            {s.name: StepResult(s.name, s.action, False, why) for s in steps if s.name not in self.runner.results}
        )

    def rolled_back(
        self,
        plan: Plan,
        written: Sequence[Step],
        before: Mapping[str, Live],
        gate: UndoGate,
        journal: Journal,
        reason: str,
    ) -> Rolled:
        back, changed = self._to_put_back(written, before)
        try:
            cleared_plan, cleared, refused = gate(Plan(plan.cluster, tuple(back)))
        except HephaestusError as exc:
            self.lines.append(f"rollback not taken: {exc}")
            return Rolled(self.runner.outcome(), (), tuple(self.lines))
        self.lines += [f"rollback not taken, the gate refused it: {why}" for why in refused]
        done = self._put_back(cleared_plan, cleared, journal)
        self.lines.append(f"rolled back {sum(r.ok for r in done)} of {changed} connector(s) changed in this run")
        writes, oks = cleared_plan.writes, {r.name for r in done if r.ok}
        self.runner.settle(_reverted(written, self.runner.results, writes, oks, reason))
        given = self.given_back(plan.cluster, writes, done, journal)
        return Rolled(self.runner.outcome(), (*done, *given), tuple(self.lines), _gone(writes, oks), _back(writes, oks))

    def _to_put_back(self, written: Sequence[Step], before: Mapping[str, Live]) -> tuple[list[Step], int]:
        """The steps that put back what `written` changed, less those that must not (each
        named in the report), and how many connectors the run changed."""
        results = self.runner.results
        back = [u for s in written if (u := undo(s, results[s.name], before))]
        self.lines += [f"left: {n} (a source this run created is never deleted)" for n in _kept(written, results)]
        # A value Connect answered masked is unknown: writing it back would store the mask.
        blind = [u for u in back if masked_keys(u.config) and u.action != "delete"]
        self.lines += [
            f"not rolled back: {u.name} (Connect answered {', '.join(masked_keys(u.config))} masked)" for u in blind
        ]
        return [u for u in back if u not in blind], len(back)

    def _put_back(self, cleared_plan: Plan, cleared: Cleared, journal: Journal) -> tuple[StepResult, ...]:
        """The rollback's steps written, in one go, then watched against the same gates."""
        options = replace(self.options, progress=None, batch_size=0, max_failures=None, batch_interval_s=0.0)
        runner = apply.Runner(self.client, cleared_plan, options, journal, cleared)
        runner.run(cleared_plan.writes)
        done = runner.outcome()
        # Watched from once they are ready: the bad config ran until the rollback replaced it.
        watched = [s for s in cleared_plan.writes if s.action != "delete" and runner.results[s.name].ok]
        check = _Rollout(self.client, runner, self.watch, options)
        found = check.analysed(watched, check._sample(watched)) if watched else []
        done = tuple(_gated(r, _why(found, r.name)) for r in done)
        apply.record_outcomes(journal, cleared_plan, done)
        return done


def _kept(written: Sequence[Step], results: Mapping[str, StepResult]) -> list[str]:
    """The sources this run created: a rollback never deletes one (its slot would go with it)."""
    return [s.name for s in written if s.action == "create" and s.connector_class == SOURCE and results[s.name].wrote]


def _gated(result: StepResult, why: str) -> StepResult:
    """A rollback step whose connector then failed the gate (`why`) is failed too."""
    return replace(result, ok=False, detail=f"{result.detail}; then failed the gate: {why}") if why else result


def _reverted(
    written: Sequence[Step], results: Mapping[str, StepResult], writes: Sequence[Step], oks: set[str], reason: str
) -> dict[str, StepResult]:
    """The run's own results of the steps the rollback put back (`oks`: its steps that held;
    a rename put back also reverts the rename, under its old name): reported rolled back."""
    names = oks | {s.renamed_from for s in writes if s.renamed_from and s.name in oks}
    return {s.name: _undone(results[s.name], reason) for s in written if s.name in names}


def _gone(writes: Sequence[Step], oks: set[str]) -> frozenset[str]:
    """Connectors the rollback deleted, or renamed away from: gone again, never claimed."""
    deleted = {s.name for s in writes if s.action == "delete" and s.name in oks}
    return frozenset(deleted | {s.renamed_from for s in writes if s.action == "rename" and s.name in oks})


def _back(writes: Sequence[Step], oks: set[str]) -> tuple[str, ...]:
    """Connectors the rollback created or renamed back: owned as before the run."""
    return tuple(s.name for s in writes if s.action in ("create", "rename") and s.name in oks)


def _undone(result: StepResult, reason: str) -> StepResult:
    detail = f"{result.detail}; rolled back" if not result.ok else f"rolled back ({reason})"
    return replace(result, ok=False, detail=detail)


def _why(found: Sequence[Failure], name: str) -> str:
    return next((f.why for f in found if f.name == name), "")


@dataclass(frozen=True)
class _Mark:
    """A sink's DLQ topic and its partitions' ends before the sink's write (or why unread)."""

    topic: str
    bootstrap: str
    ends: Mapping[int, int] = field(default_factory=dict)
    error: str = ""


def _dlqs(steps: Sequence[Step]) -> dict[str, str]:
    """The DLQ topic of each sink a step changes or renames (a sink the run creates is deleted
    by the rollback: nothing would read its records back), as Connect trims it."""
    return {s.name: t for s in steps if s.action in ("update", "rename") and (t := s.config.get(DLQ_KEY, "").strip())}


def _ends(bootstrap: str, topics: Sequence[str]) -> dict[str, dict[int, int]]:
    spans = kafka.spans(bootstrap, sorted(set(topics)))
    return {t: {s.partition: s.end for s in spans.get(t, ())} for t in topics}
