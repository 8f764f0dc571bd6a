"""ksqlDB variables: `-d name=value`, and `${name}` substituted the way ksqlDB does it. Pure.

The rules are ksqlDB's (`VariableSubstitutor`, `ParserUtil.sanitize`, `VariableParser`), as
Confluent's ksql-migrations applies them:

* Inside a '…' string a defined variable is replaced by its value with every `'` doubled, so
  a value cannot end the string; an undefined one stays as written.
* Outside strings the value must be an identifier (`_id_`, `"Id"`, `` `id` ``), put in as it
  is, or a literal: a '…' string (its quotes doubled inside, so `'t1', value_format='AVRO'`
  stays one string), a number, `true` or `false`. Anything else is refused, as is an undefined
  variable there: no value can smuggle in SQL.
* `$${name}` is an escape: it becomes `${name}`, not substituted.

One deliberate difference: ksqlDB knows from its grammar whether `${x}` stands for an
identifier or a literal; without that parser hephaestus accepts either wherever a variable
stands outside a string (both are single tokens, so neither can inject).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from hephaestus.errors import HephaestusError, InputError
from hephaestus.ksql.sqltext import VARIABLE_NAME

_TOKEN = re.compile(r"(?P<escape>\$\$\{)|\$\{(?P<name>" + VARIABLE_NAME + r")\}")
_IDENTIFIER = re.compile(VARIABLE_NAME)
# Java's Long.parseLong, Double.parseDouble (finite) and BigDecimal all read these.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class VariableError(InputError):
    """A `${name}` that cannot be substituted: undefined outside a string, or a value that is
    neither an identifier nor a literal."""


def parse_defines(pairs: tuple[str, ...]) -> dict[str, str]:
    """`-d name=value` options (names case-insensitive, as ksqlDB documents them).

    As ksqlDB's VariableParser.getVariables (ksqldb-common/src/main/java/io/confluent/ksql/
    parser/VariableParser.java, which ksql-migrations' apply calls): the pair is cut at every
    `=` (Java's split) and must give exactly two parts, so the value may hold quotes, commas
    and spaces, taken as they are, but no `=` (`a=b=c`, `a=` and `novalue` are refused). A
    name must be one `${…}` can reference, and given once."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, value = _pair(pair)
        if name.lower() in out:
            raise HephaestusError(f"--define {pair!r}: variable {name!r} is defined twice")
        out[name.lower()] = value
    return out


def _pair(pair: str) -> tuple[str, str]:
    name, _, value = pair.partition("=")
    if "=" in value:
        raise HephaestusError(
            f"--define {pair!r}: the value holds '=', which ksql-migrations refuses too (it cuts "
            f"NAME=VALUE at every '='); put it in the file instead: DEFINE {name or 'name'} = '…';"
        )
    if not value:
        raise HephaestusError(f"--define {pair!r}: variables must be defined as name=value, with a value")
    if not _IDENTIFIER.fullmatch(name):
        raise HephaestusError(f"--define {pair!r}: {name!r} is not a variable name like my_var")
    return name, value


def in_string(body: str, variables: Mapping[str, str]) -> str:
    """The body of a '…' string with its defined variables substituted (quotes doubled)."""

    def one(m: re.Match[str]) -> str:
        if m.group("escape"):
            return "${"
        value = variables.get(m.group("name").lower())
        return m.group(0) if value is None else value.replace("'", "''")

    return _TOKEN.sub(one, body)


def substitute(text: str, variables: Mapping[str, str], source: str, line: int) -> str:
    """A statement with every variable substituted: strings, quoted names and the rest each by
    their rule (see the module)."""
    out: list[str] = []
    for chunk, kind in _chunks(text):
        if kind == "'":
            out.append("'" + in_string(chunk[1:-1], variables) + "'")
        elif kind in ("`", '"'):
            out.append(chunk)  # a quoted name is a name: nothing in it is a variable
        else:
            out.append(_TOKEN.sub(lambda m: _bare(m, variables, source, line), chunk))
    return "".join(out)


def _chunks(text: str) -> list[tuple[str, str]]:
    """`text` cut into '…' strings, `…`/"…" names and the plain text between them."""
    pieces = re.findall(r"('(?:[^']|'')*'|`[^`]*`|\"[^\"]*\"|[^'`\"]+|['`\"])", text)
    return [(p, p[0] if p[0] in "'`\"" and len(p) > 1 else "") for p in pieces]


def _bare(m: re.Match[str], variables: Mapping[str, str], source: str, line: int) -> str:
    if m.group("escape"):
        return "${"
    name = m.group("name")
    value = variables.get(name.lower())
    if value is None:
        raise VariableError(
            source,
            f"${{{name}}} is not defined: outside a '…' string a variable must be defined (DEFINE, or -d name=value)",
            line=line,
        )
    return _token(value, name, source, line)


def _token(value: str, name: str, source: str, line: int) -> str:
    inner = value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in '`"' else value
    if _IDENTIFIER.fullmatch(inner):
        return value
    if len(value) > 1 and value[0] == value[-1] == "'":
        return "'" + value[1:-1].replace("''", "'").replace("'", "''") + "'"
    if _NUMBER.fullmatch(value):  # (true and false read as identifiers above: they go in as they are too)
        return value
    raise VariableError(
        source,
        f"${{{name}}} = {value!r} is neither an identifier nor a literal ('text', a "
        "number, true, false): ksqlDB refuses it there",
        line=line,
    )
