"""Which connectors of a plan are renames: a new name in git that takes over an owned live
connector, offsets and all. Pure.

A pair is explicit (`renamed_from` in the connector file) or inferred: the only owned live
connector absent from git whose config equals the new one's (name and ignorable keys aside),
matched by no other new name. Anything ambiguous is not paired and is said so. What a rename
does to data (a source's slot and topics, a slot dropped on stop) is judged by its effects
(`safety.effects.of_rename`) at the one gate, as for any step.

An explicit rename whose new name already runs, not owned by this deployment, is `blocked`: a
rename never overwrites a connector it does not own (the gate refuses it; the old one is kept).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from hephaestus.fleet.model import Desired, Live, comparable


@dataclass(frozen=True)
class Renames:
    pairs: Mapping[str, str]  # new name -> old name
    warnings: tuple[str, ...] = ()
    blocked: Mapping[str, str] = field(default_factory=dict)  # new name (live, not owned) -> old name


def find(
    desired: Mapping[str, Desired], live: Mapping[str, Live], owned: frozenset[str], ignore: frozenset[str]
) -> Renames:
    gone = {n: lv for n, lv in live.items() if n not in desired and n in owned}
    new = {n: d for n, d in desired.items() if n not in live}
    pairs, warnings = _explicit(new, gone)
    inferred, more = _inferred(
        {n: d for n, d in new.items() if n not in pairs},
        {n: lv for n, lv in gone.items() if n not in pairs.values()},
        ignore,
    )
    pairs.update(inferred)
    blocked = {
        n: d.renamed_from
        for n, d in sorted(desired.items())
        if n in live and n not in owned and d.renamed_from in gone and d.renamed_from not in pairs.values()
    }
    return Renames(pairs, (*warnings, *more), blocked)


def _explicit(new: Mapping[str, Desired], gone: Mapping[str, Live]) -> tuple[dict[str, str], list[str]]:
    pairs: dict[str, str] = {}
    warnings = []
    for name, d in sorted(new.items()):
        old = d.renamed_from
        if not old:
            continue
        if old in gone and old not in pairs.values():
            pairs[name] = old
        else:
            warnings.append(
                f"{name}: renamed_from {old!r} is not an owned live connector absent from git "
                "(already renamed, never owned, or claimed twice): planned as a create"
            )
    return pairs, warnings


def _inferred(
    new: Mapping[str, Desired], gone: Mapping[str, Live], ignore: frozenset[str]
) -> tuple[dict[str, str], list[str]]:
    shape = {n: comparable(lv.config, ignore) for n, lv in gone.items()}
    matches = {n: [o for o, c in shape.items() if c == comparable(d.config, ignore)] for n, d in new.items()}
    wanted = Counter(o for olds in matches.values() for o in olds)  # how many new names match each old one
    pairs = {n: olds[0] for n, olds in matches.items() if len(olds) == 1 and wanted[olds[0]] == 1}
    warnings = [
        f"{n}: its config equals several connectors absent from git ({', '.join(sorted(o))}) or "
        "theirs equals several new ones: not taken for a rename (set renamed_from)"
        for n, o in sorted(matches.items())
        if o and n not in pairs
    ]
    return pairs, warnings
