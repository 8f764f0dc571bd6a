"""The Helm chart (helm/hephaestus), rendered by a real helm and checked as objects.

helm is built from the Go module proxy by dev/tools/helm (cached per version). Renders with
default and non-default values are linted, validated offline against the Kubernetes JSON
schemas kubernetes-validate ships (the chart's oldest supported version and the newest the
package has), and asserted on: the order and arguments of the hooks, the schedules, the
security context, and that secrets appear only as references.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from hephaestus.jobs import JOBS
from hephaestus.project import load_project
from hephaestus.settings import StateSettings
from tests.unit.conftest import REPO

PARTS = ("lock", "ownership", "heal", "audit")

# Builds a wheel / fetches helm: the packaging suite (needs the package index and the Go proxy).
pytestmark = pytest.mark.packaging

CHART = REPO / "helm" / "hephaestus"
KUBE_VERSIONS = ("1.25.0", "1.37.0")  # the chart's kubeVersion floor; the newest kubernetes-validate 1.37.0 ships
RENDER_KUBE_VERSION = "1.33.0"
SECRETS_DIR = "/etc/hephaestus/secrets"

# The reference's deploy, mapped onto our jobs: weight -> (Job name suffix, job).
HOOKS = {
    2: ("2-init-ksql", "prepare_ksqldb_migration"),
    3: ("3-upsert-kafka-connect", "upsert_kafka_connect"),
    4: ("4-validate", "validate_kafka_connectors"),
    5: ("5-migrate-ksql", "migrate_ksql"),
    6: ("6-sync-datawarehouse", "upsert_kafka_connect"),
    7: ("7-validate-datawarehouse", "validate_kafka_connectors"),
}

# Non-default values: every knob that changes what is rendered, secrets by reference only.
CUSTOM: dict[str, Any] = {
    "global": {"environment": "prod", "vendor": "acme"},
    "fullnameOverride": "heph",
    "image": {
        "repository": "registry.example.com/data/hephaestus",
        "tag": "0123abc",
        "digest": "sha256:" + "ab" * 32,
        "pullPolicy": "Always",
    },
    "imagePullSecrets": [{"name": "regcred"}],
    "clusters": {
        "platforms": {
            "url": "https://connect-platforms.kafka:8083",
            "username": "hephaestus",
            "passwordSecret": {"name": "connect-auth", "key": "password"},
            "caSecret": {"name": "connect-ca", "key": "ca.crt"},
            "kafkaBootstrap": "kafka.kafka:9092",
            "select": ["prod_acme_*", "prod_shared_*"],
            "timeoutSeconds": 60,
        },
        "lmsdwh": None,  # a default cluster removed
        "kec": {
            "url": "http://connect-kec.kafka:8083",
            "connectors": "connectors/kec",
            "warehouse": True,
            "select": [],
        },
        "lms": {
            "url": "http://connect-lms.kafka:8083",
            "connectors": "/srv/state/connectors/lms",
            "warehouse": True,
            "helmValues": {"vendor": "acme-lms"},
            "verifyTls": False,
        },
    },
    "ksqldb": {
        "kec": {"url": "http://ksqldb-kec.kafka:8088"},
        "lms": {
            "url": "https://ksqldb-lms.kafka:8088",
            "migrations": "ksql/lms",
            "stream": "LMSDWH_MIGRATION_EVENTS",
            "table": "LMSDWH_MIGRATION_SCHEMA_VERSIONS",
            "username": "ksql",
            "passwordSecret": {"name": "ksql-auth", "key": "password"},
        },
    },
    "databases": {
        "bob": {
            "dsn": "host=bob.db port=5432 user=hephaestus dbname=bob sslmode=require",
            "passwordSecret": {"name": "db-passwords", "key": "bob"},
        },
        "lmsdwh": {"dsnSecret": {"name": "warehouse-dsn", "key": "lmsdwh"}},
        "auth": {
            "dsnSecret": {"name": "warehouse-dsn", "key": "auth"},
            "passwordSecret": {"name": "db-passwords", "key": "auth"},
        },
    },
    "policy": {"max_deletes": 3, "concurrency": 4},
    "heal": {"max_restarts": 5, "state": {"database": "lmsdwh"}},
    "slack": {"webhookSecret": {"name": "slack", "key": "webhook-url"}},
    "metrics": {"pushgateway": "http://pushgateway.monitoring:9091"},
    "hooks": {
        "events": ["post-install", "post-upgrade", "post-rollback"],
        "deletePolicy": ["before-hook-creation", "hook-succeeded"],
        "backoffLimit": 2,
        "activeDeadlineSeconds": 600,
        "upsertKafkaConnect": {"enabled": True, "args": ["--deployCustomSinkConnector"]},
        "validate": {"enabled": True, "args": ["-o", "markdown"], "backoffLimit": 0},
        "syncDatawarehouse": {"enabled": True, "args": [], "activeDeadlineSeconds": 3600},
    },
    "cronJobs": {
        "heal": {"enabled": True, "schedule": "*/5 * * * *", "args": ["-o", "json"]},
        "dwhAccuracy": {"enabled": True, "schedule": "15 */6 * * *", "suspend": True},
        "timeZone": "Asia/Tokyo",
        "backoffLimit": 1,
    },
    "state": {"existingClaim": "hephaestus-state"},
    "serviceAccount": {"create": False, "name": "data-jobs"},
    "extraEnv": [{"name": "PGCONNECT_TIMEOUT", "value": "10"}],
    "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
    "podAnnotations": {"team": "data"},
    "podLabels": {"cost-center": "cdc"},
    "nodeSelector": {"pool": "batch"},
    "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
    "priorityClassName": "batch-low",
}


@pytest.fixture(scope="session")
def helm() -> str:
    built = subprocess.run(
        [str(REPO / "dev" / "tools" / "helm")], capture_output=True, text=True, timeout=900, check=False
    )
    assert built.returncode == 0, f"dev/tools/helm failed:\n{built.stderr}"
    return built.stdout.strip()


@pytest.fixture(scope="session")
def custom_values(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("values") / "custom.yaml"
    path.write_text(yaml.safe_dump(CUSTOM, sort_keys=False))
    return path


def helm_run(helm: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [helm, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": "/nonexistent",
            "HELM_CACHE_HOME": "/tmp",
            "HELM_CONFIG_HOME": "/tmp",
            "HELM_DATA_HOME": "/tmp",
        },
    )


# The one decision the chart makes the user take (where state lives), taken: throwaway state.
EPHEMERAL = ("--set", "state.ephemeral=true")


def render(helm: str, *args: str, release: str = "deploy") -> list[dict[str, Any]]:
    result = helm_run(
        helm,
        "template",
        release,
        str(CHART),
        "--namespace",
        "data",
        "--kube-version",
        RENDER_KUBE_VERSION,
        *EPHEMERAL,
        *args,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def render_error(helm: str, *args: str) -> str:
    result = helm_run(helm, "template", "deploy", str(CHART), *args)
    assert result.returncode != 0, "expected the chart to refuse these values"
    return result.stderr


@pytest.fixture(scope="session")
def default(helm: str) -> list[dict[str, Any]]:
    return render(helm)


@pytest.fixture(scope="session")
def custom(helm: str, custom_values: Path) -> list[dict[str, Any]]:
    return render(helm, "-f", str(custom_values))


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def hooks(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hook Jobs in the order Helm runs them: by weight (then name)."""
    jobs = [d for d in of_kind(docs, "Job") if "helm.sh/hook" in d["metadata"].get("annotations", {})]
    return sorted(jobs, key=lambda d: (int(d["metadata"]["annotations"]["helm.sh/hook-weight"]), d["metadata"]["name"]))


def pod_specs(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for d in docs:
        if d["kind"] == "Job":
            yield d["metadata"]["name"], d["spec"]["template"]["spec"]
        elif d["kind"] == "CronJob":
            yield d["metadata"]["name"], d["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def job_specs(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for d in docs:
        if d["kind"] == "Job":
            yield d["metadata"]["name"], d["spec"]
        elif d["kind"] == "CronJob":
            yield d["metadata"]["name"], d["spec"]["jobTemplate"]["spec"]


def container(spec: dict[str, Any]) -> dict[str, Any]:
    (only,) = spec["containers"]
    assert isinstance(only, dict)
    return only


def argv(job: dict[str, Any]) -> list[str]:
    c = container(
        job["spec"]["template"]["spec"]
        if job["kind"] == "Job"
        else job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    )
    return [*c["command"], *c["args"]]


def project_file(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (cm,) = of_kind(docs, "ConfigMap")
    loaded: dict[str, Any] = yaml.safe_load(cm["data"]["hephaestus.yaml"])
    return loaded


def cron(docs: list[dict[str, Any]], suffix: str) -> dict[str, Any]:
    (found,) = [d for d in of_kind(docs, "CronJob") if d["metadata"]["name"].endswith(f"-{suffix}")]
    return found


# --- lint and schema validation ----------------------------------------------------------


@pytest.mark.parametrize("values", ["default", "custom"])
def test_helm_lint_strict_passes(helm: str, custom_values: Path, values: str) -> None:
    extra = ["-f", str(custom_values)] if values == "custom" else list(EPHEMERAL)
    result = helm_run(helm, "lint", "--strict", str(CHART), "--kube-version", RENDER_KUBE_VERSION, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("kube", KUBE_VERSIONS)
@pytest.mark.parametrize("values", ["default", "custom"])
def test_manifests_validate_against_the_kubernetes_schemas(
    default: list[dict[str, Any]], custom: list[dict[str, Any]], values: str, kube: str
) -> None:
    docs = default if values == "default" else custom
    assert {d["kind"] for d in docs} >= {"ConfigMap", "Job", "CronJob"}
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, kube, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{doc['kind']}/{doc['metadata']['name']} against Kubernetes {kube}: "
                f"{'.'.join(map(str, exc.path))}: {exc.message}"
            )


@pytest.mark.parametrize("values", ["default", "custom"])
def test_the_rendered_project_file_loads_as_hephaestus_yaml(
    default: list[dict[str, Any]], custom: list[dict[str, Any]], values: str, tmp_path: Path
) -> None:
    """The ConfigMap's hephaestus.yaml passes the package's own schema and loader."""
    docs = default if values == "default" else custom
    (cm,) = of_kind(docs, "ConfigMap")
    path = tmp_path / "hephaestus.yaml"
    path.write_text(cm["data"]["hephaestus.yaml"])
    project = load_project(path)
    assert project.clusters
    for cluster in project.clusters.values():
        assert cluster.connectors.is_absolute()
    if values == "default":  # no state database: files on the (declared throwaway) volume
        assert (project.audit_log, project.state) == (Path("/var/lib/hephaestus/audit.jsonl"), StateSettings())
        assert project.heal.state_file == "/var/lib/hephaestus/heal-state.json"
    else:  # heal.state.database names one (an earlier release's key): all the state goes there
        assert (project.audit_log, project.state) == (None, StateSettings("lmsdwh"))
        assert {p: project.state.database_of(p) for p in PARTS} == dict.fromkeys(PARTS, "lmsdwh")
    # The ownership record's deployment name: stable per release, unless the values name one.
    assert project.name == "data.deploy"


# --- the deploy hooks ----------------------------------------------------------------------


def test_default_hooks_upsert_validate_then_sync_the_warehouse(default: list[dict[str, Any]]) -> None:
    """No ksqlDB server by default: steps 2 and 5 are left out, 3, 4, 6, 7 run in that order."""
    order = hooks(default)
    assert [d["metadata"]["name"] for d in order] == [
        "deploy-hephaestus-3-upsert-kafka-connect",
        "deploy-hephaestus-4-validate",
        "deploy-hephaestus-6-sync-datawarehouse",
        "deploy-hephaestus-7-validate-datawarehouse",
    ]
    assert [argv(d) for d in order] == [
        [
            "hephaestus",
            "job",
            "run",
            "upsert_kafka_connect",
            "--cluster",
            "platforms",
            "--deployCustomSinkConnector",
            "--sendIncrementalSnapshot",
        ],
        [
            "hephaestus",
            "job",
            "run",
            "validate_kafka_connectors",
            "--cluster",
            "platforms",
            "--deployCustomSinkConnector",
        ],
        [
            "hephaestus",
            "job",
            "run",
            "upsert_kafka_connect",
            "--cluster",
            "kec",
            "--cluster",
            "lmsdwh",
            "--deployCustomSinkConnector",
            "--sendIncrementalSnapshot",
        ],
        [
            "hephaestus",
            "job",
            "run",
            "validate_kafka_connectors",
            "--cluster",
            "kec",
            "--cluster",
            "lmsdwh",
            "--deployCustomSinkConnector",
        ],  # every cluster is validated, the warehouses after their sync
    ]
    for job in order:
        annotations = job["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"


def test_the_reference_hooks_and_the_warehouse_validate_in_order_when_ksqldb_is_set(helm: str) -> None:
    docs = render(helm, "--set", "ksqldb.lmsdwh.url=http://ksqldb-lmsdwh:8088")
    order = hooks(docs)
    weights = [int(d["metadata"]["annotations"]["helm.sh/hook-weight"]) for d in order]
    assert weights == [2, 3, 4, 5, 6, 7]
    for job, weight in zip(order, weights, strict=True):
        suffix, name = HOOKS[weight]
        assert job["metadata"]["name"] == f"deploy-hephaestus-{suffix}"
        assert argv(job)[:4] == ["hephaestus", "job", "run", name]
        assert name in JOBS
    assert argv(order[0]) == ["hephaestus", "job", "run", "prepare_ksqldb_migration"]
    assert argv(order[3]) == ["hephaestus", "job", "run", "migrate_ksql"]


def test_custom_hooks_scope_clusters_and_take_their_args(custom: list[dict[str, Any]]) -> None:
    order = hooks(custom)
    names = [d["metadata"]["name"] for d in order]
    assert names == [
        "heph-2-init-ksql",
        "heph-3-upsert-kafka-connect",
        "heph-4-validate",
        "heph-5-migrate-ksql",
        "heph-6-sync-datawarehouse",
        "heph-7-validate-datawarehouse",
    ]
    upsert, validate, sync, validate_dwh = order[1], order[2], order[4], order[5]
    assert argv(upsert)[3:] == ["upsert_kafka_connect", "--cluster", "platforms", "--deployCustomSinkConnector"]
    assert argv(validate)[3:] == [
        "validate_kafka_connectors",
        "--cluster",
        "platforms",
        "--deployCustomSinkConnector",
        "-o",
        "markdown",
    ]
    assert argv(sync)[3:] == ["upsert_kafka_connect", "--cluster", "kec", "--cluster", "lms"]
    assert argv(validate_dwh)[3:] == ["validate_kafka_connectors", "--cluster", "kec", "--cluster", "lms"]
    for job in order:
        annotations = job["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "post-install,post-upgrade,post-rollback"
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    assert [d["spec"]["backoffLimit"] for d in order] == [2, 2, 0, 2, 2, 2]
    assert [d["spec"]["activeDeadlineSeconds"] for d in order] == [600, 1800, 600, 600, 3600, 600]


def test_disabled_jobs_are_not_rendered(helm: str) -> None:
    docs = render(
        helm,
        "--set",
        "hooks.validate.enabled=false",
        "--set",
        "hooks.syncDatawarehouse.enabled=false",
        "--set",
        "hooks.validateDatawarehouse.enabled=false",
        "--set",
        "databases.bob.dsn=dbname=bob",
        "--set",
        "cronJobs.dwhAccuracy.enabled=false",
        "--set",
        "ksqldb.lmsdwh.url=http://k:8088",
        "--set",
        "hooks.migrateKsql.enabled=false",
    )
    assert [d["metadata"]["name"] for d in hooks(docs)] == [
        "deploy-hephaestus-2-init-ksql",
        "deploy-hephaestus-3-upsert-kafka-connect",
    ]
    assert [d["metadata"]["name"] for d in of_kind(docs, "CronJob")] == ["deploy-hephaestus-heal"]


def test_without_warehouse_clusters_there_is_no_step_6_and_only_warehouses_no_step_3(helm: str) -> None:
    plain = render(helm, "--set", "clusters.lmsdwh.warehouse=false", "--set", "clusters.kec.warehouse=false")
    assert [argv(d)[3:] for d in hooks(plain)] == [
        [
            "upsert_kafka_connect",
            "--cluster",
            "kec",
            "--cluster",
            "lmsdwh",
            "--cluster",
            "platforms",
            "--deployCustomSinkConnector",
            "--sendIncrementalSnapshot",
        ],
        [
            "validate_kafka_connectors",
            "--cluster",
            "kec",
            "--cluster",
            "lmsdwh",
            "--cluster",
            "platforms",
            "--deployCustomSinkConnector",
        ],
    ]
    only = render(helm, "--set", "clusters.platforms=null")
    assert [d["metadata"]["name"] for d in hooks(only)] == [
        "deploy-hephaestus-6-sync-datawarehouse",
        "deploy-hephaestus-7-validate-datawarehouse",
    ]


def test_the_project_file_exists_before_the_hooks_run(default: list[dict[str, Any]]) -> None:
    """ConfigMap and ServiceAccount are release resources, so post-install hooks find them."""
    for kind in ("ConfigMap", "ServiceAccount"):
        (doc,) = of_kind(default, kind)
        assert "helm.sh/hook" not in (doc["metadata"].get("annotations") or {})
    for job in hooks(default):
        assert set(job["metadata"]["annotations"]["helm.sh/hook"].split(",")) <= {"post-install", "post-upgrade"}


def test_hooks_never_run_before_the_project_file_is_in_place(helm: str) -> None:
    for event in ("pre-install", "pre-upgrade"):
        assert "/hooks/events/0" in render_error(helm, "--set", f"hooks.events={{{event}}}")


def test_validate_leaves_custom_sinks_out_when_the_upsert_does(helm: str) -> None:
    docs = render(helm, "--set", "hooks.upsertKafkaConnect.args={--sendIncrementalSnapshot}")
    upsert, validate = hooks(docs)[:2]
    assert argv(upsert)[3:] == ["upsert_kafka_connect", "--cluster", "platforms", "--sendIncrementalSnapshot"]
    assert argv(validate)[3:] == ["validate_kafka_connectors", "--cluster", "platforms"]


# --- where state lives ---------------------------------------------------------------------


def test_without_a_state_database_or_claim_the_chart_refuses_ephemeral_state(helm: str) -> None:
    result = helm_run(helm, "template", "deploy", str(CHART))
    assert result.returncode != 0
    for way_out in ("state.database", "state.existingClaim", "state.ephemeral: true"):
        assert way_out in result.stderr


@pytest.mark.parametrize("key", ["state.database", "lock.database", "heal.state.database"])
def test_a_state_database_keeps_the_lock_the_audit_trail_and_heal_state(helm: str, key: str) -> None:
    """The chart's `state.database`, or an earlier release's key for it, becomes one
    `state: {database}` in hephaestus.yaml: no deprecated key reaches the project file."""
    result = helm_run(
        helm,
        "template",
        "deploy",
        str(CHART),
        "--namespace",
        "data",
        "--set",
        f"{key}=bob",
        "--set",
        "lock.timeout_s=60",
        "--set",
        "databases.bob.dsnSecret.name=dsn",
        "--set",
        "databases.bob.dsnSecret.key=bob",
    )
    assert result.returncode == 0, result.stderr
    project = project_file([d for d in yaml.safe_load_all(result.stdout) if d])
    assert project["state"] == {"database": "bob"} and "audit_log" not in project and "audit" not in project
    assert "state" not in project["heal"] and project["lock"] == {"timeout_s": 60}


def test_a_claim_keeps_them_as_files(helm: str) -> None:
    result = helm_run(helm, "template", "deploy", str(CHART), "--set", "state.existingClaim=heph-state")
    assert result.returncode == 0, result.stderr
    project = project_file([d for d in yaml.safe_load_all(result.stdout) if d])
    assert project["audit_log"] == "/var/lib/hephaestus/audit.jsonl"
    assert project["heal"]["state"] == {"file": "/var/lib/hephaestus/heal-state.json"}


def test_each_hook_may_choose_its_own_events(helm: str) -> None:
    docs = render(
        helm,
        "--set",
        "hooks.validate.events={post-install}",
        "--set",
        "hooks.upsertKafkaConnect.events={post-install,post-upgrade,post-rollback}",
    )
    events = {d["metadata"]["name"]: d["metadata"]["annotations"]["helm.sh/hook"] for d in hooks(docs)}
    assert events == {
        "deploy-hephaestus-3-upsert-kafka-connect": "post-install,post-upgrade,post-rollback",
        "deploy-hephaestus-4-validate": "post-install",
        "deploy-hephaestus-6-sync-datawarehouse": "post-install,post-upgrade",
        "deploy-hephaestus-7-validate-datawarehouse": "post-install,post-upgrade",
    }
    assert "/hooks/validate/events/0" in render_error(helm, *EPHEMERAL, "--set", "hooks.validate.events={pre-install}")


# --- the schedules ---------------------------------------------------------------------------


def test_heal_runs_every_ten_minutes_and_never_overlaps(default: list[dict[str, Any]]) -> None:
    heal = cron(default, "heal")
    assert heal["spec"]["schedule"] == "*/10 * * * *"
    assert heal["spec"]["concurrencyPolicy"] == "Forbid"
    assert heal["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 600
    assert argv(heal) == ["hephaestus", "job", "run", "heal"]
    assert "timeZone" not in heal["spec"]


def test_accuracy_runs_nightly_once_databases_are_configured(default: list[dict[str, Any]], helm: str) -> None:
    """With no databases every run would exit 1: the CronJob waits for them."""
    assert [d["metadata"]["name"] for d in of_kind(default, "CronJob")] == ["deploy-hephaestus-heal"]
    accuracy = cron(render(helm, "--set", "databases.bob.dsn=dbname=bob"), "dwh-accuracy")
    assert accuracy["spec"]["schedule"] == "30 2 * * *"
    assert accuracy["spec"]["concurrencyPolicy"] == "Forbid"
    assert argv(accuracy) == ["hephaestus", "job", "run", "dwh_accuracy", "--env", "local", "--org", "manabie"]


def test_custom_schedules_time_zone_and_args(custom: list[dict[str, Any]]) -> None:
    heal, accuracy = cron(custom, "heal"), cron(custom, "dwh-accuracy")
    assert heal["spec"]["schedule"] == "*/5 * * * *"
    assert accuracy["spec"]["schedule"] == "15 */6 * * *"
    assert accuracy["spec"]["suspend"] is True
    for c in (heal, accuracy):
        assert c["spec"]["timeZone"] == "Asia/Tokyo"
        assert c["spec"]["concurrencyPolicy"] == "Forbid"
        assert c["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 1
    assert argv(heal) == ["hephaestus", "job", "run", "heal", "-o", "json"]
    assert argv(accuracy)[3:] == ["dwh_accuracy", "--env", "prod", "--org", "acme"]


# --- how every pod runs ----------------------------------------------------------------------


@pytest.mark.parametrize("values", ["default", "custom"])
def test_every_pod_is_non_root_read_only_and_bounded(
    default: list[dict[str, Any]], custom: list[dict[str, Any]], values: str
) -> None:
    docs = default if values == "default" else custom
    specs = dict(pod_specs(docs))
    assert len(specs) >= 5
    for name, spec in specs.items():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] != 0, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["restartPolicy"] == "Never", name
        c = container(spec)
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True, name
        assert sc["allowPrivilegeEscalation"] is False, name
        assert sc["capabilities"]["drop"] == ["ALL"], name
        assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"], name
        writable = {m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")}
        assert writable == {"/tmp", "/var/lib/hephaestus"}, name
    for name, job in job_specs(docs):
        assert isinstance(job["backoffLimit"], int) and job["activeDeadlineSeconds"] > 0, name


def test_custom_pod_settings_reach_every_pod(custom: list[dict[str, Any]]) -> None:
    for name, spec in pod_specs(custom):
        c = container(spec)
        assert c["image"] == "registry.example.com/data/hephaestus@sha256:" + "ab" * 32, name
        assert c["imagePullPolicy"] == "Always"
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        assert spec["serviceAccountName"] == "data-jobs"
        assert spec["nodeSelector"] == {"pool": "batch"}
        assert spec["priorityClassName"] == "batch-low"
        # Helm merges maps: the default cpu limit stays unless set to null
        assert c["resources"] == {
            "requests": {"cpu": "50m", "memory": "128Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        }
        state = next(v for v in spec["volumes"] if v["name"] == "state")
        assert state == {"name": "state", "persistentVolumeClaim": {"claimName": "hephaestus-state"}}
    assert not of_kind(custom, "ServiceAccount")


def test_names_fit_kubernetes_limits_with_the_longest_release_name(helm: str) -> None:
    release = "r" * 53  # Helm's limit for a release name
    docs = render(helm, "--set", "ksqldb.lmsdwh.url=http://k:8088", release=release)
    for doc in docs:
        limit = 52 if doc["kind"] == "CronJob" else 63
        assert len(doc["metadata"]["name"]) <= limit, doc["metadata"]["name"]
    assert len({d["metadata"]["name"] for d in hooks(docs)}) == 6


# --- secrets: references only ----------------------------------------------------------------


def test_the_project_file_references_secrets_by_file_and_env(custom: list[dict[str, Any]]) -> None:
    project = project_file(custom)
    platforms = project["clusters"]["platforms"]
    assert platforms["password"] == {"file": f"{SECRETS_DIR}/connect-auth/password"}
    assert platforms["ca_file"] == f"{SECRETS_DIR}/connect-ca/ca.crt"
    assert platforms["select"] == ["prod_acme_*", "prod_shared_*"]
    assert platforms["kafka_bootstrap"] == "kafka.kafka:9092"
    assert project["clusters"]["kec"]["select"] == []
    assert project["clusters"]["kec"]["connectors"] == "/app/connectors/kec"
    lms = project["clusters"]["lms"]
    assert lms["select"] == ["prod_acme_*"] and lms["verify_tls"] is False
    assert lms["connectors"] == "/srv/state/connectors/lms"
    assert lms["helm_values"] == {"environment": "prod", "vendor": "acme-lms"}
    assert "lmsdwh" not in project["clusters"]
    assert project["databases"] == {
        "bob": {
            "dsn": "host=bob.db port=5432 user=hephaestus dbname=bob sslmode=require",
            "password": {"file": f"{SECRETS_DIR}/db-passwords/bob"},
        },
        "lmsdwh": {"dsn_env": "HEPHAESTUS_DSN_LMSDWH"},
        "auth": {"dsn_env": "HEPHAESTUS_DSN_AUTH", "password": {"file": f"{SECRETS_DIR}/db-passwords/auth"}},
    }
    assert project["slack"] == {"webhook_file": f"{SECRETS_DIR}/slack/webhook-url"}
    # The custom values name heal.state.database (an earlier release's key): one `state:` now.
    assert project["heal"] == {"max_restarts": 5} and project["state"] == {"database": "lmsdwh"}
    assert project["policy"] == {"max_deletes": 3, "max_delete_share": 0.5, "concurrency": 4}
    assert project["ksqldb"] == {
        "kec": {"url": "http://ksqldb-kec.kafka:8088", "migrations": "/app/ksql_migrations/kec"},
        "lms": {
            "url": "https://ksqldb-lms.kafka:8088",
            "migrations": "/app/ksql/lms",
            "username": "ksql",
            "password": {"file": f"{SECRETS_DIR}/ksql-auth/password"},
            "stream": "LMSDWH_MIGRATION_EVENTS",
            "table": "LMSDWH_MIGRATION_SCHEMA_VERSIONS",
        },
    }


def test_every_referenced_secret_is_mounted_or_passed_by_reference(custom: list[dict[str, Any]]) -> None:
    project_text = json.dumps(project_file(custom))
    files = set(re.findall(rf"{SECRETS_DIR}/([^/\"]+)/([^\"]+)", project_text))
    assert {s for s, _ in files} == {"connect-auth", "connect-ca", "db-passwords", "slack", "ksql-auth"}
    for name, spec in pod_specs(custom):
        c = container(spec)
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        secrets = {v["secret"]["secretName"]: v for v in spec["volumes"] if "secret" in v}
        assert set(secrets) == {s for s, _ in files}, name
        for secret, volume in secrets.items():
            assert volume["secret"]["defaultMode"] == 0o440
            mount = mounts[volume["name"]]
            assert mount["mountPath"] == f"{SECRETS_DIR}/{secret}" and mount["readOnly"] is True
        env = {e["name"]: e for e in c["env"]}
        assert env["HEPHAESTUS_DSN_LMSDWH"]["valueFrom"] == {"secretKeyRef": {"name": "warehouse-dsn", "key": "lmsdwh"}}
        assert env["HEPHAESTUS_DSN_AUTH"]["valueFrom"] == {"secretKeyRef": {"name": "warehouse-dsn", "key": "auth"}}
        assert env["HEPHAESTUS_PROJECT"]["value"] == "/etc/hephaestus/project/hephaestus.yaml"
        assert env["HEPHAESTUS_PUSHGATEWAY"]["value"] == "http://pushgateway.monitoring:9091"
        assert env["PGCONNECT_TIMEOUT"]["value"] == "10"


@pytest.mark.parametrize("values", ["default", "custom"])
def test_no_secret_value_is_rendered(default: list[dict[str, Any]], custom: list[dict[str, Any]], values: str) -> None:
    docs = default if values == "default" else custom
    assert not of_kind(docs, "Secret")
    plain_env = {"HEPHAESTUS_PROJECT", "HOME", "HEPHAESTUS_PUSHGATEWAY", "PGCONNECT_TIMEOUT"}
    for name, spec in pod_specs(docs):
        for e in container(spec)["env"]:
            assert e["name"] in plain_env or set(e.get("valueFrom", {})) == {"secretKeyRef"}, (name, e)
    project = project_file(docs)
    for db in (project.get("databases") or {}).values():
        assert "password=" not in db.get("dsn", "").replace(" ", "")


def test_the_templates_never_read_secrets_from_the_cluster() -> None:
    """`lookup` would copy a live Secret's value into the manifest; the chart has none."""
    for template in (CHART / "templates").iterdir():
        assert not re.search(r"\blookup\b", template.read_text()), template.name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "clusters.platforms.password=hunter2"], "additional properties 'password' not allowed"),
        (["--set", "slack.webhook=https://hooks.example/T0/B0/x"], "additional properties 'webhook' not allowed"),
        (["--set", "databases.bob.password=hunter2"], "additional properties 'password' not allowed"),
        (["--set", "databases.bob.dsn=host=db user=u password=hunter2"], "databases.bob.dsn holds a password"),
        (["--set", "databases.bob.passwordSecret.name=db"], "databases.bob.passwordSecret: name both"),
        (["--set", "clusters.platforms.url=kafka-connect:8083"], "/clusters/platforms/url"),
    ],
)
def test_values_that_would_leak_or_break_are_refused(helm: str, args: list[str], message: str) -> None:
    error = render_error(helm, *args)
    assert message in error
    if "dsn" in message:
        assert "hunter2" not in error


# --- the image the chart runs ----------------------------------------------------------------


def test_the_dockerfile_agrees_with_the_chart() -> None:
    """What the chart relies on (tests/stack/test_image_hooks.py builds and runs the image)."""
    dockerfile = (REPO / "Dockerfile").read_text()
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile, re.M)
    assert base and re.fullmatch(r"python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base[1]), (
        "the base is pinned by digest"
    )
    assert "FROM ${RUNTIME_IMAGE}\n" in dockerfile and "ARG RUNTIME_IMAGE=${PYTHON_IMAGE}" in dockerfile
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    user = re.findall(r"^USER (\d+):(\d+)$", final_stage, re.M)
    assert user == [(str(values["podSecurityContext"]["runAsUser"]), str(values["podSecurityContext"]["runAsGroup"]))]
    assert f"WORKDIR {values['desiredStateDir']}" in final_stage
    assert "HEPHAESTUS_PROJECT=/etc/hephaestus/project/hephaestus.yaml" in final_stage
    assert "for d in connectors definitions catalogs schemas ksql_migrations" in dockerfile
    allowed = {ln[1:].rstrip("/") for ln in (REPO / ".dockerignore").read_text().splitlines() if ln.startswith("!")}
    assert {
        "hephaestus",
        "pyproject.toml",
        "README.md",
        "connectors",
        "definitions",
        "catalogs",
        "schemas",
        "ksql_migrations",
    } <= allowed


def test_the_exporter_is_off_by_default_and_renders_a_scrapable_deployment(
    helm: str, default: list[dict[str, Any]]
) -> None:
    assert not [d for d in default if d["kind"] in ("Deployment", "Service")]
    docs = render(
        helm,
        "--set",
        "exporter.enabled=true",
        "--set",
        "exporter.port=9555",
        "--set",
        "clusters.platforms.schemaRegistryUrl=http://registry:8081",
    )
    (deployment,) = of_kind(docs, "Deployment")
    (service,) = of_kind(docs, "Service")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["restartPolicy"] == "Always"
    assert container["args"] == ["exporter", "--listen", "0.0.0.0:9555", "--interval", "60"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9555}]
    assert service["metadata"]["annotations"]["prometheus.io/port"] == "9555"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "exporter"
    project = next(d for d in of_kind(docs, "ConfigMap"))["data"]["hephaestus.yaml"]
    assert "schema_registry_url: http://registry:8081" in project
