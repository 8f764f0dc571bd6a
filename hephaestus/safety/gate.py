"""The one safety gate (pure): every write of every command passes `judge`, and only a
`Cleared` it hands out lets an executor write.

A write is a step with its effects on data (`safety.effects`, `safety.fleet`). The gate refuses:

- an effect of a fleet rule (`invariant`: a second writer on a slot, a topic namespace or a
  table; a rename over a connector this deployment does not own): whatever is allowed;
- a destructive effect, unless the command itself is that effect (`consent`: `offsets reset`
  resets offsets, `dlq purge` deletes records) or it is allowed: `--allow-destructive` (every
  code), `--allow-destructive=CODE,…`, or the connector file's `allow_destructive`;
- deletes over the delete policy (`max_deletes`, `max_delete_share` of the owned sinks; any
  delete while git has no sink for the cluster), unless `--force`.

Nothing else writes: the executors (`reconciler.apply`, `offsets.run`, `slots.run`,
`dlq.run`, `heal.run`, `adopt.run`, `snapshot.manual`, `reconciler.topicwrite`) take a
`Cleared`, and `tests/unit/test_architecture.py` checks that no other module calls a write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hephaestus.errors import HephaestusError, InputError
from hephaestus.safety.effects import KINDS, Effect
from hephaestus.settings import MAX_DELETE_SHARE, MAX_DELETES

EVERY = "all"


@dataclass(frozen=True)
class Allow:
    """What an operator consented to: every destructive effect, or these codes."""

    codes: frozenset[str] = frozenset()
    every: bool = False

    def permits(self, effect: Effect) -> bool:
        return not effect.invariant and (self.every or effect.code in self.codes)

    def __or__(self, other: Allow) -> Allow:
        return Allow(self.codes | other.codes, self.every or other.every)

    def describe(self) -> str:
        return EVERY if self.every else ",".join(sorted(self.codes))


def allow_of(given: str | bool | Iterable[str] | None, file: str = "--allow-destructive", field: str = "") -> Allow:
    """`True`/`"all"`: everything; `"a,b"` or a list: those codes (each a destructive effect's)."""
    if given is None or given is False or given == "":
        return Allow()
    if given is True or given == EVERY:
        return Allow(every=True)
    codes = [c.strip() for c in (given.split(",") if isinstance(given, str) else given)]
    wrong = [c for c in codes if c not in allowable()] or ([] if codes else ["(none)"])
    if wrong:
        raise InputError(file, f"unknown effect {wrong[0]!r}: use all, or some of {', '.join(allowable())}", field)
    return Allow(frozenset(codes))


# Effects no flag allows: a fleet rule, or a write that would take what is not ours or move
# offsets where they mean something else (a rename onto a stranger, an unsafe move).
INVARIANTS = ("second-writer", "not-owned", "move-unsafe", "plugin-missing")


def allowable() -> list[str]:
    """The codes --allow-destructive takes: the destructive effects (a fleet rule never is)."""
    return [c for c, (_, destructive) in KINDS.items() if destructive and c not in INVARIANTS]


@dataclass(frozen=True)
class Item:
    """One step of one command, with its effects; `allow`: its connector file's consent."""

    cluster: str
    name: str
    action: str
    effects: tuple[Effect, ...] = ()
    allow: Allow = Allow()
    from_file: bool = False  # a connector file may consent (`allow_destructive`): say so when refused


@dataclass(frozen=True)
class Deletes:
    """A cluster's numbers for the delete policy."""

    cluster: str
    deletes: int
    owned_sinks: int
    git_has_sinks: bool


@dataclass(frozen=True)
class DeletePolicy:
    max_deletes: int = MAX_DELETES
    max_share: float = MAX_DELETE_SHARE
    force: bool = False


@dataclass(frozen=True)
class Refusal:
    cluster: str
    name: str  # "" for a cluster-wide rule (the delete policy)
    message: str


@dataclass(frozen=True)
class Verdict:
    items: tuple[Item, ...]
    refusals: tuple[Refusal, ...] = ()

    def refused(self, cluster: str) -> tuple[Refusal, ...]:
        return tuple(r for r in self.refusals if r.cluster == cluster)

    def reason(self, cluster: str) -> str:
        """One readable line: the first refusal, and how many more."""
        return first_and_more([r.message for r in self.refused(cluster)])


def first_and_more(reasons: Sequence[str]) -> str:
    """One readable line for a cluster's refusals: the first, and how many more ("" when none)."""
    if not reasons:
        return ""
    more = f" (and {len(reasons) - 1} more refused)" if len(reasons) > 1 else ""
    return reasons[0] + more


def judge(
    items: Sequence[Item],
    allow: Allow = Allow(),
    consent: frozenset[str] = frozenset(),
    deletes: Sequence[Deletes] = (),
    policy: DeletePolicy = DeletePolicy(),
) -> Verdict:
    """Every item's effects, and the delete policy per cluster: what is refused, and why."""
    refusals = [r for item in items for r in _item(item, allow, consent)]
    refusals += [r for d in deletes if (r := _delete_policy(d, policy))]
    return Verdict(tuple(items), tuple(refusals))


def _item(item: Item, allow: Allow, consent: frozenset[str]) -> list[Refusal]:
    permitted = allow | item.allow
    held = [e for e in item.effects if e.destructive and not (e.code in consent and not e.invariant)]
    held = [e for e in held if not permitted.permits(e)]
    return [Refusal(item.cluster, item.name, _message(item, e)) for e in held]


def _message(item: Item, e: Effect) -> str:
    if e.invariant:
        return f"{item.action} {item.name} refused: {e.describe()} (a fleet rule: never allowed)"
    file = ", or set allow_destructive in its file" if item.from_file else ""
    return (
        f"destructive {item.action} of {item.name} ({e.describe()}): rerun with --allow-destructive={e.code} "
        f"(or --allow-destructive){file}"
    )


def _delete_policy(d: Deletes, policy: DeletePolicy) -> Refusal | None:
    """Deletes are counted against the owned sinks, never the whole live fleet; a sink kind
    gone from git (an emptied or missing folder) is refused whatever the counts."""
    if policy.force or d.deletes == 0:
        return None
    if not d.git_has_sinks:
        why = (
            f"git has no JDBC sink for this cluster (its sink folder is empty or missing) while "
            f"{d.owned_sinks} owned sinks run: deleting {d.deletes} of them needs --force"
        )
    elif d.deletes > policy.max_deletes:
        why = f"would delete {d.deletes} connectors (more than {policy.max_deletes}); rerun with --force"
    elif d.deletes / max(d.owned_sinks, 1) > policy.max_share:
        share = f"more than {policy.max_share:.0%}"
        why = f"would delete {d.deletes} of {d.owned_sinks} owned sinks ({share}); rerun with --force"
    else:
        return None
    return Refusal(d.cluster, "", why)


class Refused(HephaestusError):
    """The gate refused a write: nothing was written (exit 2)."""

    exit_code = 2


_GATE = object()  # only `clear` can make a Cleared


@dataclass(frozen=True)
class Cleared:
    """The gate's pass for the items of one cluster (or one operation): what an executor may write."""

    cluster: str
    items: tuple[Item, ...]
    by: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.by is not _GATE:
            raise TypeError("a Cleared is handed out by safety.gate.clear only")

    def names(self) -> frozenset[str]:
        return frozenset(i.name for i in self.items)


def clear(verdict: Verdict, cluster: str) -> Cleared:
    """The pass for one cluster's items; Refused (exit 2) naming the first refusal when any."""
    if verdict.refused(cluster):
        raise Refused(verdict.reason(cluster))
    return Cleared(cluster, tuple(i for i in verdict.items if i.cluster == cluster), _GATE)


def passed(verdict: Verdict, cluster: str) -> Cleared:
    """The pass for the items of one cluster the gate did not refuse, each judged on its own
    (heal: one connector's refused restart never holds back another's)."""
    refused = {r.name for r in verdict.refused(cluster)}
    return Cleared(cluster, tuple(i for i in verdict.items if i.cluster == cluster and i.name not in refused), _GATE)


def check(items: Sequence[Item], allow: Allow = Allow(), consent: frozenset[str] = frozenset()) -> Cleared:
    """judge + clear for a command acting on one place (offsets, a slot, a DLQ)."""
    verdict = judge(items, allow, consent)
    if verdict.refusals:
        raise Refused(verdict.reason(verdict.refusals[0].cluster))
    return Cleared(items[0].cluster if items else "", tuple(items), _GATE)
