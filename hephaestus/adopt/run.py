"""`hephaestus import`: adopt live connectors into git and the ownership record (edge).

A fleet made by hand (or by the reference's jobs) comes in without a restart: each live
config is written as the generator lays files out (`connectors/<cluster>/<type>/<name>.json`,
sorted keys, strings, no `name` inside the config), so the next reconcile plans zero writes.
A connector this deployment owns but git lacks is written too (else the next reconcile would
delete it). Every connector is checked before anything is written: an unsafe name, an unknown
type or a plaintext secret (a PASSWORD-typed or secret-named key, or a credential by its shape
in any value: a URL's user info, an Oracle `user/pw@`, a Bearer token, a key) stops the whole
import with the connector and key named. `--secret KEY=PLACEHOLDER` puts a `${…}` placeholder
in git instead, only where KEY holds a credential, and never for connectors whose values
differ (one placeholder would point them all at one secret). An import passes the one gate
(it writes nothing to Connect: its items have no effect on data) and is audited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient, LiveConnector
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.fleet.desired import GENERATED, check_name, load_desired
from hephaestus.generator.output import render_document, write_files
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.plan import is_ksqldb_managed
from hephaestus.safety.gate import Cleared, Item, clear, judge
from hephaestus.secrets import plaintext
from hephaestus.state import ownership
from hephaestus.state.backend import connect_lock, journal_for, ownership_store
from hephaestus.state.lock import new_run_id


@dataclass(frozen=True)
class Imported:
    name: str
    how: str  # "write <path>", "in git", "owned already"
    document: Mapping[str, object] = field(default_factory=dict, hash=False)  # what is written
    # key -> the live value a --secret placeholder replaced (kept in memory only, to check that
    # one placeholder never stands for two values)
    replaced: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False, repr=False)
    path: str = ""  # the file it is written to
    owned: bool = False  # owned already (claimed before this import)


@dataclass(frozen=True)
class ClusterImport:
    cluster: str
    items: tuple[Imported, ...]


def plan_import(
    client: ConnectClient,
    cluster: Cluster,
    globs: Sequence[str],
    owned: Mapping[str, object],
    secrets: Mapping[str, str],
) -> ClusterImport:
    """What an import of this cluster would do; raises InputErrors (nothing written) on any refusal."""
    # Every file in git is checked too; a team coming in may have no folder yet.
    in_git = set(load_desired(cluster, include_custom=True)) if cluster.connectors.is_dir() else set()
    fleet = client.fleet()
    chosen = sorted(
        n
        for n in fleet
        if cluster.selects(n) and not is_ksqldb_managed(n) and (not globs or any(fnmatchcase(n, g) for g in globs))
    )
    items, errors = [], []
    for name in chosen:
        if name in in_git:
            items.append(Imported(name, "in git" if name not in owned else "owned already"))
            continue
        try:
            items.append(_to_file(client, cluster, fleet[name], secrets, owned=name in owned))
        except InputError as exc:
            errors.append(exc)
    errors += _merged(cluster, [i for i in items if i.document], secrets)
    if errors:
        raise InputErrors(errors)
    return ClusterImport(cluster.name, tuple(items))


def _merged(cluster: Cluster, items: Sequence[Imported], secrets: Mapping[str, str]) -> list[InputError]:
    """A --secret placeholder stands for one value: connectors whose values of that key differ
    cannot all get it (their sinks would all point at one database, one password)."""
    errors = []
    for key in sorted(secrets):
        values = {i.replaced.get(key) for i in items if key in i.replaced}
        if len(values) > 1:
            names = sorted(i.name for i in items if key in i.replaced)
            errors.append(
                InputError(
                    f"--secret {key}",
                    f"{len(names)} connectors of cluster {cluster.name} hold different values of {key} "
                    f"({', '.join(names[:3])}{', …' if len(names) > 3 else ''}): one placeholder would give them all "
                    "one value; import them one by one (--select) with a placeholder each",
                )
            )
    return errors


def _to_file(
    client: ConnectClient, cluster: Cluster, c: LiveConnector, secrets: Mapping[str, str], owned: bool = False
) -> Imported:
    where = f"connector {c.name!r} on cluster {cluster.name}"
    if c.type not in GENERATED:
        raise InputError(where, f"Connect reports type {c.type!r}: only source and sink connectors are imported")
    check_name(Path(where), c.name)  # named by repr: a name from a cluster may hold control characters
    path = cluster.connectors / c.type / f"{c.name}.json"
    config = {k: _safe(where, k, v, secrets, client, c.config) for k, v in sorted(c.config.items()) if k != "name"}
    replaced = {k: c.config[k] for k, v in config.items() if v != c.config[k]}
    how = f"write {path}" + (" (owned, absent from git)" if owned else "")
    return Imported(c.name, how, {"name": c.name, "config": config, **_state(c)}, replaced, str(path), owned)


def _state(c: LiveConnector) -> dict[str, str]:
    """A file without `state` means running: a connector paused or stopped live keeps its state
    in git, so the reconcile after an import plans nothing. FAILED/UNASSIGNED are health."""
    return {"state": c.state.lower()} if c.state in ("PAUSED", "STOPPED") else {}


def _safe(
    where: str, key: str, value: str, secrets: Mapping[str, str], client: ConnectClient, config: Mapping[str, str]
) -> str:
    """The value for git: a placeholder as it is live; a credential (the one detector's verdict:
    by its key, or by its shape in the value) only as the placeholder --secret names for that
    key; anything else as it is."""
    why = plaintext(key, value, client.secret_keys_known(config.get("connector.class", "")))
    if not why:
        return value  # no credential here (a live placeholder is kept): --secret never replaces it
    if key in secrets:
        return secrets[key]
    raise InputError(
        where,
        f"holds a plaintext secret ({why}); git gets a placeholder, never the value: "
        f"pass --secret {key}='${{file:/path/to/secrets.properties:some_key}}'",
        field=key,
    )


def write(result: ClusterImport, cleared: Cleared) -> None:
    """The generator's layout, byte for byte, each file written atomically."""
    if cleared.cluster != result.cluster or not {i.name for i in result.items} <= cleared.names():
        raise HephaestusError(f"import of cluster {result.cluster}: not cleared by the gate (a bug): nothing written")
    for item in result.items:
        if item.path:
            path = item.path
            try:  # one by one: the error names the file, whichever step (folder, tmp, rename) failed
                write_files(Path(), {path: render_document(item.document)})  # path: cluster.connectors/…
            except OSError as exc:
                raise HephaestusError(f"cannot write {path}: {exc.strerror or exc}") from exc


def record(
    store: ownership.OwnershipStore, project: Project, cluster: Cluster, result: ClusterImport, run_id: str
) -> None:
    names = [i.name for i in result.items if i.how != "owned already" and not i.owned]
    store.claim(
        project.name, cluster.name, ownership.claims_of(names, ownership.scope_of(cluster.select), "imported", run_id)
    )


def import_project(
    project: Project,
    clusters: Sequence[Cluster],
    globs: Sequence[str],
    secrets: Mapping[str, str],
    dry_run: bool,
    lock_timeout_s: float,
    *,
    client_factory: ClientFactory = connect_client,
) -> list[ClusterImport]:
    """Every cluster planned first (any refusal: nothing written anywhere), then under the
    clusters' lock the files written and ownership recorded; a dry run takes no lock."""
    store = ownership_store(project)
    run_id = new_run_id()
    lock = nullcontext() if dry_run else connect_lock(project, clusters, "import", lock_timeout_s, run_id)
    with lock:
        results = []
        for cluster in clusters:
            with client_factory(cluster) as client:
                owned = store.owned(project.name, cluster.name)
                results.append(plan_import(client, cluster, globs, owned, secrets))
        if not dry_run:
            for cluster, result in zip(clusters, results, strict=False):
                _apply(project, store, cluster, result, run_id)
    return results


def _apply(
    project: Project, store: ownership.OwnershipStore, cluster: Cluster, result: ClusterImport, run_id: str
) -> None:
    """Through the gate (an import writes git and the ownership record, nothing to Connect: its
    items have no effect on data), audited before and after."""
    items = [Item(cluster.name, i.name, "import") for i in result.items]
    cleared = clear(judge(items), cluster.name)
    with journal_for(project, cluster.name, run_id) as journal:
        journal.check()
        written = [i.name for i in result.items if i.document]
        detail = f"{len(written)} file(s) written, {len(result.items)} connector(s) owned: {', '.join(written[:20])}"
        journal.event("*", "import", "intent", detail)
        try:
            write(result, cleared)
            record(store, project, cluster, result, run_id)
        except HephaestusError as exc:
            journal.event("*", "import", "failed", str(exc))
            raise
        journal.event("*", "import", "ok", detail)
