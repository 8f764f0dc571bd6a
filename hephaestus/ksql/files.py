"""Migration files on disk: `V<six digits>__<name>.sql`, as Confluent's ksql-migrations names them.

The name rule is ksql-migrations' to the letter: the pattern is searched for in the file
name, not matched against all of it, so `V000001__a.sql.bak` is version 1 there and here (a
backup beside its original is then a duplicate version: an error, not a silent pick).

The version is the number (V000002 is version 2, stored as "2"); the name is the part after
`__` with underscores shown as spaces ("dim_user" -> "dim user"), both as ksql-migrations
records them, so a metadata table written by either tool reads the same.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from hephaestus.errors import HephaestusError, InputError

FILE_PATTERN = re.compile(r"V([0-9]{6})__(.+)\.sql")
MAX_VERSION = 999_999
# Characters ksql-migrations replaces with "_" when it names a new file.
_UNSAFE_IN_NAME = re.compile(r"[\s/\\:*?\"<>|]")


@dataclass(frozen=True)
class MigrationFile:
    version: int
    name: str
    path: Path
    checksum: str  # MD5 hex of the file's bytes, as ksql-migrations computes it

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class Scan:
    """The migrations of one folder, sorted by version; `skipped` did not match the pattern."""

    files: tuple[MigrationFile, ...]
    skipped: tuple[str, ...] = ()

    def by_version(self) -> dict[int, MigrationFile]:
        return {f.version: f for f in self.files}


def checksum(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def scan(folder: Path) -> Scan:
    """Every migration file in `folder`; two files with one version are an error."""
    if not folder.is_dir():
        raise InputError(str(folder), "migrations folder not found (see ksqldb.<cluster>.migrations)")
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    files = [_migration(folder, n) for n in names if FILE_PATTERN.search(n)]
    _check_unique(files)
    skipped = tuple(n for n in names if not FILE_PATTERN.search(n))
    return Scan(tuple(sorted(files, key=lambda f: f.version)), skipped)


def _migration(folder: Path, filename: str) -> MigrationFile:
    match = FILE_PATTERN.search(filename)
    assert match is not None
    version = int(match.group(1))
    if version <= 0:
        raise InputError(str(folder / filename), "migration versions start at 1 (V000001)")
    path = folder / filename
    return MigrationFile(version, match.group(2).replace("_", " "), path, checksum(path))


def _check_unique(files: list[MigrationFile]) -> None:
    seen: dict[int, MigrationFile] = {}
    for f in files:
        if f.version in seen:
            raise InputError(
                str(f.path),
                f"version {f.version} is also used by {seen[f.version].path.name}; "
                "each version must have exactly one file",
            )
        seen[f.version] = f


def file_name(version: int, description: str) -> str:
    """`V000003__add_users.sql` for version 3, "add users"."""
    if not 1 <= version <= MAX_VERSION:
        raise HephaestusError(f"version {version} out of range: it must be 1..{MAX_VERSION} (six digits)")
    if not description.strip():
        raise HephaestusError("a migration needs a description, e.g. `ksql new add_users`")
    return f"V{version:06d}__{_UNSAFE_IN_NAME.sub('_', description.strip())}.sql"


def create(folder: Path, description: str, version: int | None = None) -> Path:
    """A new empty migration file: the next version after the highest one unless given."""
    existing = scan(folder).by_version() if folder.is_dir() else {}
    number = version if version is not None else max(existing, default=0) + 1
    if number in existing:
        raise HephaestusError(f"version {number} already exists: {existing[number].path}")
    path = folder / file_name(number, description)
    folder.mkdir(parents=True, exist_ok=True)
    path.touch(exist_ok=False)
    return path
