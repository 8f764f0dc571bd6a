"""The project file (hephaestus.yaml): clusters, databases, policy. Secrets by reference only."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar

from hephaestus import settings
from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.globs import scopes_overlap
from hephaestus.safety.values import Resolver
from hephaestus.secrets import REDACTOR
from hephaestus.settings import (
    FreshnessSettings,
    HealSettings,
    LockSettings,
    PolicySettings,
    RolloutKeys,
    RolloutSettings,
    StateSettings,
)
from hephaestus.urls import normalised_url
from hephaestus.versions import requirement
from hephaestus.yamlsrc import YamlDoc, clip, load_yaml, non_finite, packaged_validator, schema_errors_of

DEFAULT_URL = "http://127.0.0.1:8083"
log = logging.getLogger("hephaestus.project")
T = TypeVar("T")


@dataclass(frozen=True)
class SecretRef:
    """A secret named by environment variable or file; resolved only when used."""

    env: str | None = None
    file: str | None = None

    def resolve(self, what: str) -> str:
        """The secret's value, taught to the redactor before anyone can print it."""
        value = self._read(what)
        REDACTOR.learn(value)
        return value

    def _read(self, what: str) -> str:
        # `what` names the secret ("the password of cluster c"). Worded so that no word of ours
        # follows "password:" or "secret:", which the redactor rightly masks in any other text.
        if self.env is not None:
            value = os.environ.get(self.env)
            if value is None:
                raise HephaestusError(f"environment variable {self.env} is not set: it holds {what}")
            return value
        try:
            return Path(self.file or "").read_text().strip()
        except OSError as exc:
            raise HephaestusError(f"cannot read secret file {self.file} ({exc.strerror}): it holds {what}") from exc


@dataclass(frozen=True)
class Cluster:
    name: str
    url: str
    connectors: Path
    select: tuple[str, ...] = ()
    helm_values: dict[str, str] = field(default_factory=dict, hash=False)
    _: KW_ONLY  # the rest by name: several optional strings side by side
    username: str | None = None
    password: SecretRef | None = None
    verify_tls: bool | str = True
    timeout_s: float = 30.0
    kafka_bootstrap: str | None = None
    schema_registry_url: str | None = None  # decodes Avro records read from Kafka
    # The Connect workers' FileConfigProvider file, when mounted here too: its values (the
    # passwords behind `${file:…}` placeholders) are masked in every output, traces included.
    secrets_file: Path | None = None
    rollout: RolloutKeys | None = None  # its `rollout:` keys, over the project's

    def auth(self) -> tuple[str, str] | None:
        return basic_auth(self.username, self.password, f"the password of cluster {self.name}")

    def selects(self, name: str) -> bool:
        """In this deployment's share of the cluster (`select` globs; all when none): every
        job acts only on these."""
        return not self.select or any(fnmatchcase(name, g) for g in self.select)


@dataclass(frozen=True)
class Database:
    name: str
    dsn: str
    password: SecretRef | None = None


@dataclass(frozen=True)
class KsqlDB:
    """A ksqlDB cluster and its migrations (the `ksqldb:` section): ksql-migrations' settings."""

    name: str
    url: str
    migrations: Path
    _: KW_ONLY  # the rest by name: its topic and table names are strings side by side
    stream: str = "MIGRATION_EVENTS"
    table: str = "MIGRATION_SCHEMA_VERSIONS"
    stream_topic: str | None = None  # default: <ksql service id>ksql_<stream>
    table_topic: str | None = None
    replicas: int = 1
    username: str | None = None
    password: SecretRef | None = None
    verify_tls: bool | str = True
    timeout_s: float = 30.0

    def auth(self) -> tuple[str, str] | None:
        return basic_auth(self.username, self.password, f"the password of ksqlDB {self.name}")


def basic_auth(username: str | None, password: SecretRef | None, what: str) -> tuple[str, str] | None:
    """HTTP basic auth, the password resolved only when a client is built and never printed."""
    return None if password is None else (username or "", password.resolve(what))


@dataclass(frozen=True)
class Project:
    file: str
    clusters: dict[str, Cluster] = field(hash=False)
    databases: dict[str, Database] = field(hash=False)
    policy: PolicySettings = PolicySettings()
    audit_log: Path | None = None
    slack_webhook: SecretRef | None = None
    ksqldb: dict[str, KsqlDB] = field(default_factory=dict, hash=False)
    heal: HealSettings = HealSettings()
    freshness: FreshnessSettings = FreshnessSettings()
    lock: LockSettings = LockSettings()
    base: Path = Path(".")  # relative paths in the file are relative to it
    # The deployment's name in the ownership record: deployments sharing a state database
    # (and a Connect cluster) must each have their own.
    name: str = "default"
    state: StateSettings = StateSettings()  # where the lock, ownership, heal's records and the audit live
    rollout: RolloutKeys | None = None  # `rollout:` as written, typed (None: absent)
    plugin_versions: Mapping[str, str] = field(default_factory=dict, hash=False)  # {class: pin} (issue 50)

    def rollout_of(self, cluster: Cluster, flags: Mapping[str, Any] | None = None) -> RolloutSettings | None:
        """The cluster's rollout: the flags' keys over its own over the project's; None when
        none of them sets one (an apply then only waits for each connector to be ready)."""
        given = RolloutKeys.of(flags) if flags else None
        return settings.rollout(self.rollout, cluster.rollout, given)

    def dsn(self, database: str, what: str = "hephaestus") -> str:
        """The DSN of a database named in `databases:`, its password resolved if referenced."""
        db = self.databases.get(database)
        if db is None:
            raise HephaestusError(f"database {database!r} is not in {self.file} (databases:): {what} needs it")
        REDACTOR.learn_embedded(db.dsn)  # a password= inside a DSN given by env var
        if db.password is None:
            return db.dsn
        from psycopg.conninfo import make_conninfo  # psycopg costs ~80 ms to import: only when a DSN is used

        return make_conninfo(db.dsn, password=db.password.resolve(f"the password of database {database}"))

    def webhook(self) -> str | None:
        """The Slack webhook URL, or None when not configured or not resolvable (never fatal)."""
        if self.slack_webhook is None:
            return None
        try:
            return self.slack_webhook.resolve("the Slack webhook")
        except HephaestusError as exc:
            log.warning("slack notifications off: %s", exc)
            return None

    def resolver(self) -> Resolver:
        """Resolves `${file:…}` placeholders from the workers' secrets files this project names
        (`clusters.<name>.secrets_file`), where they are readable here."""
        return Resolver([c.secrets_file for c in self.clusters.values() if c.secrets_file is not None])

    def select(self, names: tuple[str, ...]) -> list[Cluster]:
        """The named Connect clusters (all when none named); an unknown name is an error."""
        return _pick(self.clusters, names, self.file, "clusters", "cluster")

    def select_ksqldb(self, names: tuple[str, ...]) -> list[KsqlDB]:
        """The named ksqlDB clusters (all when none named); none configured is an error."""
        if not self.ksqldb:
            raise InputError(self.file, "no ksqlDB clusters: add a `ksqldb:` section", field="ksqldb")
        return _pick(self.ksqldb, names, self.file, "ksqldb", "ksqlDB cluster", _DECLARE_KSQLDB)


# The reference's job names name ksqlDB clusters (datalake, kec, lmsdwh) a project may not have.
_DECLARE_KSQLDB = "; declare it as ksqldb: {{{name}: {{url: …, migrations: ksql_migrations/{name}}}}}"


def _pick(items: dict[str, T], names: tuple[str, ...], file: str, field: str, label: str, how: str = "") -> list[T]:
    unknown = [n for n in names if n not in items]
    if unknown:
        hint = how.format(name=unknown[0])
        raise InputError(file, f"no {label} {unknown[0]!r} (have: {', '.join(items)}){hint}", field=field)
    return [item for n, item in items.items() if not names or n in names]


def load_project(path: Path) -> Project:
    """Read and validate the project file; a directory or unreadable file is an InputError too."""
    if not path.exists():
        raise InputError(str(path), "project file not found (pass --project or create hephaestus.yaml)")
    doc = load_yaml(path)  # strict: a duplicate `policy:` is an error, not a silent replacement
    errors = non_finite(doc) or schema_errors_of(doc, packaged_validator("hephaestus", "project.schema.json"))
    if errors:
        raise InputErrors(errors)
    project = _build(doc, path.parent)
    _check_urls(project, doc.data["clusters"])
    _check_waves(project)
    _check_pins(project)
    return project


def _check_pins(project: Project) -> None:
    """A fleet-wide pin Connect would refuse is named where it is written (issue 50)."""
    for cls, spec in project.plugin_versions.items():
        try:
            requirement(spec)
        except ValueError as exc:
            raise InputError(project.file, str(exc), f"plugins.versions.{cls}") from exc


def _check_waves(project: Project) -> None:
    """A rollout's waves are cumulative percentages: each larger than the one before."""
    found = [("rollout", project.rollout)] + [(f"clusters.{n}.rollout", c.rollout) for n, c in project.clusters.items()]
    for where, keys in found:
        waves = list(keys.values.waves) if keys is not None and "waves" in keys.given else []
        if any(b <= a for a, b in zip(waves, waves[1:], strict=False)):
            raise InputError(
                project.file, f"waves {waves} must ascend: each is the share reached so far", f"{where}.waves"
            )


def _check_urls(project: Project, written: Mapping[str, Any]) -> None:
    """Each cluster's URL usable; two clusters of one file on one Connect cluster must split it by
    `select`: a name in both scopes would be planned twice, and deleted by one as absent from the
    other's git."""
    seen: dict[str, Cluster] = {}
    errors = []
    for c in project.clusters.values():
        try:
            url = _usable_url(project.file, c, written[c.name])
        except InputError as exc:
            errors.append(exc)
            continue
        first = seen.setdefault(url, c)
        if first is not c and scopes_overlap(first.select, c.select):
            errors.append(
                InputError(
                    project.file,
                    f"clusters {first.name!r} and {c.name!r} both point at {c.url} "
                    "and their `select` scopes overlap: give each a disjoint select",
                    field=f"clusters.{c.name}.select",
                )
            )
    if errors:
        raise InputErrors(errors)


def _usable_url(file: str, c: Cluster, written: Mapping[str, Any]) -> str:
    """The cluster's URL in its one spelling, or an error at the key that gave it: `url_env`'s
    variable when set (the schema checked only what the file holds), else `url`."""
    env = written.get("url_env")
    given = env if env and os.environ.get(env) else None
    field, named = (f"clusters.{c.name}.url_env", f"{given} ") if given else (f"clusters.{c.name}.url", "")
    if not c.url.lower().startswith(("http://", "https://")):  # the value is not shown: it may hold a password
        raise InputError(file, f"{named or 'the URL '}must start with http:// or https://", field=field)
    try:
        url = normalised_url(c.url)
    except ValueError as exc:  # a port out of range, a host that is no name, an address ipaddress refuses
        raise InputError(file, f"not a usable URL {clip(c.url)}: {clip(str(exc))}", field=field) from exc
    if url.endswith("/connectors"):
        # Every request adds /connectors itself: the listing went to /connectors/connectors, and
        # Connect's 404 for a connector named "connectors" read as one missing (issue 48).
        raise InputError(
            file,
            f"{named}must be the Kafka Connect REST API's base URL: drop the /connectors (hephaestus adds it)",
            field=field,
        )
    return url


def _build(doc: YamlDoc, base: Path) -> Project:
    data = doc.data
    slack = data.get("slack", {})
    return Project(
        file=doc.file,
        clusters={n: _cluster(n, c, base) for n, c in data["clusters"].items()},
        databases={n: _database(n, d) for n, d in data.get("databases", {}).items()},
        policy=settings.of(PolicySettings, data.get("policy", {})),
        audit_log=base / data["audit_log"] if "audit_log" in data else None,
        state=_state(doc),
        heal=_heal(data.get("heal", {})),
        freshness=settings.of(FreshnessSettings, data.get("freshness", {})),
        lock=settings.of(LockSettings, data.get("lock", {})),
        base=base,
        name=data.get("name", "default"),
        slack_webhook=_secret(
            {"env": slack["webhook_env"]}
            if "webhook_env" in slack
            else {"file": slack["webhook_file"]}
            if "webhook_file" in slack
            else None
        ),
        ksqldb={n: _ksqldb(n, k, base) for n, k in data.get("ksqldb", {}).items()},
        rollout=_rollout(data),
        plugin_versions=dict(data.get("plugins", {}).get("versions", {})),
    )


def _rollout(raw: dict[str, Any]) -> RolloutKeys | None:
    return RolloutKeys.of(raw["rollout"]) if "rollout" in raw else None


def _heal(raw: dict[str, Any]) -> HealSettings:
    file = raw.get("state", {}).get("file")
    return replace(settings.of(HealSettings, raw), **({"state_file": file} if file else {}))


# The keys that chose a database for one part of the state before `state: {database}`.
_LEGACY = {
    "lock_database": ("lock", "database"),
    "heal_database": ("heal", "state", "database"),
    "audit_database": ("audit", "database"),
}


def _state(doc: YamlDoc) -> StateSettings:
    """`state:`, and the legacy keys still honoured (each warned about once per load)."""
    legacy = {name: _dig(doc.data, path) for name, path in _LEGACY.items()}
    for name, value in legacy.items():
        if value is not None:
            key = ".".join(_LEGACY[name])
            log.warning("%s: %s is deprecated: use `state: {database: %s}`", doc.file, key, value)
    return StateSettings(doc.data.get("state", {}).get("database"), **legacy)


def _dig(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data or None


def _cluster(name: str, raw: dict[str, Any], base: Path) -> Cluster:
    url = os.environ.get(raw["url_env"], "") if "url_env" in raw else ""
    return Cluster(
        name=name,
        url=(url or raw.get("url", DEFAULT_URL)).rstrip("/"),
        connectors=base / raw["connectors"],
        select=tuple(raw.get("select", ())),
        helm_values=dict(raw.get("helm_values", {})),
        username=raw.get("username"),
        password=_secret(raw.get("password")),
        verify_tls=raw.get("ca_file", raw.get("verify_tls", True)),
        timeout_s=float(raw.get("timeout_s", 30.0)),
        kafka_bootstrap=raw.get("kafka_bootstrap"),
        schema_registry_url=raw.get("schema_registry_url"),
        secrets_file=base / raw["secrets_file"] if "secrets_file" in raw else None,
        rollout=_rollout(raw),
    )


def _ksqldb(name: str, raw: dict[str, Any], base: Path) -> KsqlDB:
    url = os.environ.get(raw["url_env"], "") if "url_env" in raw else ""
    return KsqlDB(
        name=name,
        url=(url or raw["url"]).rstrip("/"),
        migrations=base / raw.get("migrations", f"ksql_migrations/{name}"),
        stream=raw.get("stream", "MIGRATION_EVENTS"),
        table=raw.get("table", "MIGRATION_SCHEMA_VERSIONS"),
        stream_topic=raw.get("stream_topic"),
        table_topic=raw.get("table_topic"),
        replicas=int(raw.get("replicas", 1)),
        username=raw.get("username"),
        password=_secret(raw.get("password")),
        verify_tls=raw.get("ca_file", raw.get("verify_tls", True)),
        timeout_s=float(raw.get("timeout_s", 30.0)),
    )


def _database(name: str, raw: dict[str, Any]) -> Database:
    dsn = os.environ.get(raw["dsn_env"], "") if "dsn_env" in raw else ""
    return Database(name, dsn or raw.get("dsn", f"dbname={name}"), _secret(raw.get("password")))


def _secret(raw: dict[str, str] | None) -> SecretRef | None:
    return SecretRef(raw.get("env"), raw.get("file")) if raw else None
