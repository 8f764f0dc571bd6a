"""ksqlDB SQL as text: split a file into statements, substitute `${var}`, mask secrets. Pure.

Splitting follows ksql-migrations: a `;` ends a statement unless it is inside a '…' string
(`''` escapes a quote) or a `…` identifier; `-- …` and `/* … */` comments are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hephaestus.errors import InputError
from hephaestus.secrets import MASK, is_placeholder, is_sensitive

# ksqlDB variable names; `$${x}` is an escape the server resolves, so it is left alone here.
VARIABLE_NAME = r"[A-Za-z_][A-Za-z0-9_@]*"
_REFERENCE = re.compile(r"(?<!\$)\$\{(" + VARIABLE_NAME + r")\}")
# `'key' = 'value'` pairs of a WITH clause; keys may be quoted with ', " or ` or bare.
_PROPERTY = re.compile(r"""(?P<key>'(?:[^']|'')*'|"[^"]*"|`[^`]*`|[A-Za-z_][\w.]*)\s*=\s*'(?P<value>(?:[^']|'')*)'""")


@dataclass(frozen=True)
class RawStatement:
    text: str  # comments removed, trimmed, ending with ";"
    line: int  # 1-based line of the file where the statement starts


def split(sql: str, source: str) -> list[RawStatement]:
    """The statements of `sql`; `source` names the file in errors."""
    return _Splitter(sql, source).run()


class _Splitter:
    def __init__(self, sql: str, source: str) -> None:
        self.sql, self.source = sql, source
        self.i, self.line = 0, 1
        self.start: int | None = None
        self.buf: list[str] = []
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
            self.i = len(sql) if end < 0 else end  # the newline itself is kept: it separates tokens
        elif sql.startswith("/*", i):
            self._block_comment()
        elif sql[i] in "'`":
            self._quoted(sql[i])
        elif sql[i] == ";":
            self._emit()
        else:
            self._take(sql[i])
            self.i += 1

    def _block_comment(self) -> None:
        end = self.sql.find("*/", self.i + 2)
        if end < 0:
            raise InputError(self.source, "unterminated /* comment", line=self.line)
        newlines = self.sql.count("\n", self.i, end)
        self.buf.append("\n" * newlines or " ")
        self.line += newlines
        self.i = end + 2

    def _quoted(self, quote: str) -> None:
        end = self.sql.find(quote, self.i + 1)
        if end < 0:
            what = "string" if quote == "'" else "quoted identifier"
            raise InputError(self.source, f"unterminated {what} starting with {quote}", line=self.line)
        self._take(self.sql[self.i:end + 1])
        self.i = end + 1

    def _take(self, chunk: str) -> None:
        if self.start is None and not chunk.isspace():
            self.start = self.line
        self.buf.append(chunk)
        self.line += chunk.count("\n")

    def _emit(self) -> None:
        text = "".join(self.buf).strip()
        if text:  # `;;` is an empty statement: nothing to send
            self.out.append(RawStatement(text + ";", self.start or self.line))
        self.buf, self.start = [], None
        self.i += 1


def substitute(text: str, variables: Mapping[str, str]) -> str:
    """Replace `${name}` (case-insensitive) by its value; unknown names stay as written, as
    ksqlDB leaves them (Connect placeholders like `${file:…}` are not variables)."""
    return _REFERENCE.sub(lambda m: variables.get(m.group(1).lower(), m.group(0)), text)


def literal(value: str) -> str:
    """A ksqlDB string literal."""
    return "'" + value.replace("'", "''") + "'"


def unquote(text: str) -> str:
    """The value of a '…' literal's body (`''` is one quote)."""
    return text.replace("''", "'")


def sensitive_values(statement: str) -> tuple[str, ...]:
    """Literal values of sensitive WITH properties (passwords …), to redact from messages."""
    return tuple(unquote(m.group("value")) for m in _PROPERTY.finditer(statement)
                 if _hides(m.group("key"), unquote(m.group("value"))))


def mask(statement: str) -> str:
    """The statement as it may be shown: sensitive property values replaced by ****."""
    def one(m: re.Match[str]) -> str:
        hidden = _hides(m.group("key"), unquote(m.group("value")))
        return m.group(0)[:m.start("value") - m.start()] + MASK + "'" if hidden else m.group(0)
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
