"""Plugin versions as Kafka Connect 4.1+ resolves them (KIP-891), pure.

One worker may hold several versions of a plugin, each in its own folder under `plugin.path`
(`GET /connector-plugins?connectorsOnly=false` lists one entry per class and version). A
connector pins its plugin with `connector.plugin.version`, its converters with
`key.converter.plugin.version`, `value.converter.plugin.version` and
`header.converter.plugin.version`. How Connect reads a pin (`PluginVersionUtils`
.connectorVersionRequirement, Kafka 4.1): none or `latest` is the newest installed; a plain
version is a hard requirement, exactly that version; a Maven range (`[3.5,3.6)`, `[3.6,)`,
`(,4.0)`, unions joined by commas) is the newest installed inside it. Versions compare as
Maven's do, close enough for release numbers (`3.6.1.Final` > `3.5.2.Final`, `10.8.4` > `9.0`).

Skew is a cluster whose workers do not hold the same versions of a class: a task runs
whichever its worker holds, so one connector can run two versions at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cmp_to_key

from hephaestus.classes import PIN_KEYS

LATEST = "latest"

# worker -> class -> the versions it holds
Inventory = Mapping[str, Mapping[str, frozenset[str]]]

_QUALIFIERS = {"alpha": -5, "a": -5, "beta": -4, "b": -4, "milestone": -3, "m": -3, "rc": -2, "cr": -2}
_QUALIFIERS |= {"snapshot": -1, "": 0, "ga": 0, "final": 0, "release": 0, "sp": 1}


def _items(version: str) -> list[tuple[int, int, str]]:
    """Numbers after words; known qualifiers in Maven's order, other words after them (sp)."""
    parts = [p for p in re.split(r"[.\-_]|(?<=\d)(?=[a-zA-Z])|(?<=[a-zA-Z])(?=\d)", version.strip().lower()) if p]
    return [_item(p) for p in parts]


def _item(part: str) -> tuple[int, int, str]:
    if part.isdigit():
        return (1, int(part), "")
    return (0, _QUALIFIERS[part], "") if part in _QUALIFIERS else (0, 2, part)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1, as Maven orders versions: a missing item is 0 beside a number and a release
    beside a word, so 3.6 == 3.6.0.Final and 3.6.1.CR1 < 3.6.1 < 3.6.1.1."""
    x, y = _items(a), _items(b)
    for i in range(max(len(x), len(y))):
        p = x[i] if i < len(x) else (y[i][0], 0, "")
        q = y[i] if i < len(y) else (x[i][0], 0, "")
        if p != q:
            return -1 if p < q else 1
    return 0


version_key = cmp_to_key(compare)


@dataclass(frozen=True)
class Bound:
    low: str | None
    high: str | None
    low_in: bool
    high_in: bool

    def holds(self, version: str) -> bool:
        low = 1 if self.low is None else compare(version, self.low)
        high = -1 if self.high is None else compare(version, self.high)
        return (low > 0 or (low == 0 and self.low_in)) and (high < 0 or (high == 0 and self.high_in))


@dataclass(frozen=True)
class Requirement:
    """A pin as Connect reads it; no bounds: the newest installed."""

    spec: str
    bounds: tuple[Bound, ...] = ()

    def holds(self, version: str) -> bool:
        return not self.bounds or any(b.holds(version) for b in self.bounds)

    def chosen(self, installed: Iterable[str]) -> str | None:
        """The version a worker holding `installed` runs (None: it holds none that fits)."""
        fits = [v for v in installed if self.holds(v)]
        return max(fits, key=version_key) if fits else None


def requirement(spec: str | None) -> Requirement:
    """A pin's requirement; ValueError names what is wrong with one Connect would refuse too."""
    if spec is None or spec.strip() in ("", LATEST):
        return Requirement(LATEST)
    text = spec.strip()
    if text[0] not in "[(":
        if not re.fullmatch(r"[\w.\-+]+", text):
            raise ValueError(f"{spec!r} is not a version nor a range such as [3.5,3.6)")
        return Requirement(text, (Bound(text, text, True, True),))  # a plain version: exactly it
    return Requirement(text, tuple(_bound(o, inside, c, spec) for o, inside, c in _ranges(text, spec)))


def _ranges(text: str, spec: str) -> list[tuple[str, str, str]]:
    """`[a,b),(c,]`: each range's opening, inside and closing; anything else is refused."""
    found, rest = [], text
    while rest:
        m = re.match(r"\s*([\[(])([^\[\]()]*)([\])])\s*(,|$)", rest)
        if m is None or (m[4] == "," and not rest[m.end() :].strip()):
            raise ValueError(f"{spec!r} is not a version nor a range such as [3.5,3.6)")
        found.append((m[1], m[2], m[3]))
        rest = rest[m.end() :]
    return found


def _bound(opening: str, inside: str, closing: str, spec: str) -> Bound:
    ends = [e.strip() or None for e in inside.split(",")]
    if len(ends) == 1:  # [3.6.1]: exactly it
        if ends[0] is None or opening != "[" or closing != "]":
            raise ValueError(f"{spec!r}: a one-version range is written [VERSION]")
        return Bound(ends[0], ends[0], True, True)
    if len(ends) != 2:
        raise ValueError(f"{spec!r}: a range has two ends, [low,high)")
    low, high = ends
    if low is not None and high is not None and compare(high, low) < 0:
        raise ValueError(f"{spec!r}: its upper end is below its lower end")
    return Bound(low, high, opening == "[", closing == "]")


@dataclass(frozen=True)
class Skew:
    """A class whose workers hold different versions: {worker: versions}."""

    plugin: str
    held: Mapping[str, frozenset[str]]

    def describe(self) -> str:
        by = "; ".join(f"{w}: {', '.join(sorted(v, key=version_key)) or 'none'}" for w, v in sorted(self.held.items()))
        return f"{self.plugin} differs between workers ({by})"


def skew(inventory: Inventory) -> tuple[Skew, ...]:
    """Every class not held in the same versions by every worker of the cluster."""
    classes = sorted({c for held in inventory.values() for c in held})
    found = []
    for c in classes:
        held = {w: inventory[w].get(c, frozenset()) for w in sorted(inventory)}
        if len(set(held.values())) > 1:
            found.append(Skew(c, held))
    return tuple(found)


def pins(config: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """{pin key: (the class it pins, its spec)} of the pins a config sets ("" class: the
    worker's default converter, unknown here)."""
    return {k: (config.get(c, "").strip(), config[k].strip()) for k, c in PIN_KEYS.items() if config.get(k, "").strip()}


def lacking(inventory: Inventory, plugin: str, spec: str) -> tuple[str, ...]:
    """The workers on which no installed version of `plugin` fits `spec`."""
    need = requirement(spec)
    return tuple(w for w in sorted(inventory) if need.chosen(inventory[w].get(plugin, frozenset())) is None)


@dataclass(frozen=True)
class Workers:
    """What each worker of one cluster holds (`fleet.pluginread` reads it): {worker: {class:
    versions}}, the classes' types, and the workers that could not be checked."""

    cluster: str
    held: Inventory = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)  # class -> source/sink/converter/…
    unread: Mapping[str, str] = field(default_factory=dict)  # worker -> why it was not read
    unversioned: tuple[str, ...] = ()  # workers whose plugins carry no version (before KIP-891)

    def unchecked(self) -> str:
        """Why a pin cannot be checked on every worker ("" when it can)."""
        if self.unread:
            worker, why = sorted(self.unread.items())[0]
            return f"worker {worker} not read ({why})"
        if self.unversioned:
            return f"worker {self.unversioned[0]} lists no plugin versions (Connect before 4.1)"
        return ""


def findings(cluster: str, w: Workers, configs: Mapping[str, Mapping[str, str]]) -> tuple[str, ...]:
    """What is wrong with a cluster's plugins, each naming the cluster and worker: a worker not
    read or before KIP-891, skew between workers, a connector's pin that is no version or that a
    worker holds nothing for (its tasks placed there cannot start)."""
    found = [f"{cluster}: worker {n} not read: {why}" for n, why in sorted(w.unread.items())]
    found += [
        f"{cluster}: worker {n} lists no plugin versions (Connect before 4.1): versions cannot be checked"
        for n in w.unversioned
    ]
    found += [f"{cluster}: {s.describe()}" for s in skew(w.held)]
    return tuple(found + [p for name, c in sorted(configs.items()) for p in _pin_findings(cluster, name, c, w)])


def _pin_findings(cluster: str, name: str, config: Mapping[str, str], w: Workers) -> list[str]:
    found = []
    for key, (cls, spec) in sorted(pins(config).items()):
        try:
            missing = lacking(w.held, cls, spec) if cls else ()
        except ValueError as exc:
            found.append(f"{cluster}: {name}: {key}: {exc}")
            continue
        if missing:
            found.append(f"{cluster}: {name}: {key}={spec} but worker {', '.join(missing)} holds no {cls} that fits")
    return found
