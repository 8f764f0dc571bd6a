"""The migrations metadata on a ksqlDB server: read by pull queries, written by INSERT VALUES.

The reading rules are ksql-migrations': the last migrated version is CURRENT when CURRENT is
MIGRATED, otherwise the version before it (which must then be MIGRATED); the applied chain is
walked backwards through each row's `previous`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hephaestus.errors import HephaestusError
from hephaestus.ksql import metadata
from hephaestus.ksql.client import KsqlClient
from hephaestus.ksql.files import MAX_VERSION
from hephaestus.ksql.metadata import NONE_VERSION, Names, State, VersionInfo


class MetadataMissing(HephaestusError):
    """The metadata stream or table does not exist on the server."""


class BrokenChain(HephaestusError):
    """The metadata contradicts itself (a version before CURRENT that is not MIGRATED …)."""


@dataclass
class MetadataStore:
    client: KsqlClient
    names: Names
    _cache: dict[str, VersionInfo] = field(default_factory=dict)

    def sources(self) -> tuple[set[str], set[str]]:
        """Names of the streams and of the tables on the server (upper case, as stored)."""
        entities = self.client.execute("LIST STREAMS;\nLIST TABLES;", idempotent=True)

        def names(kind: str) -> set[str]:
            return {
                str(s.get("name", "")).upper()
                for e in entities
                if e.get("@type") == kind
                for s in e.get(kind, [])
                if isinstance(s, dict)
            }

        return names("streams"), names("tables")

    def require(self) -> None:
        streams, tables = self.sources()
        for name, have, kind in ((self.names.stream, streams, "stream"), (self.names.table, tables, "table")):
            if name.upper() not in have:
                raise MetadataMissing(
                    f"ksqlDB '{self.client.name}': no migrations metadata {kind} "
                    f"{name}; run `hephaestus ksql init` first"
                )

    def current_version(self) -> str:
        rows = self.client.pull(metadata.select_current(self.names))
        return str(rows[0].get("VERSION") or NONE_VERSION) if rows else NONE_VERSION

    def lookup(self, versions: list[str]) -> dict[str, VersionInfo]:
        """The rows for `versions` (one multi-key pull query); absent versions are left out."""
        wanted = [v for v in versions if v not in self._cache]
        if wanted:
            rows = self.client.pull(metadata.select_versions(self.names, wanted))
            self._cache.update({str(i.version): i for i in map(metadata.version_info, rows)})
        return {v: self._cache[v] for v in versions if v in self._cache}

    def fresh(self, version: str) -> VersionInfo | None:
        """Read `version` again (the table may lag the stream by a moment)."""
        self._cache.pop(version, None)
        return self.lookup([version]).get(version)

    def get(self, version: str) -> VersionInfo:
        found = self.lookup([version]).get(version)
        if found is None:
            raise BrokenChain(
                f"ksqlDB '{self.client.name}': version {version} is not in "
                f"{self.names.table} although the metadata refers to it"
            )
        return found

    def record(self, event: VersionInfo) -> None:
        """Two rows per transition, CURRENT first, as ksql-migrations writes them."""
        for key in (metadata.CURRENT, str(event.version)):
            self.client.execute(metadata.insert(self.names, event, key))
        self._cache.pop(str(event.version), None)

    def record_undone(self, undone: VersionInfo, below: VersionInfo | None) -> None:
        """An undo's last transition: CURRENT back to the version below (its row as it stands,
        MIGRATED) or to no version, then the undone version's row. CURRENT first, as always."""
        current = metadata.insert(self.names, below, metadata.CURRENT) if below else None
        self.client.execute(current or metadata.insert_no_current(self.names, undone))
        self.client.execute(metadata.insert(self.names, undone, str(undone.version)))
        self._cache.pop(str(undone.version), None)

    def latest_migrated(self) -> str:
        current = self.current_version()
        if current == NONE_VERSION:
            return current
        info = self.get(current)
        if info.state is State.MIGRATED:
            return current
        if info.previous != NONE_VERSION:  # CURRENT is RUNNING or ERROR: resume from it
            self.require_migrated(info.previous, current)
        return info.previous

    def require_migrated(self, version: str, successor: str) -> VersionInfo:
        info = self.get(version)
        if info.state is not State.MIGRATED:
            raise BrokenChain(
                f"ksqlDB '{self.client.name}': version {successor} follows version "
                f"{version}, whose state is {info.state.value}, not MIGRATED"
            )
        return info

    def chain(self, start: str) -> list[VersionInfo]:
        """The applied versions from `start` back to the first, following `previous`."""
        out: list[VersionInfo] = []
        version = start
        # A chain longer than every possible version means `previous` loops: stop, don't spin.
        while version != NONE_VERSION and len(out) <= MAX_VERSION:
            out.append(self.get(version))
            version = out[-1].previous
        return out
