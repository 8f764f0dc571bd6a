"""Migration files on disk: `V<six digits>__<name>.sql`, as Confluent's ksql-migrations names them.

The name rule is ksql-migrations' to the letter: the pattern is searched for in the file
name, not matched against all of it, so `V000001__a.sql.bak` is version 1 there and here (a
backup beside its original is then a duplicate version: an error, not a silent pick).

The version is the number (V000002 is version 2, stored as "2"); the name is the part after
`__` with underscores shown as spaces ("dim_user" -> "dim user"), both as ksql-migrations
records them, so a metadata table written by either tool reads the same.

Beside a `V<version>__<name>.sql` may stand its undo file `U<version>__<name>.sql`, as Flyway
names them (same version, same name; ksql-migrations has none): it undoes exactly that
version's changes (`ksql undo`). It must match its V file's name in full: an undo file without
its V file, or named otherwise, is an error, so a typo never leaves a version without its undo.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from hephaestus.errors import HephaestusError, InputError

FILE_PATTERN = re.compile(r"V([0-9]{6})__(.+)\.sql")
UNDO_PATTERN = re.compile(r"U([0-9]{6})__(.+)\.sql")
MAX_VERSION = 999_999
# Characters ksql-migrations replaces with "_" when it names a new file.
_UNSAFE_IN_NAME = re.compile(r"[\s/\\:*?\"<>|]")


@dataclass(frozen=True)
class MigrationFile:
    version: int
    name: str
    path: Path
    checksum: str  # MD5 hex of the file's bytes, as ksql-migrations computes it
    undo: Path | None = None  # its U<version>__<name>.sql, if there is one

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def undo_file(self) -> MigrationFile | None:
        """The undo file as a migration of its own: what `ksql undo` compiles and runs."""
        if self.undo is None:
            return None
        return MigrationFile(self.version, self.name, self.undo, checksum(self.undo))


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
    undos = [n for n in names if not FILE_PATTERN.search(n) and UNDO_PATTERN.fullmatch(n)]
    files = _with_undo(folder, files, undos)
    skipped = tuple(n for n in names if not FILE_PATTERN.search(n) and n not in undos)
    return Scan(tuple(sorted(files, key=lambda f: f.version)), skipped)


def _migration(folder: Path, filename: str) -> MigrationFile:
    match = FILE_PATTERN.search(filename)
    assert match is not None
    version = int(match.group(1))
    if version <= 0:
        raise InputError(str(folder / filename), "migration versions start at 1 (V000001)")
    path = folder / filename
    return MigrationFile(version, match.group(2).replace("_", " "), path, checksum(path))


def undo_name(file: MigrationFile) -> str:
    """`U000003__add_users.sql` for `V000003__add_users.sql`: the V file's name with U for V."""
    match = FILE_PATTERN.search(file.path.name)
    assert match is not None
    return f"U{file.version:06d}__{match.group(2)}.sql"


def _with_undo(folder: Path, files: list[MigrationFile], undos: list[str]) -> list[MigrationFile]:
    by_version = {f.version: f for f in files}
    out = dict(by_version)
    for name in undos:
        match = UNDO_PATTERN.fullmatch(name)
        assert match is not None
        version = int(match.group(1))
        found = by_version.get(version)
        if found is None:
            raise InputError(
                str(folder / name), f"undo file without a migration: no V{version:06d}__{match.group(2)}.sql beside it"
            )
        if undo_name(found) != name:
            raise InputError(
                str(folder / name),
                f"an undo file is named like its migration: {undo_name(found)} (for {found.path.name})",
            )
        out[version] = replace(found, undo=folder / name)
    return list(out.values())


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


def create(folder: Path, description: str, version: int | None = None, *, undo: bool = False) -> Path:
    """A new empty migration file: the next version after the highest one unless given; with
    `undo`, its empty undo file beside it (`undo_path`)."""
    existing = scan(folder).by_version() if folder.is_dir() else {}
    number = version if version is not None else max(existing, default=0) + 1
    if number in existing:
        raise HephaestusError(f"version {number} already exists: {existing[number].path}")
    path = folder / file_name(number, description)
    folder.mkdir(parents=True, exist_ok=True)
    for created in (path, undo_path(path)) if undo else (path,):
        created.touch(exist_ok=False)
    return path


def undo_path(path: Path) -> Path:
    """Where the undo file of the migration file at `path` goes (created by `ksql new --undo`)."""
    return path.with_name("U" + path.name[1:])
