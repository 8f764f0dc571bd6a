"""The ksqlDB stub's reading of SQL text: identifiers, statements, lists, literals (helpers
of tests/ksqldb_stub.py, which says where each behaviour comes from)."""

from __future__ import annotations

import re
from typing import Any

ID = r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"


class StubError(Exception):
    def __init__(self, status: int, code: int, message: str, kind: str = "statement_error") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.kind = status, code, message, kind


def ident(text: str) -> str:
    """ksqlDB upper-cases unquoted identifiers; back-quoted ones keep their case."""
    return text[1:-1] if text.startswith("`") else text.upper()


def split(sql: str) -> list[str]:
    """Statements of a request: `;` outside '…' strings and `…` identifiers."""
    return [part + ";" for part in top_level(sql, ";")]


def top_level(text: str, sep: str = ",", angles: bool = False) -> list[str]:
    """Items separated by `sep` outside quotes and (…) (and <…> of STRUCT<…> when `angles`)."""
    opening, closing = ("(<", ")>") if angles else ("(", ")")
    parts, buf, depth, quote = [], [], 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'`":
            quote = ch
        elif ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    return [p for p in [*parts, "".join(buf).strip()] if p]


def block(text: str) -> tuple[str, str]:
    """(inside of the leading parenthesis, rest after it)."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[1:i], text[i + 1 :].strip()
    raise StubError(400, 40001, "line 1:1: mismatched input: unbalanced parenthesis")


def value(text: str) -> Any:
    text = text.strip()
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    if text.upper() in ("NULL", "TRUE", "FALSE"):
        return {"NULL": None, "TRUE": True, "FALSE": False}[text.upper()]
    try:
        return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    except ValueError:
        raise StubError(400, 40001, f"Failed to prepare statement: unsupported value {text}") from None
