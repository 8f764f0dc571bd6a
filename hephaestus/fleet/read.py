"""The fleet as it is, read once and shared (edge: Connect, PostgreSQL): every cluster's live
connectors, git's connector files, and the replication slots of the project's databases,
judged. `status`, the exporter and `slots` read from here; a check reads each cluster and each
database once, whoever asks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hephaestus import pg
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect.models import LiveConnector
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.fleet.desired import load_desired
from hephaestus.fleet.slots import Judged, Limits, Slot, judge, owners, uses
from hephaestus.project import Cluster, Project

_SLOTS = """
SELECT slot_name, plugin, active,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       restart_lsn)::bigint,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                       confirmed_flush_lsn)::bigint,
       to_jsonb(s) ->> 'wal_status', current_database(), pg_wal_lsn_diff(confirmed_flush_lsn, '0/0')::bigint
FROM pg_replication_slots s WHERE slot_type = 'logical' AND database = current_database() ORDER BY slot_name
"""


Listings = Mapping[str, Mapping[str, LiveConnector] | HephaestusError]


def listings(
    clusters: Sequence[Cluster], *, client_factory: ClientFactory = connect_client, glance: bool = False
) -> dict[str, dict[str, LiveConnector] | HephaestusError]:
    """One Connect listing per cluster (what failed kept as the error), shared by status and
    slots so that a check lists each cluster once. `glance`: asked once, no retry and no wait
    for a starting worker (the exporter: a cluster that does not answer now is down now). The
    clusters are asked side by side (LISTINGS at a time): a silent one delays no other."""

    def listing(cluster: Cluster) -> dict[str, LiveConnector] | HephaestusError:
        try:
            with client_factory(cluster) as client:
                return client.glance() if glance else client.fleet()
        except HephaestusError as exc:
            return exc

    if len(clusters) < 2:  # nothing to overlap: no thread
        return {c.name: listing(c) for c in clusters}
    with ThreadPoolExecutor(max_workers=min(LISTINGS, len(clusters)), thread_name_prefix="listing") as pool:
        return dict(zip((c.name for c in clusters), pool.map(listing, clusters), strict=True))


LISTINGS = 4  # Connect clusters asked at once


@dataclass(frozen=True)
class SlotReport:
    judged: tuple[Judged, ...]
    errors: tuple[str, ...]  # a database or cluster that could not be read

    @property
    def problems(self) -> tuple[Judged, ...]:
        return tuple(j for j in self.judged if j.verdict != "ok")


def read_slots(dsn: str, database: str) -> list[Slot]:
    with pg.session(dsn, f"database {database}", application="hephaestus slots") as conn:
        rows = conn.execute(_SLOTS).fetchall()
    return [
        Slot(
            database,
            str(r[0]),
            str(r[1]),
            bool(r[2]),
            _int(r[3]),
            _int(r[4]),
            None if r[5] is None else str(r[5]),
            str(r[6]),
            _int(r[7]),
        )
        for r in rows
    ]


def _int(value: object) -> int | None:
    return None if value is None else max(int(str(value)), 0)


Configs = tuple[dict[str, dict[str, dict[str, str]]], list[str]]  # configs by cluster, what failed


def live_configs(project: Project, *, client_factory: ClientFactory = connect_client) -> Configs:
    """Every cluster's live configs (one listing each): ownership is judged on the whole fleet."""
    return configs_of(listings(list(project.clusters.values()), client_factory=client_factory))


def configs_of(listed: Listings) -> Configs:
    """The configs of listings already made, and the clusters that could not be listed."""
    configs = {
        name: {n: c.config for n, c in found.items()} for name, found in listed.items() if isinstance(found, Mapping)
    }
    errors = [f"cluster {name}: {found}" for name, found in listed.items() if isinstance(found, HephaestusError)]
    return configs, errors


def git_configs(project: Project) -> tuple[list[tuple[str, dict[str, str]]], list[str]]:
    """Every connector file of every cluster (custom ones too), wherever its name falls: a
    source declared in git may not run yet, and will use its slot when it does."""
    found: list[tuple[str, dict[str, str]]] = []
    errors: list[str] = []
    for cluster in project.clusters.values():
        every = Cluster(cluster.name, cluster.url, cluster.connectors, (), cluster.helm_values)  # no select: all files
        try:
            desired = load_desired(every, include_custom=True) if cluster.connectors.is_dir() else {}
        except (InputError, InputErrors) as exc:
            errors.append(f"connector files of cluster {cluster.name}: {str(exc).splitlines()[0]}")
            continue
        found += [(f"{cluster.name}/{n} (in git)", dict(d.config)) for n, d in sorted(desired.items())]
    return found, errors


Read = tuple[dict[str, list[Slot]], list[str]]  # slots by database, and what could not be read


def read_all(project: Project, databases: Sequence[str] = ()) -> Read:
    """The slots of the project's databases (or of `databases`): one query per database."""
    found: dict[str, list[Slot]] = {}
    errors: list[str] = []
    for database in databases or sorted(project.databases):
        try:
            found[database] = read_slots(project.dsn(database, "slots"), database)
        except HephaestusError as exc:
            errors.append(str(exc))
    return found, errors


def report(
    project: Project,
    databases: Sequence[str] = (),
    listed: Configs | None = None,
    read: Read | None = None,
) -> SlotReport:
    """Every logical slot of the project's databases (or of `databases`), judged; `listed` and
    `read`: the clusters' configs and the slots when already read (the exporter reads each
    once per check). A cluster that cannot be listed makes ownership unknowable: no slot is
    then called an orphan."""
    configs, errors = live_configs(project) if listed is None else (listed[0], list(listed[1]))
    declared, unreadable = git_configs(project)
    found, unread = read_all(project, databases) if read is None else read
    errors += unread + unreadable
    live = [(f"{c}/{n}", config) for c, by_name in sorted(configs.items()) for n, config in sorted(by_name.items())]
    known = uses([*live, *declared], project.resolver())
    limits = Limits.of(project.policy)
    judged = [_unknowable(judge(s, owners(s, known), limits), bool(errors)) for slots in found.values() for s in slots]
    return SlotReport(tuple(judged), tuple(errors))


def _unknowable(j: Judged, blind: bool) -> Judged:
    if blind and j.verdict == "orphan":
        return Judged(
            j.slot,
            j.owner,
            "inactive" if not j.slot.active else "ok",
            j.reason.replace(
                "no connector could use it", "no connector of the readable clusters and files could use it"
            ),
        )
    return j
