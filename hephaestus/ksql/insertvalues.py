"""`INSERT INTO … VALUES (…)` checked before anything is sent, as ksql-migrations parses it. Pure.

ksql-migrations parses every statement of a file with ksqlDB's grammar before it runs any
(tools/migrations/util/CommandParser.java transformToSqlCommand, in confluentinc/ksql) and
refuses the file when one does not parse. The rules kept here are the grammar's for this
statement (ksqldb-parser/src/main/antlr4/io/confluent/ksql/parser/SqlBase.g4):

* `INSERT INTO sourceName (columns)? VALUES values`; nothing may follow the value list;
* `columns: '(' identifier (',' identifier)* ')'`: one name per item, none empty;
* `values: '(' (valueExpression (',' valueExpression)*)? ')'`: brackets balanced, no empty
  item (a leading, trailing or doubled comma), and no two literals side by side (`(1 2)`:
  a missing comma; no rule of the grammar puts a literal right after another);
* with columns, as many values as columns (tools/migrations/commands/ApplyMigrationCommand.java
  verifyColumnValuesMatch, whose message this is).

Without ksqlDB's parser, a value's expression is not checked further: what passes here and
is still wrong, the server refuses.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<string>'(?:[^']|'')*')
    |(?P<name>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
    |(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_@]*|\$\{[A-Za-z_][A-Za-z0-9_@]*\})
    |(?P<open>[(\[])|(?P<close>[)\]])|(?P<comma>,)
    |(?P<op>:=|->|=>|\|\||<>|!=|<=|>=|[=<>+\-*/%.])
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_LITERAL_WORDS = frozenset({"NULL", "TRUE", "FALSE"})
_PAIRS = {"(": ")", "[": "]"}

Token = tuple[str, str]  # (kind, text)


class Malformed(ValueError):
    """Why the statement does not parse (the caller adds the file and line)."""


def tokens(text: str) -> list[Token]:
    """`text` as ksqlDB's lexer would cut it, white space left out."""
    out = [(str(m.lastgroup), m.group()) for m in _TOKEN.finditer(text)]
    return [t for t in out if t[0] != "space"]


def is_insert_values(text: str) -> bool:
    """An `INSERT INTO <name>` not followed by a query (SELECT … or WITH (…) SELECT …)."""
    words = tokens(text)
    if len(words) < 3 or [w[1].upper() for w in words[:2]] != ["INSERT", "INTO"]:
        return False
    return not (len(words) > 3 and words[3][1].upper() in ("SELECT", "WITH"))


def check(text: str) -> None:
    """Raise Malformed unless `text` (one statement, ending with `;`) is a well-formed INSERT … VALUES."""
    rest = tokens(text.rstrip().removesuffix(";"))[3:]  # after INSERT INTO <name>
    columns: list[list[Token]] | None = None
    if rest and rest[0][1] == "(":
        group, rest = _group(rest)
        columns = _items(group, "column")
        bad = [c for c in columns if len(c) != 1 or c[0][0] not in ("word", "name")]
        if bad:
            raise Malformed(f"{' '.join(t for _, t in bad[0])!r} is not one column name")
    if not rest or rest[0][1].upper() != "VALUES":
        raise Malformed("expected VALUES (…) after INSERT INTO <source> [(<columns>)]")
    if len(rest) < 2 or rest[1][1] != "(":
        raise Malformed("VALUES must be followed by a list in parentheses, like VALUES ('a', 1)")
    group, rest = _group(rest[1:])
    if rest:
        raise Malformed(f"unexpected {rest[0][1]!r} after the VALUES list (one row per INSERT)")
    values = _items(group, "value") if group else []
    _adjacent_literals(group)
    if columns is not None and len(columns) != len(values):
        raise Malformed(
            "Invalid `INSERT VALUES` statement. Number of columns and values must match. "
            f"Got: Columns: {len(columns)}. Values: {len(values)}."
        )


def _group(seq: list[Token]) -> tuple[list[Token], list[Token]]:
    """(inside of the leading `(`…`)`, what follows it); brackets must pair up."""
    stack: list[str] = []
    for i, (kind, text) in enumerate(seq):
        if kind == "open":
            stack.append(_PAIRS[text])
        elif kind == "close":
            if not stack or stack.pop() != text:
                raise Malformed(f"unbalanced {text!r}")
            if not stack:
                return seq[1:i], seq[i + 1 :]
    raise Malformed("unbalanced '(': the list is never closed")


def _items(inside: list[Token], what: str) -> list[list[Token]]:
    """The comma-separated items at depth 0 of a list; an empty one is an error."""
    items: list[list[Token]] = [[]]
    depth = 0
    for token in inside:
        depth += {"open": 1, "close": -1}.get(token[0], 0)
        if token[0] == "comma" and depth == 0:
            items.append([])
        else:
            items[-1].append(token)
    if any(not item for item in items):
        raise Malformed(f"an empty {what} in the list (a leading, trailing or doubled ',')")
    return items


def _adjacent_literals(seq: list[Token]) -> None:
    for (k1, t1), (k2, t2) in zip(seq, seq[1:], strict=False):
        if _literal(k1, t1) and _literal(k2, t2):
            raise Malformed(f"missing ',' between {t1} and {t2}")


def _literal(kind: str, text: str) -> bool:
    return kind in ("string", "number") or (kind == "word" and text.upper() in _LITERAL_WORDS)
