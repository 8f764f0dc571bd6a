"""ksqlDB SQL as text: split a file into statements, mask secrets. Pure.

Splitting is ksql-migrations' (`CommandParser.splitSql`), rule for rule: a `;` ends a
statement unless it is inside a '…' string (`''` escapes a quote); `-- …` comments are
deleted up to and including their line break, `/* … */` comments are deleted outright, so
text on both sides joins (`CRE/**/ATE` is `CREATE`, as there). Back-quoted and double-quoted
names are not special to the splitter: a `;` inside one ends the statement there, which
ksql-migrations then fails to parse; hephaestus refuses such a file up front, naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hephaestus.errors import InputError
from hephaestus.secrets import MASK, is_placeholder, is_sensitive

# ksqlDB variable names (SqlBase.g4: IDENTIFIER after '${').
VARIABLE_NAME = r"[A-Za-z_][A-Za-z0-9_@]*"
# `'key' = 'value'` pairs of a WITH clause; keys may be quoted with ', " or ` or bare.
_PROPERTY = re.compile(r"""(?P<key>'(?:[^']|'')*'|"[^"]*"|`[^`]*`|[A-Za-z_][\w.]*)\s*=\s*'(?P<value>(?:[^']|'')*)'""")


@dataclass(frozen=True)
class RawStatement:
    text: str  # comments removed, trimmed, ending with ";"
    line: int  # 1-based line of the file where the statement starts
    raw: str = ""  # as ksql-migrations cuts it (leading white space kept): what its ERROR rows quote


def split(sql: str, source: str) -> list[RawStatement]:
    """The statements of `sql`; `source` names the file in errors."""
    return _Splitter(sql, source).run()


class _Splitter:
    def __init__(self, sql: str, source: str) -> None:
        self.sql, self.source = sql, source
        self.i, self.line = 0, 1
        self.start: int | None = None
        self.buf: list[str] = []
        self.names_open = ""  # a ` or " name not closed yet in this statement (outside strings)
        self.out: list[RawStatement] = []

    def run(self) -> list[RawStatement]:
        while self.i < len(self.sql):
            self._step()
        rest = "".join(self.buf).strip()
        if rest:
            raise InputError(self.source, f"missing ';' at the end of: {preview(rest)}", line=self.start)
        return self.out

    def _step(self) -> None:
        sql, i = self.sql, self.i
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            if end < 0:  # ksql-migrations: "failed to find closing token '\n'"
                raise InputError(
                    self.source,
                    "a -- comment on the last line needs a line break after it "
                    "(ksql-migrations refuses the file otherwise)",
                    line=self.line,
                )
            self.line += 1
            self.i = end + 1  # the line break goes with the comment, as in ksql-migrations
        elif sql.startswith("/*", i):
            self._block_comment()
        elif sql[i] == "'":
            self._string()
        elif sql[i] == ";":
            self._emit()
        else:
            self._take(sql[i])
            self.i += 1

    def _block_comment(self) -> None:
        end = self.sql.find("*/", self.i + 1)  # from the `*`: "/*/" closes itself, as there
        if end < 0:
            raise InputError(self.source, "unterminated /* comment", line=self.line)
        self.line += self.sql.count("\n", self.i, end)
        self.i = end + 2

    def _string(self) -> None:
        end = self.sql.find("'", self.i + 1)  # `''` reads as two strings in a row: one quote
        if end < 0:
            raise InputError(self.source, "unterminated string starting with '", line=self.line)
        self._take(self.sql[self.i : end + 1], quoted=True)
        self.i = end + 1

    def _take(self, chunk: str, quoted: bool = False) -> None:
        if self.start is None and not chunk.isspace():
            self.start = self.line
        if not quoted and chunk in '`"':
            self.names_open = "" if self.names_open == chunk else self.names_open or chunk
        self.buf.append(chunk)
        self.line += chunk.count("\n")

    def _emit(self) -> None:
        raw = "".join(self.buf) + ";"
        if self.names_open:
            raise InputError(
                self.source,
                f"a ';' inside a {self.names_open}…{self.names_open} name: "
                "ksql-migrations ends the statement there; rename it",
                line=self.start,
            )
        if raw[:-1].strip():  # `;;` is an empty statement: nothing to send
            self.out.append(RawStatement(raw.strip(), self.start or self.line, raw))
        self.buf, self.start = [], None
        self.i += 1


def literal(value: str) -> str:
    """A ksqlDB string literal."""
    return "'" + value.replace("'", "''") + "'"


def unquote(text: str) -> str:
    """The value of a '…' literal's body (`''` is one quote)."""
    return text.replace("''", "'")


def sensitive_values(statement: str) -> tuple[str, ...]:
    """Literal values of sensitive WITH properties (passwords …), to redact from messages."""
    return tuple(
        unquote(m.group("value"))
        for m in _PROPERTY.finditer(statement)
        if _hides(m.group("key"), unquote(m.group("value")))
    )


def mask(statement: str) -> str:
    """The statement as it may be shown: sensitive property values replaced by ****."""

    def one(m: re.Match[str]) -> str:
        hidden = _hides(m.group("key"), unquote(m.group("value")))
        return m.group(0)[: m.start("value") - m.start()] + MASK + "'" if hidden else m.group(0)

    return _PROPERTY.sub(one, statement)


def redact(message: str, secrets: tuple[str, ...]) -> str:
    for value in sorted(secrets, key=len, reverse=True):
        message = message.replace(value, MASK)
    return message


def _hides(key: str, value: str) -> bool:
    name = key.strip("'\"`")
    return bool(value) and is_sensitive(name) and not is_placeholder(value)


def preview(text: str, width: int = 80) -> str:
    """The first line of `text`, shortened: statements in messages stay readable."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = len(first) > width or "\n" in text.strip()
    return (first[:width] + " …") if more else first
