"""A migration file compiled into the requests it will send. Pure.

`DEFINE`/`UNDEFINE` and `SET`/`UNSET` are resolved here, in file order, the way
ksql-migrations resolves them: variables and properties live for one file only; variables
given on the command line (`-d name=value`) start each file. What remains is the list of
statements, each with its variables substituted and the request properties in effect.
Everything is checked before anything is sent, so a typo never half-applies a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from hephaestus.errors import InputError
from hephaestus.ksql import insertvalues, sqltext, variables
from hephaestus.ksql.files import MigrationFile

_NAME = sqltext.VARIABLE_NAME
_QUOTED = r"'((?:[^']|'')*)'"
_DEFINE = re.compile(rf"\s*DEFINE\s+({_NAME})\s*=\s*{_QUOTED}\s*;\s*", re.IGNORECASE | re.DOTALL)
_UNDEFINE = re.compile(rf"\s*UNDEFINE\s+({_NAME})\s*;\s*", re.IGNORECASE)
_SET = re.compile(rf"\s*SET\s+{_QUOTED}\s*=\s*{_QUOTED}\s*;\s*", re.IGNORECASE | re.DOTALL)
_UNSET = re.compile(rf"\s*UNSET\s+{_QUOTED}\s*;\s*", re.IGNORECASE | re.DOTALL)
# Statements that read rather than migrate; ksql-migrations refuses them too.
_UNSUPPORTED = ("DESCRIBE", "EXPLAIN", "SELECT", "PRINT", "SHOW", "LIST")
# Statements ksql-migrations sends without the SET properties (its Java client has calls of
# their own for them: insertInto, createConnector/dropConnector, assertTopic/assertSchema); a
# property on them is at best ignored, at worst refused.
_BARE = re.compile(r"(CREATE\s+(SOURCE|SINK)\s+CONNECTOR|DROP\s+CONNECTOR|ASSERT)\b", re.IGNORECASE)
_TIMEOUT = re.compile(r"\bTIMEOUT\s+([0-9]+)\s+(MILLISECONDS?|SECONDS?|MINUTES?|HOURS?|DAYS?)\b", re.IGNORECASE)
_UNIT_S = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}
ASSERT_DEFAULT_S = 1.0  # ksql.assert.topic.default.timeout.ms / ksql.assert.schema.default.timeout.ms


@dataclass(frozen=True)
class Statement:
    text: str  # as sent: variables substituted, comments removed
    line: int
    properties: tuple[tuple[str, str], ...] = ()  # SET in effect: the request's streamsProperties
    raw: str = ""  # the text as the file has it (comments removed): what an ERROR row quotes
    waits_s: float = 0.0  # how long the server may hold the answer (an ASSERT's TIMEOUT)

    @property
    def shown(self) -> str:
        """The text as it may be printed or stored: secrets masked."""
        return sqltext.mask(self.text)


class ParseFailure(InputError):
    """A file that does not parse: one of its statements (`statement`, as cut from the file), or
    the file itself when it cannot be cut into statements (`statement` empty). `reason` is the
    message without the file and line that `str()` starts with."""

    def __init__(self, cause: InputError, statement: str = "") -> None:
        where = cause.file if cause.line is None else f"{cause.file}:{cause.line}"
        self.reason = str(cause).removeprefix(f"{where}: ")
        self.statement = statement
        super().__init__(cause.file, self.reason, line=cause.line)


@dataclass(frozen=True)
class CompiledMigration:
    file: MigrationFile
    statements: tuple[Statement, ...]
    failure: ParseFailure | None = None  # the file does not parse: apply records it as ERROR


@dataclass
class _Scope:
    """Variables and properties while a file is read (one file's lifetime)."""

    variables: dict[str, str]
    properties: dict[str, str] = field(default_factory=dict)


def compile_file(file: MigrationFile, defines: Mapping[str, str]) -> CompiledMigration:
    """The file compiled, or kept with its ParseFailure: ksql-migrations parses a file only when
    it comes to apply it, and records a failure then (RUNNING, then ERROR); so does `apply`."""
    try:
        return compile_migration(file, file.read(), defines)
    except ParseFailure as exc:
        return CompiledMigration(file, (), exc)


def compile_migration(file: MigrationFile, sql: str, defines: Mapping[str, str]) -> CompiledMigration:
    """Raises ParseFailure (an InputError naming the file and line) if the file does not parse."""
    source = str(file.path)
    scope = _Scope(dict(defines))
    try:
        raws = sqltext.split(sql, source)
    except InputError as exc:
        raise ParseFailure(exc) from None
    statements = [s for raw in raws if (s := _parsed(raw, scope, source))]
    return CompiledMigration(file, tuple(statements))


def _parsed(raw: sqltext.RawStatement, scope: _Scope, source: str) -> Statement | None:
    try:
        return _command(raw, scope, source)
    except InputError as exc:
        raise ParseFailure(exc, raw.raw or raw.text) from None


def _command(raw: sqltext.RawStatement, scope: _Scope, source: str) -> Statement | None:
    words = raw.text.upper().split()
    first = words[0].rstrip(";") if words else ""
    handler = _HANDLERS.get(first)
    if handler is not None:
        handler(raw, scope, source)
        return None
    _check_supported(first, words, raw, source)
    text = variables.substitute(raw.text, scope.variables, source, raw.line)
    if first == "INSERT" and insertvalues.is_insert_values(text):
        _check_insert_values(text, raw, source)
        bare = True
    else:
        bare = bool(_BARE.match(text))
    properties = () if bare else tuple(sorted(scope.properties.items()))
    return Statement(text, raw.line, properties, raw.raw or raw.text, _waits(text) if first == "ASSERT" else 0.0)


def _check_insert_values(text: str, raw: sqltext.RawStatement, source: str) -> None:
    """ksql-migrations parses an INSERT … VALUES before it runs anything (see insertvalues)."""
    try:
        insertvalues.check(text)
    except insertvalues.Malformed as exc:
        raise InputError(
            source, f"invalid INSERT VALUES statement: {exc}: {sqltext.preview(raw.text)}", line=raw.line
        ) from None


def _waits(text: str) -> float:
    found = _TIMEOUT.search(text)
    return int(found.group(1)) * _UNIT_S[found.group(2).upper().rstrip("S")] if found else ASSERT_DEFAULT_S


def _match(pattern: re.Pattern[str], raw: sqltext.RawStatement, source: str) -> re.Match[str]:
    match = pattern.fullmatch(raw.text)
    if match is None:
        keyword = raw.text.split()[0].upper()
        raise InputError(source, f"invalid {keyword} statement: {sqltext.preview(raw.text)}", line=raw.line)
    return match


def _value(text: str, scope: _Scope) -> str:
    """A '…' literal's value: its variables substituted as in any string, then unquoted."""
    return sqltext.unquote(variables.in_string(text, scope.variables))


def _define(raw: sqltext.RawStatement, scope: _Scope, source: str) -> None:
    match = _match(_DEFINE, raw, source)
    scope.variables[match.group(1).lower()] = _value(match.group(2), scope)


def _undefine(raw: sqltext.RawStatement, scope: _Scope, source: str) -> None:
    scope.variables.pop(_match(_UNDEFINE, raw, source).group(1).lower(), None)


def _set(raw: sqltext.RawStatement, scope: _Scope, source: str) -> None:
    match = _match(_SET, raw, source)
    scope.properties[_value(match.group(1), scope)] = _value(match.group(2), scope)


def _unset(raw: sqltext.RawStatement, scope: _Scope, source: str) -> None:
    scope.properties.pop(_value(_match(_UNSET, raw, source).group(1), scope), None)


_HANDLERS = {"DEFINE": _define, "UNDEFINE": _undefine, "SET": _set, "UNSET": _unset}


def _check_supported(first: str, words: list[str], raw: sqltext.RawStatement, source: str) -> None:
    """ksql-migrations' words (CommandParser.validateSupportedStatementType), as the ERROR row
    records them after "Failed to parse sql: <statement>. Error: "; file and line say where."""
    if first in _UNSUPPORTED or words[:2] == ["RUN", "SCRIPT"]:
        what = "RUN SCRIPT" if first == "RUN" else first
        raise InputError(source, f"'{what}' statements are not supported.", line=raw.line)
