"""Secrets the live config cannot show (pure): a value rotated behind its placeholder, and a
PASSWORD value Connect answers masked. Both are judged against keyed fingerprints of the last
apply (state.prints), never against a value.

- **Rotation.** `${file:/s.properties:pw}` stays the same in git and live when the file's value
  changes: no diff, and the connector keeps the old credential until it fails. The value the
  workers resolve is fingerprinted (`resolved:<key>`); when it moved since the last apply, an
  otherwise unchanged connector gets a `restart` step ("secret rotated (connection.password)").
- **Masks.** Some Connect platforms answer PASSWORD-typed values as `****`. Compared as such,
  every run would show drift, and an apply that writes back what it read would store the mask.
  A masked value is unknown: taken as git's value, unless git's value moved since the last
  apply (`git:<key>`), which is then a real change, applied as any other. A key is secret when
  its name looks secret, its plugin types it PASSWORD, or Connect answers it masked: a MongoDB
  sink's `connection.uri` is named like no secret, and without its print a change behind the
  mask would never be seen.
- **Unread.** A secrets file that is here but could not be read (missing, unreadable, without
  the key) keeps the last print: dropped, the next read would be taken as the first, and the
  rotation between them never acted on. The run says so, by connector and key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from hephaestus.fleet.model import Desired, Live
from hephaestus.reconciler.plan import TARGET_STATES, Plan, Step
from hephaestus.safety import effects
from hephaestus.safety.values import Resolver, Value, known, shown, unread
from hephaestus.secrets import is_sensitive

Prints = dict[str, dict[str, str]]
Printed = Mapping[str, Mapping[str, str]]  # fingerprints as read (never changed here)
Stretch = Callable[[str], str]  # a value -> its keyed fingerprint (safety.seal.Fingerprints.value)
RESOLVED, GIT = "resolved:", "git:"
# What platforms answer for a hidden value: stars, or a word for it.
_MASK = re.compile(r"^(\*{3,}|\[?(hidden|redacted|masked)\]?|<(hidden|redacted)>)$", re.IGNORECASE)
_NONE: Mapping[str, Any] = MappingProxyType({})  # a default that no caller can change
WRITTEN = ("create", "update", "rename")  # the writes Connect validates first (config/validate)


_MASK_STARTS = frozenset("*[<hrmHRM")  # what a mask can begin with: most values are spared the regex


def is_mask(value: str | None) -> bool:
    return value is not None and value[:1] in _MASK_STARTS and bool(_MASK.match(value))


def masked_keys(config: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(sorted(k for k, v in config.items() if is_mask(v)))


def secret_keys(live: Mapping[str, str], typed: frozenset[str]) -> frozenset[str]:
    """The keys whose git value is printed besides those named like secrets: those the plugin
    types PASSWORD (`typed`), and those Connect answers masked, whatever their name."""
    return typed | frozenset(masked_keys(live))


def current(
    desired: Mapping[str, Desired],
    resolve: Resolver,
    stretch: Stretch,
    before: Printed = _NONE,
    typed: Mapping[str, frozenset[str]] = _NONE,
) -> Prints:
    """Each connector's fingerprints now: of every placeholder resolved here (the last one
    recorded when its file could not be read), and of git's value of every secret key (named
    like one, or in `typed`: see secret_keys)."""
    return {
        name: _prints(d.config, resolve, stretch, before.get(name, {}), typed.get(name, frozenset()))
        for name, d in desired.items()
    }


def _prints(
    config: Mapping[str, str], resolve: Resolver, stretch: Stretch, before: Mapping[str, str], typed: frozenset[str]
) -> dict[str, str]:
    found = {}
    for key, raw in sorted(config.items()):
        if "${" in raw:
            found.update(_resolved(key, resolve(raw), stretch, before))
        if raw and (key in typed or is_sensitive(key)):
            found[GIT + key] = stretch(raw)
    return found


def _resolved(key: str, value: Value | None, stretch: Stretch, before: Mapping[str, str]) -> dict[str, str]:
    """The resolved value's print; the last one recorded when its file could not be read (a
    file simply not here lives on the workers: it never had one)."""
    if (v := known(value)) is not None:
        return {RESOLVED + key: stretch(v)}
    if unread(value)[0] and RESOLVED + key in before:
        return {RESOLVED + key: before[RESOLVED + key]}
    return {}


@dataclass(frozen=True)
class Unread:
    """A secret whose file is here and gave no value: by connector and key, never a value."""

    connector: str
    key: str
    why: str  # the file and the OS's reason, or the key the file lacks
    fatal: bool  # the file could not be read at all (else: read, without the key)

    def warning(self) -> str:
        return (
            f"{self.connector}: the secret in {shown(self.key)} could not be read here ({self.why}): "
            "a rotation is not seen until it is read again (its last fingerprint is kept)"
        )


def unreadable(desired: Mapping[str, Desired], resolve: Resolver) -> tuple[Unread, ...]:
    return tuple(
        Unread(name, key, *found)
        for name, d in sorted(desired.items())
        for key, raw in sorted(d.config.items())
        if "${" in raw and (found := unread(resolve(raw)))[0]  # only a placeholder can be unread
    )


def unread_error(found: Sequence[Unread]) -> str:
    """The run's error (exit 1) when an apply could not read a secrets file ("" when none): the
    other connectors' steps still run; a key not yet in a file it read is a warning only."""
    fatal = [f"{u.connector} {shown(u.key)}" for u in found if u.fatal]
    return "secrets not read, their last fingerprints kept: " + ", ".join(fatal) if fatal else ""


def rotated(now: Mapping[str, str], before: Mapping[str, str]) -> tuple[str, ...]:
    """The keys whose resolved value moved since the last apply (none recorded: none moved)."""
    keys = [k for k in now if k.startswith(RESOLVED) and k in before and before[k] != now[k]]
    return tuple(k[len(RESOLVED) :] for k in sorted(keys))


def with_restarts(p: Plan, now: Printed, before: Printed, resolve: Resolver) -> Plan:
    """Unchanged connectors whose secret rotated are restarted (a written one restarts anyway)."""
    steps = tuple(_restart(s, rotated(now.get(s.name, {}), before.get(s.name, {})), resolve) for s in p.steps)
    return replace(p, steps=steps)


def _restart(step: Step, keys: tuple[str, ...], resolve: Resolver) -> Step:
    if step.action != "unchanged" or not keys:
        return step
    return replace(
        step,
        action="restart",
        reason=f"secret rotated ({', '.join(map(shown, keys))})",
        # Readiness waits for the state it leaves: git's, else the one it settled in.
        target_state=step.target_state or (step.live_state if step.live_state in TARGET_STATES else "RUNNING"),
        effects=effects.of_restart(step.config, resolve),
    )


def unmasked(
    live: Live, desired: Desired, keys: tuple[str, ...], now: Mapping[str, str], before: Mapping[str, str]
) -> Live:
    """A live config whose masked secret `keys` are taken as git's values, unless git's value
    moved since the last apply (or git has none): then the mask stays, and the diff shows it."""
    config = dict(live.config)
    for key in keys:
        wanted = desired.config.get(key)
        moved = GIT + key in before and before.get(GIT + key) != now.get(GIT + key)
        if wanted is not None and not moved:
            config[key] = wanted
    return replace(live, config=config)


def unrecorded(name: str, desired: Desired, keys: tuple[str, ...], before: Mapping[str, str]) -> tuple[str, ...]:
    """Masked keys compared with nothing recorded: taken as unchanged, and said in the plan."""
    return tuple(
        f"{name}: Connect answers {shown(k)} masked and no apply recorded it: taken as git's value "
        "(the next apply records it, and a change in git is seen from then on)"
        for k in keys
        if k in desired.config and GIT + k not in before
    )


def with_typed(p: Plan, now: Printed, ok: frozenset[str], secret: Callable[[str], bool], stretch: Stretch) -> Prints:
    """`now`, with git's value of each secret key of every connector written (ok) printed as
    judged after the apply: its config/validate taught which keys its plugin types PASSWORD,
    so a platform that answers them masked is judged from the first write on."""
    found = {n: dict(v) for n, v in now.items()}
    for s in p.steps:
        if s.name in ok and s.name in found and s.action in WRITTEN:
            more = {GIT + k: v for k, v in sorted(s.config.items()) if v and secret(k) and GIT + k not in found[s.name]}
            found[s.name].update({k: stretch(v) for k, v in more.items()})
    return found


def settled(p: Plan, now: Printed, before: Printed, ok: frozenset[str]) -> Prints:
    """What to record after an apply: a connector written or restarted (ok), or unchanged, is
    recorded as it is now; one whose step failed, or only moved state, keeps its last record
    for the resolved values (a rotation not yet acted on stays pending)."""
    found: Prints = {}
    for step in p.steps:
        if step.name not in now:
            continue
        if step.action == "unchanged" or (step.name in ok and step.action in (*WRITTEN, "restart")):
            found[step.name] = dict(now[step.name])
        elif step.action == "state" and step.name in ok:
            kept = {k: v for k, v in before.get(step.name, {}).items() if k.startswith(RESOLVED)}
            found[step.name] = {**{k: v for k, v in now[step.name].items() if k.startswith(GIT)}, **kept}
    return found
