"""Config values as a connector's plugin reads them (pure, but for reading a secrets file).

- A `${provider:path:key}` placeholder is a `Ref`: Connect resolves it on the worker. It is
  resolved here only when the file behind it can be read here (the workers' secrets file mounted
  beside hephaestus, `clusters.<name>.secrets_file`, or an absolute path that exists); otherwise
  it "could be anything". A file that is here but could not be read (the secrets file named
  in the project and missing, an unreadable one, one without the key) says why (`Ref.unreadable`):
  a bad read must not pass for "lives on the workers" (reconciler.rotation keeps its last
  fingerprint).
- Enums are parsed as each plugin parses them (see `/work/research` notes quoted in each
  function): Debezium's source options trim and ignore case; the Debezium JDBC sink ignores case
  but does not trim, and falls back to a default on no match; Confluent's JDBC sink trims and
  accepts all-lower or all-upper case only.
- Lists and booleans as Kafka's `ConfigDef.parseType` reads them: trimmed, comma-split with the
  whitespace around commas removed (empty entries dropped, as `SinkConnectorConfig` does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from hephaestus.secrets import properties

# Connect's ConfigTransformer pattern: `${provider:path:key}` or `${provider:key}`, anywhere in a value.
_PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
INVALID = "?"  # a value the plugin's validation refuses: the write would fail config/validate


@dataclass(frozen=True)
class Ref:
    """A value holding a placeholder. `value`: what it resolves to here, None when unknown;
    then why, when its file is here: `unreadable` (it could not be read: the file and the OS's
    reason) or `missing` (it was read and lacks the key). Never a value; not compared (the
    same text is the same value)."""

    text: str
    value: str | None = None
    unreadable: str = field(default="", compare=False)
    missing: str = field(default="", compare=False)


Value = str | Ref


def unread(v: Value | None) -> tuple[str, bool]:
    """Why a placeholder's file here gave no value ("" when it did, or is not here at all), and
    whether the file itself could not be read (else it lacks the key)."""
    if not isinstance(v, Ref):
        return "", False
    return v.unreadable or v.missing, bool(v.unreadable)


def known(v: Value | None) -> str | None:
    """The value when it is known here (a literal, or a placeholder resolved), else None."""
    if isinstance(v, Ref):
        return v.value
    return v


def same(a: Value | None, b: Value | None) -> bool:
    """The same value as far as can be told: compared resolved when both are known, else as
    written (one placeholder resolves to one value on the workers)."""
    ka, kb = known(a), known(b)
    if ka is not None and kb is not None:
        return ka == kb
    return a == b


def may_equal(a: Value | None, b: Value | None) -> bool:
    """Could be equal: a placeholder that cannot be resolved here may be anything."""
    ka, kb = known(a), known(b)
    if (a is not None and ka is None) or (b is not None and kb is None):
        return True
    return ka == kb


class Resolver:
    """Resolves `${file:path:key}` placeholders from the secrets files readable here: a path
    that names one of `files` (or its file name, as workers mount it elsewhere), or an absolute
    path that exists here. Other providers are never resolved."""

    def __init__(self, files: Iterable[Path] = ()) -> None:
        self._files = {f.name: f for f in files}  # by name: the workers mount it elsewhere
        # Per path: its pairs, why it could not be read, or None when it is not here.
        self._read: dict[str, dict[str, str] | str | None] = {}

    def __call__(self, raw: str | None) -> Value | None:
        if raw is None or "${" not in raw:
            return raw
        parts: list[str] = []
        end = 0
        for m in _PLACEHOLDER.finditer(raw):
            found = self._lookup(m.group(1), m.group(2), m.group(3))
            if isinstance(found, Ref):
                return replace(found, text=raw)
            parts += [raw[end : m.start()], found]
            end = m.end()
        return Ref(raw, "".join(parts) + raw[end:]) if end else raw

    def _lookup(self, provider: str, path: str | None, key: str) -> str | Ref:
        """The value, or an unknown Ref (its text set by the caller) saying why, when its file is here."""
        if provider != "file":
            return Ref("")
        read = self._properties(path or "")
        if isinstance(read, dict) and key in read:
            return read[key]
        if isinstance(read, dict):  # a file half written, or a key not yet added: the workers lack it too
            return Ref("", missing=f"{shown(Path(path or '').name)} has no key {shown(key)}")
        return Ref("", unreadable=read or "")

    def _properties(self, path: str) -> dict[str, str] | str | None:
        if path not in self._read:
            named = self._files.get(Path(path).name)
            local = named or (Path(path) if Path(path).is_absolute() else None)
            self._read[path] = None if local is None else _read_properties(local, named is not None)
        return self._read[path]


def shown(text: str) -> str:
    """A key or a file name as a message names it: quoted when it holds a line break or another
    control character, so that it cannot forge a line of the run's output (git's keys are not
    checked)."""
    return text if text.isprintable() else repr(text)


def _read_properties(path: Path, named: bool) -> dict[str, str] | str | None:
    """Its pairs; else why not, or None when an absolute path the project does not name is
    absent here (it lives on the workers). The project's own secrets file missing is a fault."""
    try:
        return properties(path.read_text(encoding="utf-8", errors="replace"))
    except (FileNotFoundError, NotADirectoryError) as exc:
        return f"cannot read {str(path)!r}: {exc.strerror}" if named else None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path, which no file has
        return f"cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or type(exc).__name__}"


NO_RESOLVER = Resolver()


def trimmed_enum(raw: Value | None, allowed: Iterable[str], default: str) -> str | None:
    """Debezium's source enums (`SnapshotMode.parse`, `EnumRecommender.validate`): trimmed, case
    ignored; absent gives the default; a value not allowed is INVALID; unknown (a placeholder)
    gives None."""
    if raw is None:
        return default
    value = known(raw)
    if value is None:
        return None
    value = value.strip().lower()
    return value if value in allowed else INVALID


def untrimmed_enum(raw: Value | None, allowed: Iterable[str], default: str, fallback: str) -> str | None:
    """The Debezium JDBC sink's enums (`InsertMode.parse`, `PrimaryKeyMode.parse`): case ignored,
    NOT trimmed, and a value that matches nothing silently becomes `fallback`."""
    if raw is None:
        return default
    value = known(raw)
    if value is None:
        return None
    return value.lower() if value.lower() in allowed else fallback


def strict_enum(raw: Value | None, allowed: Iterable[str], default: str) -> str | None:
    """Confluent's JDBC sink (`EnumValidator`): trimmed, then all-lower or all-upper only."""
    if raw is None:
        return default
    value = known(raw)
    if value is None:
        return None
    value = value.strip()
    ok = value in allowed or (value.isupper() and value.lower() in allowed)
    return value.lower() if ok else INVALID


def boolean(raw: Value | None, default: bool) -> bool | None:
    """Kafka's BOOLEAN: trimmed, `true`/`false` in any case; None when it could be either."""
    if raw is None:
        return default
    value = known(raw)
    if value is None or value.strip().lower() not in ("true", "false"):
        return None
    return value.strip().lower() == "true"


def listed(raw: Value | None) -> frozenset[str] | None:
    """Kafka's LIST as a set: trimmed, split on commas with the space around them, empties
    dropped (absent: empty); None when unknown (a placeholder)."""
    if raw is None:
        return frozenset()
    value = known(raw)
    if value is None:
        return None
    return frozenset(p for p in re.split(r"\s*,\s*", value.strip()) if p)
