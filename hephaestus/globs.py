"""Do two `select` scopes share a connector name? Exact for fnmatch globs (*, ?, [set]). Pure.

Two clusters of one project file pointing at one Connect cluster must split it: a name both
scopes select would be planned twice (and deleted by one as absent from the other's git).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

_TOKEN = re.compile(r"\*|\?|\[!?\]?[^\]]*\]|.", re.S)
_PROBE = "\ue000"  # a private-use character no glob names: matches `?` and negated sets only


def scopes_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """An empty scope selects every name."""
    if not a or not b:
        return True
    return any(globs_overlap(x, y) for x in a for y in b)


def globs_overlap(a: str, b: str) -> bool:
    """Is there a name both globs match? A search over pairs of positions in both patterns."""
    ta, tb = _tokens(a), _tokens(b)
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(ta) and j == len(tb):
            return True
        todo += _moves(ta, tb, i, j)
    return False


def _moves(ta: list[str], tb: list[str], i: int, j: int) -> list[tuple[int, int]]:
    x = ta[i] if i < len(ta) else None
    y = tb[j] if j < len(tb) else None
    moves = []
    if x == "*":
        moves.append((i + 1, j))  # the star ends here
        if y is not None:
            moves.append((i, j + 1))  # the star eats what y matches (a `*` in y: y's star ends)
    if y == "*":
        moves.append((i, j + 1))
        if x is not None:
            moves.append((i + 1, j))
    if x is not None and y is not None and _same_char(x, y):
        moves.append((i + 1, j + 1))  # one character both match (a star may take one too)
    return moves


def _tokens(glob: str) -> list[str]:
    return _TOKEN.findall(glob)


def _same_char(x: str, y: str) -> bool:
    """Can one character match both tokens? If any can, the smallest such one can, and it is a
    character written in either token (a literal, a range's start), the one right after a
    written one (after an excluded character or range), or one no glob names (what `?` and
    negated sets match)."""
    near = {chr(o) for c in x + y for o in (ord(c), ord(c) + 1) if o <= 0x10FFFF}
    return any(fnmatchcase(c, x) and fnmatchcase(c, y) for c in (_PROBE, *near))
