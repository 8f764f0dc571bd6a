"""Config keys a plugin's release renamed (issue 50), pure: the list is data (`keyrenames.json`, each
entry with its source), read against the version a connector pins.

A key is renamed between two versions: `added` is the first that reads the new name, `removed` the
first that no longer reads the old one (equal when the rename was abrupt, as Debezium 2.0's were).
Only a pin decides: a pin every version of which is at or past `removed` wants the new name, one
every version of which is before `added` wants the old one. No pin (the newest installed), or a
range across the release, decides nothing: both names are left as written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from hephaestus.versions import Requirement, compare, requirement

PIN = "connector.plugin.version"


@dataclass(frozen=True)
class Rename:
    cls: str
    old: str
    new: str
    added: str
    removed: str
    source: str
    prefix: bool = False  # every key starting with `old` (a family, such as database.history.*)

    def renamed(self, key: str, to_new: bool) -> str | None:
        """`key` under the other name, or None when this rename does not touch it."""
        was, now = (self.old, self.new) if to_new else (self.new, self.old)
        if self.prefix:
            return now + key[len(was) :] if key.startswith(was) else None
        return now if key == was else None

    def why(self, to_new: bool) -> str:
        when = f"from {self.removed} on" if to_new else f"before {self.added}"
        name = (self.new if to_new else self.old) + ("*" if self.prefix else "")
        return f"{self.cls} reads it as {name!r} {when} (source: {self.source})"


@cache
def builtin() -> tuple[Rename, ...]:
    """The packaged list (hephaestus/keyrenames.json): one Rename per class an entry names."""
    doc = json.loads(resources.files("hephaestus").joinpath("keyrenames.json").read_text(encoding="utf-8"))
    return tuple(
        Rename(cls, e["old"], e["new"], e["added"], e["removed"], e["source"], bool(e.get("prefix", False)))
        for e in doc["renames"]
        for cls in e["classes"]
    )


def at_or_after(req: Requirement, version: str) -> bool:
    """Every version `req` admits is `version` or newer (no pin admits every version)."""
    return bool(req.bounds) and all(b.low is not None and compare(b.low, version) >= 0 for b in req.bounds)


def before(req: Requirement, version: str) -> bool:
    """Every version `req` admits is older than `version`."""
    return bool(req.bounds) and all(
        b.high is not None and (compare(b.high, version) < 0 or (compare(b.high, version) == 0 and not b.high_in))
        for b in req.bounds
    )


@dataclass(frozen=True)
class Misnamed:
    """A key a connector spells as its pinned version no longer (or not yet) reads."""

    key: str
    wanted: str
    why: str


def misnamed(config: Mapping[str, str], renames: tuple[Rename, ...] | None = None) -> list[Misnamed]:
    """Each key of `config` its pin says is spelled for another version, with the name it wants.
    A pin Connect would refuse decides nothing here (the pin's own check names it)."""
    try:
        req = requirement(config.get(PIN))
    except ValueError:
        return []
    cls = config.get("connector.class", "").strip()
    found = []
    for r in renames if renames is not None else builtin():
        to_new = _direction(req, r) if r.cls == cls else None
        if to_new is not None:
            found += [Misnamed(k, w, r.why(to_new)) for k in sorted(config) if (w := r.renamed(k, to_new))]
    return found


def _direction(req: Requirement, r: Rename) -> bool | None:
    """True: the pin wants the new name; False: the old one; None: it cannot tell."""
    if at_or_after(req, r.removed):
        return True
    return False if before(req, r.added) else None


class RenameClash(ValueError):
    """A config spells one setting under both names: which one is meant cannot be told."""


def rewritten(config: Mapping[str, str], renames: tuple[Rename, ...] | None = None) -> dict[str, str]:
    """`config` with every misnamed key under the name its pin reads; RenameClash when the
    wanted name is there already (with another value, or the same: the old one is dropped
    then, as it means nothing to the pinned version)."""
    out = dict(config)
    for m in misnamed(config, renames):
        if m.wanted in config and config[m.wanted] != config[m.key]:
            raise RenameClash(f"{m.key!r} and {m.wanted!r} are both set, to different values; {m.why}")
        out[m.wanted] = out.pop(m.key)
    return out


def aligned(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """`before` with each renamed key spelled as `after`'s pin reads it (its own pin kept): a bump
    across a release that renamed a key is judged by what the setting does, not by its name, so the
    old name gone and the new one holding its value is no change. A clash leaves it as it is."""
    try:
        spelled = rewritten({**before, PIN: after.get(PIN, "")})
    except RenameClash:
        return dict(before)
    spelled.pop(PIN)
    return spelled | ({PIN: before[PIN]} if PIN in before else {})
