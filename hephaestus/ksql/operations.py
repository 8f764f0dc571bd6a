"""`ksql init`, `ksql info` and `ksql validate` against one ksqlDB cluster.

Each returns a frozen result; the CLI renders it. Nothing here prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hephaestus.errors import HephaestusError
from hephaestus.ksql import metadata
from hephaestus.ksql.client import KsqlClient
from hephaestus.ksql.files import MigrationFile, Scan
from hephaestus.ksql.metadata import NONE_VERSION, Names, State, VersionInfo
from hephaestus.ksql.store import MetadataStore

_VERSION = re.compile(r"v?([0-9]+)\.([0-9]+)\.")


class UnsupportedServer(HephaestusError):
    pass


@dataclass(frozen=True)
class InitResult:
    cluster: str
    server_version: str
    names: Names
    created: tuple[str, ...]
    existed: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class InfoRow:
    version: int
    name: str
    state: State
    previous: str = "N/A"
    started_on: str = ""
    completed_on: str = ""
    error_reason: str = metadata.NO_ERROR
    file: str = "ok"  # ok | changed (checksum differs) | missing (no local file)
    undo_file: str | None = None  # its U<version>__<name>.sql, when there is one


@dataclass(frozen=True)
class InfoResult:
    cluster: str
    current: str
    rows: tuple[InfoRow, ...]


@dataclass(frozen=True)
class ValidateResult:
    cluster: str
    checked: tuple[int, ...]
    problems: tuple[str, ...]
    latest: str = NONE_VERSION  # the last migrated version

    @property
    def ok(self) -> bool:
        return not self.problems


def server_warnings(version: str) -> tuple[str, ...]:
    """ksql-migrations' minimum (Confluent Platform 6.0, standalone ksqlDB 0.10) is an error;
    pull queries over HTTP/1.1 (ksqlDB 0.24, Confluent Platform 7.2) only a warning."""
    match = _VERSION.match(version)
    if match is None:
        return (f"cannot parse ksqlDB server version {version!r}; proceeding anyway",)
    major, minor = int(match.group(1)), int(match.group(2))
    platform = major >= 4  # Confluent Platform numbers its ksqlDB 5.x, 6.x, 7.x
    if (major, minor) < ((6, 0) if platform else (0, 10)):
        raise UnsupportedServer(
            f"ksqlDB {version} is too old for ksql-migrations metadata (needs Confluent Platform 6.0+ or ksqlDB 0.10+)"
        )
    if (major, minor) < ((7, 2) if platform else (0, 24)):
        return (
            f"ksqlDB {version} may serve /query-stream over HTTP/2 only; `ksql apply`, `info` and "
            "`validate` need ksqlDB 0.24+ (pull queries over HTTP/1.1)",
        )
    return ()


def init(client: KsqlClient, names: Names) -> InitResult:
    """Create the metadata stream and table unless they exist (idempotent)."""
    server = client.info()
    warnings = server_warnings(server.version)
    if not client.healthy():  # a warning only: ksql-migrations does not check it at all
        warnings += ("the server reports itself unhealthy (GET /healthcheck); statements may fail",)
    full = names.with_topics(server.service_id)
    created, existed = _create_missing(client, full)
    return InitResult(client.name, server.version, full, created, existed, warnings)


def _create_missing(client: KsqlClient, names: Names) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(created, already there): the stream first, as the table is built from it."""
    streams, tables = MetadataStore(client, names).sources()
    created: list[str] = []
    for name, have, sql in (
        (names.stream, streams, metadata.create_stream(names)),
        (names.table, tables, metadata.create_table(names)),
    ):
        if name.upper() not in have:
            client.execute(sql)
            created.append(name)
    return tuple(created), tuple(n for n in (names.stream, names.table) if n not in created)


def validate_chain(store: MetadataStore, scan: Scan) -> ValidateResult:
    """Walk the applied versions back from the last migrated one: each must have its file,
    unchanged (MD5), and every version before the last must be MIGRATED."""
    local = scan.by_version()
    checked: list[int] = []
    problems: list[str] = []
    successor = ""
    latest = store.latest_migrated()
    for info in store.chain(latest):
        if successor and info.state is not State.MIGRATED:
            problems.append(f"version {info.version} is {info.state.value}, yet version {successor} follows it")
        problems += _file_problems(info, local.get(info.version))
        checked.append(info.version)
        successor = str(info.version)
    return ValidateResult(store.client.name, tuple(checked), tuple(problems), latest)


def _file_problems(info: VersionInfo, local: MigrationFile | None) -> list[str]:
    if local is None:
        return [
            f"version {info.version} ({info.name}) is {info.state.value} on the server but has no "
            "migration file locally"
        ]
    if local.checksum != info.checksum:
        return [
            f"version {info.version} ({info.name}): {local.path.name} changed after it was applied "
            f"(checksum applied {info.checksum}, now {local.checksum})"
        ]
    return []


def validate(client: KsqlClient, names: Names, scan: Scan) -> ValidateResult:
    store = MetadataStore(client, names)
    store.require()
    return validate_chain(store, scan)


def info(client: KsqlClient, names: Names, scan: Scan) -> InfoResult:
    """Every local version with its state (PENDING when never applied), plus applied versions
    whose file is gone."""
    store = MetadataStore(client, names)
    store.require()
    current = store.current_version()
    local = scan.by_version()
    known = {i.version: i for i in store.lookup([str(v) for v in local]).values()}
    if current != NONE_VERSION:
        known.update({i.version: i for i in store.chain(current)})
    rows = [_row(v, known.get(v), local) for v in sorted(set(local) | set(known))]
    return InfoResult(client.name, current, tuple(rows))


def _row(version: int, found: VersionInfo | None, local: dict[int, MigrationFile]) -> InfoRow:
    file = local.get(version)
    undo = file.undo.name if file and file.undo else None
    if found is None:
        return InfoRow(version, file.name if file else "", State.PENDING, undo_file=undo)
    # An undone version's file may change: it is pending again, the next apply runs it as it is.
    changed = file is not None and file.checksum != found.checksum and found.state is not State.UNDONE
    status = "missing" if file is None else "changed" if changed else "ok"
    return InfoRow(
        version,
        found.name,
        found.state,
        found.previous,
        found.started_on,
        found.completed_on,
        found.error_reason,
        status,
        undo,
    )
