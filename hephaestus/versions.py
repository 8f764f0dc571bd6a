"""Plugin versions and pins as Kafka Connect 4.1+ reads them (KIP-891), pure and standard library
only: the generator checks a pin where it is written, the fleet where it runs (`fleet.plugins`).

How Connect reads a pin (`PluginVersionUtils.connectorVersionRequirement`, Kafka 4.1): none or
`latest` is the newest installed; a plain version is a hard requirement, exactly that version; a
Maven range (`[3.5,3.6)`, `[3.6,)`, `(,4.0)`, unions joined by commas) is the newest installed
inside it. Versions compare as Maven's do, close enough for release numbers (`3.6.1.Final` >
`3.5.2.Final`, `10.8.4` > `9.0`, `3.6.1.CR1` < `3.6.1`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cmp_to_key

LATEST = "latest"


_QUALIFIERS = {"alpha": -5, "a": -5, "beta": -4, "b": -4, "milestone": -3, "m": -3, "rc": -2, "cr": -2}
_QUALIFIERS |= {"snapshot": -1, "": 0, "ga": 0, "final": 0, "release": 0, "sp": 1}


def _items(version: str) -> list[tuple[int, int, str]]:
    """Numbers after words; known qualifiers in Maven's order, other words after them (sp)."""
    parts = [p for p in re.split(r"[.\-_]|(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)", version.strip().lower()) if p]
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
        return self._above(version) and self._below(version)

    def _above(self, version: str) -> bool:
        return self.low is None or compare(version, self.low) > 0 or (self.low_in and compare(version, self.low) == 0)

    def _below(self, version: str) -> bool:
        return (
            self.high is None or compare(version, self.high) < 0 or (self.high_in and compare(version, self.high) == 0)
        )


@dataclass(frozen=True)
class Requirement:
    """A pin as Connect reads it; no bounds: the newest installed."""

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
        return Requirement()
    text = spec.strip()
    if not text.startswith(("[", "(")):
        if not re.fullmatch(r"[\w.\-+]+", text):
            raise ValueError(f"{spec!r} is not a version nor a range such as [3.5,3.6)")
        return Requirement((Bound(text, text, True, True),))  # a plain version: exactly it
    return Requirement(tuple(_bound(o, inside, c, spec) for o, inside, c in _ranges(text, spec)))


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
    if low is None and high is None:
        raise ValueError(f"{spec!r}: a range names at least one end (no pin at all is the newest)")
    if low is not None and high is not None and compare(high, low) < 0:
        raise ValueError(f"{spec!r}: its upper end is below its lower end")
    return Bound(low, high, opening == "[", closing == "]")
