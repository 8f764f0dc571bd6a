"""`hephaestus import`: adopt live connectors into git and the ownership record (edge).

A fleet made by hand (or by the reference's jobs) comes in without a restart: each live
config is written as the generator lays files out (`connectors/<cluster>/<type>/<name>.json`,
sorted keys, strings, no `name` inside the config), so the next reconcile plans zero writes.
Every connector is checked before anything is written: an unsafe name, an unknown type or a
plaintext secret (a PASSWORD-typed or secret-named key, or a credential inside a value) stops
the whole import with the connector and key named; `--secret KEY=PLACEHOLDER` puts a
`${…}` placeholder in git instead (the next reconcile then shows the update to it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from hephaestus import ownership
from hephaestus.clients import ClientFactory, connect_client
from hephaestus.connect import ConnectClient, ConnectError, LiveConnector
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.generator.output import render_document, write_files
from hephaestus.lock import connect_lock, new_run_id
from hephaestus.project import Cluster, Project
from hephaestus.reconciler.desired import GENERATED, check_name, load_desired
from hephaestus.reconciler.plan import is_ksqldb_managed
from hephaestus.secrets import REDACTOR, is_placeholder, mask_value


@dataclass(frozen=True)
class Imported:
    name: str
    how: str  # "write <path>", "in git", "owned already"
    document: Mapping[str, object] = field(default_factory=dict, hash=False)  # what is written


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
        if name in owned:
            items.append(Imported(name, "owned already"))
        elif name in in_git:
            items.append(Imported(name, "in git"))
        else:
            try:
                items.append(_to_file(client, cluster, fleet[name], secrets))
            except InputError as exc:
                errors.append(exc)
    if errors:
        raise InputErrors(errors)
    return ClusterImport(cluster.name, tuple(items))


def _to_file(client: ConnectClient, cluster: Cluster, c: LiveConnector, secrets: Mapping[str, str]) -> Imported:
    where = f"connector {c.name!r} on cluster {cluster.name}"
    if c.type not in GENERATED:
        raise InputError(where, f"Connect reports type {c.type!r}: only source and sink connectors are imported")
    check_name(Path(where), c.name)  # named by repr: a name from a cluster may hold control characters
    path = cluster.connectors / c.type / f"{c.name}.json"
    config = {k: _safe(where, k, v, secrets, client, c.config) for k, v in sorted(c.config.items()) if k != "name"}
    return Imported(c.name, f"write {path}", {"name": c.name, "config": config})


def _safe(
    where: str, key: str, value: str, secrets: Mapping[str, str], client: ConnectClient, config: Mapping[str, str]
) -> str:
    """The value for git: a placeholder as it is live, a secret only as the placeholder named."""
    if not value or is_placeholder(value):
        return value  # a live placeholder is kept as it is (--secret replaces plaintext only)
    if key in secrets:
        return secrets[key]
    if _secret_key(client, config, key) or mask_value(key, value) != value:
        raise InputError(
            where,
            "holds a plaintext secret: git gets a placeholder, never the value; "
            f"pass --secret {key}='${{file:/path/to/secrets.properties:some_key}}'",
            field=key,
        )
    return value


def _secret_key(client: ConnectClient, config: Mapping[str, str], key: str) -> bool:
    try:
        client.secret_keys(config.get("connector.class", ""))  # the plugin's PASSWORD keys, learnt
    except ConnectError:
        pass  # an unknown plugin: key names and value shapes still apply
    return REDACTOR.is_secret_key(key)


def write(result: ClusterImport) -> None:
    """The generator's layout, byte for byte, each file written atomically."""
    for item in result.items:
        if item.how.startswith("write "):
            path = item.how.removeprefix("write ")
            try:  # one by one: the error names the file, whichever step (folder, tmp, rename) failed
                write_files(Path(), {path: render_document(item.document)})  # path: cluster.connectors/…
            except OSError as exc:
                raise HephaestusError(f"cannot write {path}: {exc.strerror or exc}") from exc


def record(store: ownership.Store, project: Project, cluster: Cluster, result: ClusterImport, run_id: str) -> None:
    names = [i.name for i in result.items if i.how != "owned already"]
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
    store = ownership.store_for(project)
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
                write(result)
                record(store, project, cluster, result, run_id)
    return results
