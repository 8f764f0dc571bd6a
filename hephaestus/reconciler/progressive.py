"""A progressive rollout of one cluster's cleared writes (edge: orchestrates Connect writes and
health reads): stage by stage (`reconciler.rollout`), each ready, then watched for its analysis
window against the gates; paced by lag when a budget is set. A failed gate, by `on_failure`:

- `rollback` (the default): the rest is not written; every connector the run changed is put
  back to the config read live before the run (held in memory only, never written anywhere
  else), the sinks it created are deleted, each step through the same gate as any write (a
  destructive one is not taken: the report says so), and watched against the same gates;
- `pause`: the rest is not written, what was written stays;
- `continue`: the failing connectors are reported failed and the next stage goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from hephaestus.classes import POSTGRES_SOURCE as SOURCE
from hephaestus.connect import ConnectClient
from hephaestus.errors import HephaestusError
from hephaestus.fleet import health
from hephaestus.fleet.lag import Health
from hephaestus.reconciler import apply
from hephaestus.reconciler.journal import StepJournal as Journal
from hephaestus.reconciler.model import Live
from hephaestus.reconciler.outcome import StepResult
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.rollout import Failure, Stage, failures, stages, total_lag, undo
from hephaestus.reconciler.rotation import masked_keys
from hephaestus.safety.gate import Cleared
from hephaestus.settings import RolloutSettings

# The rollback's steps judged at the gate: the plan of those it cleared, their pass, and the
# refusals (each a step not taken).
UndoGate = Callable[[Plan], tuple[Plan, Cleared, tuple[str, ...]]]


@dataclass(frozen=True)
class Watch:
    settings: RolloutSettings
    probe: health.Probe
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


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

    def stage(self, stage: Stage) -> list[Failure]:
        """The stage written, ready, then watched: what its gates found."""
        watched = [s for s in stage.steps if s.action != "delete"]
        baseline = self._sample(watched) if watched else {}
        got = self.runner.run(stage.steps)
        bad = [Failure(r.name, f"not ready: {r.detail}", True) for r in got.values() if not r.ok]
        if bad:
            return bad
        return self.analysed([s for s in watched if s.name in got], baseline)

    def analysed(self, steps: Sequence[Step], baseline: Mapping[str, Health]) -> list[Failure]:
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

    def _sample(self, steps: Sequence[Step]) -> dict[str, Health]:
        return health.sample(self.client, self.watch.probe, {s.name: s.config for s in steps})

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
        results = self.runner.results
        back = [u for s in written if (u := undo(s, results[s.name], before))]
        kept = [
            s.name for s in written if s.action == "create" and s.connector_class == SOURCE and results[s.name].wrote
        ]
        self.lines += [f"left: {n} (a source this run created is never deleted)" for n in kept]
        # A value Connect answered masked is unknown: writing it back would store the mask.
        blind = [u for u in back if masked_keys(u.config) and u.action != "delete"]
        self.lines += [
            f"not rolled back: {u.name} (Connect answered {', '.join(masked_keys(u.config))} masked)" for u in blind
        ]
        changed, back = len(back), [u for u in back if u not in blind]
        try:
            cleared_plan, cleared, refused = gate(Plan(plan.cluster, tuple(back)))
        except HephaestusError as exc:
            self.lines.append(f"rollback not taken: {exc}")
            return Rolled(self.runner.outcome(), (), tuple(self.lines))
        self.lines += [f"rollback not taken, the gate refused it: {why}" for why in refused]
        options = replace(self.options, progress=None, batch_size=0, max_failures=None, batch_interval_s=0.0)
        runner = apply.Runner(self.client, cleared_plan, options, journal, cleared)
        runner.run(cleared_plan.writes)
        done = runner.outcome()
        # Watched from once they are ready: the bad config ran until the rollback replaced it.
        watched = [s for s in cleared_plan.writes if s.action != "delete" and runner.results[s.name].ok]
        check = _Rollout(self.client, runner, self.watch, options)
        found = check.analysed(watched, check._sample(watched)) if watched else []
        done = tuple(
            replace(r, ok=False, detail=f"{r.detail}; then failed the gate: {_why(found, r.name)}")
            if _why(found, r.name)
            else r
            for r in done
        )
        apply.record_outcomes(journal, cleared_plan, done)
        ok = sum(r.ok for r in done)
        self.lines.append(f"rolled back {ok} of {changed} connector(s) changed in this run")
        oks = {r.name for r in done if r.ok}
        undone = oks | {s.renamed_from for s in cleared_plan.writes if s.renamed_from and s.name in oks}
        self.runner.settle({s.name: _undone(results[s.name], reason) for s in written if s.name in undone})
        gone = {s.name for s in cleared_plan.writes if s.action == "delete" and s.name in oks}
        gone |= {s.renamed_from for s in cleared_plan.writes if s.action == "rename" and s.name in oks}
        back_again = tuple(s.name for s in cleared_plan.writes if s.action in ("create", "rename") and s.name in oks)
        return Rolled(self.runner.outcome(), done, tuple(self.lines), frozenset(gone), back_again)


def _undone(result: StepResult, reason: str) -> StepResult:
    detail = f"{result.detail}; rolled back" if not result.ok else f"rolled back ({reason})"
    return replace(result, ok=False, detail=detail)


def _why(found: Sequence[Failure], name: str) -> str:
    return next((f.why for f in found if f.name == name), "")
