"""The chart's dashboard and alerts (monitoring.*), checked by a real helm and a real promtool.

helm and promtool are built from the Go module proxy by dev/tools/helm and dev/tools/promtool
(cached per version). The chart is rendered with monitoring on: the ServiceMonitor and the
PrometheusRule match prometheus-operator's CRDs (from its Go module, unknown fields refused),
the PrometheusRule's groups pass `promtool check rules`, and `promtool test rules` runs
tests/golden/monitoring/*.test.yaml on them (input series, the alerts expected). Every
`hephaestus_*` name the dashboard, the rules and those tests use must be one hephaestus
exports: the set is read off the code, by running the exporter's page, `status_metrics`,
`slot_metrics`, `schema_metrics` and each job's `metrics_of` over sample inputs with every
optional field set, and parsing what prometheus-client renders.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import types
import typing
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hephaestus.notify.metrics import Metrics
from tests.unit.conftest import REPO
from tests.unit.test_helm import (
    CHART,
    EPHEMERAL,
    KUBE_VERSIONS,
    RENDER_KUBE_VERSION,
    helm_run,
    of_kind,
    render,
    render_error,
)

# Builds helm and promtool from the Go proxy: the packaging suite.
pytestmark = pytest.mark.packaging

DASHBOARD = CHART / "dashboards" / "hephaestus.json"
RULES = CHART / "rules" / "hephaestus.yaml"
GOLDEN = REPO / "tests" / "golden" / "monitoring"
NAME = re.compile(r"\bhephaestus_\w+")

EXPORTER = ("--set", "exporter.enabled=true")
PUSHGATEWAY = ("--set", "metrics.pushgateway=http://pushgateway.monitoring:9091")
PARTS = {"dashboard": "ConfigMap", "serviceMonitor": "ServiceMonitor", "prometheusRule": "PrometheusRule"}
# Everything on (release `deploy`, namespace `data`): what the golden promtool tests assume.
ALL_ON = (*EXPORTER, *PUSHGATEWAY, *(a for part in PARTS for a in ("--set", f"monitoring.{part}.enabled=true")))

# The alerts, the group each belongs to, and the labels their summary and description name.
ALERTS = {
    "HephaestusConnectorFailed": ("hephaestus.exporter", ("cluster", "connector")),
    "HephaestusClusterDown": ("hephaestus.exporter", ("cluster",)),
    "HephaestusSlotWalRetained": ("hephaestus.exporter", ("database", "slot")),
    "HephaestusSlotNotOk": ("hephaestus.exporter", ("database", "slot", "verdict")),
    "HephaestusDlqGrowing": ("hephaestus.exporter", ("cluster", "connector")),
    "HephaestusDlqUnresolved": ("hephaestus.exporter", ("cluster", "connector")),
    "HephaestusHealBudgetExhausted": ("hephaestus.exporter", ("cluster", "connector")),
    "HephaestusLagOverBudget": ("hephaestus.exporter", ("cluster",)),
    "HephaestusSchemaBreaking": ("hephaestus.exporter", ("pipeline", "effect")),
    "HephaestusSchemaColumnNotReplicated": ("hephaestus.exporter", ("pipeline", "effect")),
    "HephaestusSchemaUnknown": ("hephaestus.exporter", ("pipeline", "effect")),
    "HephaestusPipelineStale": ("hephaestus.exporter", ("source", "sink", "database")),
    "HephaestusExporterDown": ("hephaestus.exporter", ("instance",)),
    "HephaestusExporterStale": ("hephaestus.exporter", ("instance",)),
    "HephaestusAccuracyFailed": ("hephaestus.jobs", ("sink_database", "sink_table", "source_table")),
}
# The values key of each alert (monitoring.prometheusRule.alerts.<key>).
KEYS = {
    "HephaestusConnectorFailed": "connectorFailed",
    "HephaestusClusterDown": "clusterDown",
    "HephaestusSlotWalRetained": "slotWalRetained",
    "HephaestusSlotNotOk": "slotNotOk",
    "HephaestusDlqGrowing": "dlqGrowing",
    "HephaestusDlqUnresolved": "dlqUnresolved",
    "HephaestusHealBudgetExhausted": "healBudgetExhausted",
    "HephaestusLagOverBudget": "lagOverBudget",
    "HephaestusSchemaBreaking": "schemaBreaking",
    "HephaestusSchemaColumnNotReplicated": "schemaColumnNotReplicated",
    "HephaestusSchemaUnknown": "schemaUnknown",
    "HephaestusPipelineStale": "pipelineStale",
    "HephaestusExporterDown": "exporterDown",
    "HephaestusExporterStale": "exporterStale",
    "HephaestusAccuracyFailed": "accuracyFailed",
}


@pytest.fixture(scope="session")
def helm() -> str:
    return _tool("helm")


@pytest.fixture(scope="session")
def promtool() -> str:
    return _tool("promtool")


def _tool(name: str) -> str:
    built = subprocess.run(
        [str(REPO / "dev" / "tools" / name)], capture_output=True, text=True, timeout=1800, check=False
    )
    assert built.returncode == 0, f"dev/tools/{name} failed:\n{built.stderr}"
    return built.stdout.strip()


@pytest.fixture(scope="module")
def monitored(helm: str) -> list[dict[str, Any]]:
    return render(helm, *ALL_ON)


def prometheus_rule(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (rule,) = of_kind(docs, "PrometheusRule")
    return rule


def rules_of(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each alert of the PrometheusRule by name, with its group's name under `group`."""
    return {r["alert"]: {**r, "group": g["name"]} for g in prometheus_rule(docs)["spec"]["groups"] for r in g["rules"]}


def dashboard_configmaps(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in of_kind(docs, "ConfigMap") if "hephaestus.json" in d.get("data", {})]


def promtool_run(promtool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin"},
    )


def write_rules(docs: list[dict[str, Any]], path: Path) -> Path:
    """The PrometheusRule's groups as a Prometheus rule file."""
    path.write_text(yaml.safe_dump({"groups": prometheus_rule(docs)["spec"]["groups"]}, sort_keys=False, width=200))
    return path


# --- what renders, and when ----------------------------------------------------------------


def test_monitoring_is_off_by_default(helm: str) -> None:
    for docs in (render(helm), render(helm, *EXPORTER, *PUSHGATEWAY)):
        assert not of_kind(docs, "ServiceMonitor") and not of_kind(docs, "PrometheusRule")
        assert not dashboard_configmaps(docs)
        assert [d["metadata"]["name"] for d in of_kind(docs, "ConfigMap")] == ["deploy-hephaestus"]


@pytest.mark.parametrize("part", PARTS)
def test_each_part_renders_alone_and_carries_the_chart_labels(helm: str, part: str) -> None:
    docs = render(helm, *EXPORTER, *PUSHGATEWAY, "--set", f"monitoring.{part}.enabled=true")
    added = [d for d in docs if d["kind"] in ("ServiceMonitor", "PrometheusRule") or d in dashboard_configmaps(docs)]
    assert [d["kind"] for d in added] == [PARTS[part]]
    labels = added[0]["metadata"]["labels"]
    assert labels["app.kubernetes.io/part-of"] == "hephaestus"
    assert labels["app.kubernetes.io/instance"] == "deploy"
    assert labels["app.kubernetes.io/component"] == "monitoring"


def test_the_dashboard_is_labelled_for_grafanas_sidecar(helm: str, monitored: list[dict[str, Any]]) -> None:
    (cm,) = dashboard_configmaps(monitored)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["namespace"] == "data"
    assert json.loads(cm["data"]["hephaestus.json"]) == json.loads(DASHBOARD.read_text()), "the chart's file, as is"
    for kube in KUBE_VERSIONS:
        kubernetes_validate.validate(cm, kube, strict=True)
    (custom,) = dashboard_configmaps(
        render(
            helm,
            "--set",
            "monitoring.dashboard.enabled=true",
            "--set",
            "monitoring.dashboard.labelKey=example.com/dashboard",
            "--set",
            "monitoring.dashboard.labelValue=hephaestus",
            "--set",
            "monitoring.dashboard.namespace=grafana",
            "--set",
            "monitoring.dashboard.annotations.grafana_folder=Data",
        )
    )
    assert custom["metadata"]["labels"]["example.com/dashboard"] == "hephaestus"
    assert "grafana_dashboard" not in custom["metadata"]["labels"]
    assert custom["metadata"]["namespace"] == "grafana"
    assert custom["metadata"]["annotations"] == {"grafana_folder": "Data"}


def test_the_dashboard_has_its_panels_and_asks_for_datasource_and_cluster() -> None:
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["cluster"]["query"]["query"] == "label_values(hephaestus_cluster_up, cluster)"
    assert variables["cluster"]["multi"] and variables["cluster"]["includeAll"]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    titles = {p["title"] for p in panels}
    assert titles >= {
        "Clusters up",
        "Connectors by state",
        "Unhealthy connectors",
        "Failed tasks",
        "Tasks by state",
        "DLQ: unresolved vs total",
        "Consumer lag per sink",
        "Lag age per sink",
        "Freshness per pipeline",
        "Slot WAL retained",
        "Schema drift",
        "Heal: restarts vs budget",
        "Last accuracy run",
        "Check duration",
    }
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for p in panels:
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["datasource"] == p["datasource"], p["title"]
            # a connector's series are filtered by the cluster variable
            if re.search(r"hephaestus_(cluster|connector|sink|source|rollout|heal)_", t["expr"]):
                assert 'cluster=~"$cluster"' in t["expr"], (p["title"], t["expr"])


# The prometheus-operator CRDs the ServiceMonitor and the PrometheusRule are checked against:
# its Go module (the newest the Go proxy served) ships them under example/prometheus-operator-crd.
OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"


def closed(schema: Any) -> Any:
    """An OpenAPI schema that refuses unknown fields (the API server would prune them quietly)."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


@pytest.fixture(scope="session")
def crds() -> dict[str, Any]:
    found = subprocess.run(
        ["go", "mod", "download", "-json", OPERATOR], capture_output=True, text=True, timeout=600, check=False
    )
    assert found.returncode == 0, found.stdout + found.stderr
    folder = Path(json.loads(found.stdout)["Dir"]) / "example" / "prometheus-operator-crd"
    schemas = {}
    for kind, plural in (("ServiceMonitor", "servicemonitors"), ("PrometheusRule", "prometheusrules")):
        crd = yaml.safe_load((folder / f"monitoring.coreos.com_{plural}.yaml").read_text())
        (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
        assert crd["spec"]["names"]["kind"] == kind
        schemas[kind] = closed(v1["schema"]["openAPIV3Schema"])
    return schemas


@pytest.mark.parametrize("kind", ["ServiceMonitor", "PrometheusRule"])
def test_the_operator_objects_match_the_operators_crds(
    crds: dict[str, Any], monitored: list[dict[str, Any]], helm: str, kind: str
) -> None:
    custom = render(
        helm,
        *ALL_ON,
        "--set",
        "monitoring.serviceMonitor.scrapeTimeout=10s",
        "--set",
        "monitoring.prometheusRule.alertLabels.team=data",
    )
    for docs in (monitored, custom):
        (doc,) = of_kind(docs, kind)
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"
        errors = sorted(jsonschema.Draft7Validator(crds[kind]).iter_errors(doc), key=str)
        assert not errors, "\n".join(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
    bad = {**doc, "spec": {**doc["spec"], "endpoint": []}}
    assert list(jsonschema.Draft7Validator(crds[kind]).iter_errors(bad)), "an unknown field is refused"


def test_the_servicemonitor_scrapes_the_exporters_service(helm: str, monitored: list[dict[str, Any]]) -> None:
    (monitor,) = of_kind(monitored, "ServiceMonitor")
    (service,) = of_kind(monitored, "Service")
    assert monitor["metadata"]["name"] == service["metadata"]["name"] == "deploy-hephaestus-exporter"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["data"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]
    assert endpoint == {"port": "metrics", "path": "/metrics", "interval": "60s"}, "exporter.intervalSeconds"
    docs = render(
        helm,
        *ALL_ON,
        "--set",
        "monitoring.serviceMonitor.interval=30s",
        "--set",
        "monitoring.serviceMonitor.scrapeTimeout=10s",
        "--set",
        "monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
    )
    (monitor,) = of_kind(docs, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0] == {
        "port": "metrics",
        "path": "/metrics",
        "interval": "30s",
        "scrapeTimeout": "10s",
    }
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_the_exporter_listens_on_every_interface_at_its_port(helm: str) -> None:
    docs = render(helm, *EXPORTER, "--set", "exporter.port=9555", "--set", "exporter.intervalSeconds=30")
    (deployment,) = of_kind(docs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["exporter", "--listen", "0.0.0.0:9555", "--interval", "30"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--set", "monitoring.serviceMonitor.enabled=true"), "monitoring.serviceMonitor needs exporter.enabled"),
        (("--set", "monitoring.prometheusRule.enabled=true"), "monitoring.prometheusRule: no alert to render"),
        (
            ("--set", "monitoring.prometheusRule.alerts.clusterDown.for=5"),
            "/monitoring/prometheusRule/alerts/clusterDown/for",
        ),
        (("--set", "monitoring.prometheusRule.alerts.clusterDown.fro=5m"), "additional properties 'fro' not allowed"),
        (("--set", "monitoring.serviceMonitor.interval=1 minute"), "/monitoring/serviceMonitor/interval"),
        (("--set", 'monitoring.prometheusRule.selector={job="x"}'), "/monitoring/prometheusRule/selector"),
        (("--set", "monitoring.dashbord.enabled=true"), "additional properties 'dashbord' not allowed"),
    ],
)
def test_monitoring_values_that_make_no_sense_are_refused(helm: str, args: tuple[str, ...], message: str) -> None:
    assert message in render_error(helm, *EPHEMERAL, *args)


@pytest.mark.parametrize("values", ["exporter", "pushgateway", "both"])
def test_helm_lint_strict_passes_with_monitoring(helm: str, values: str) -> None:
    source = {"exporter": EXPORTER, "pushgateway": PUSHGATEWAY, "both": (*EXPORTER, *PUSHGATEWAY)}[values]
    on = [
        a
        for part in PARTS
        if part != "serviceMonitor" or values != "pushgateway"
        for a in ("--set", f"monitoring.{part}.enabled=true")
    ]
    result = helm_run(
        helm, "lint", "--strict", str(CHART), "--kube-version", RENDER_KUBE_VERSION, *EPHEMERAL, *source, *on
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_the_values_docs_show_render(helm: str, tmp_path: Path) -> None:
    """docs/helm.md's Monitoring example, as values: every part renders, the overrides land."""
    section = (REPO / "docs" / "helm.md").read_text().split("## Monitoring\n", 1)[1]
    example = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert example
    values = tmp_path / "monitoring.yaml"
    values.write_text(example[1])
    docs = render(helm, "-f", str(values))
    assert of_kind(docs, "ServiceMonitor") and dashboard_configmaps(docs)
    rules = rules_of(docs)
    assert rules["HephaestusConnectorFailed"]["for"] == "15m"
    assert rules["HephaestusSlotWalRetained"]["expr"].endswith("> 5368709120")
    assert prometheus_rule(docs)["metadata"]["labels"]["release"] == "kube-prometheus-stack"


# --- the alerts ------------------------------------------------------------------------------


def test_every_alert_has_a_severity_a_for_and_annotations_naming_what_failed(monitored: list[dict[str, Any]]) -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())["monitoring"]["prometheusRule"]["alerts"]
    rules = rules_of(monitored)
    assert set(rules) == set(ALERTS)
    for name, rule in rules.items():
        group, named = ALERTS[name]
        assert rule["group"] == group, name
        assert rule["labels"]["severity"] == defaults[KEYS[name]]["severity"], name
        assert rule["for"] == defaults[KEYS[name]]["for"], name
        text = rule["annotations"]["summary"] + rule["annotations"]["description"]
        assert set(rule["annotations"]) == {"summary", "description"}, name
        for label in named:
            assert f"$labels.{label}" in text, (name, label)


def test_the_exporters_series_are_those_of_this_release(monitored: list[dict[str, Any]], helm: str) -> None:
    """With the chart's ServiceMonitor, the job and namespace it scrapes as; set, the selector."""
    rules = rules_of(monitored)
    down = rules["HephaestusClusterDown"]["expr"]
    assert down == 'hephaestus_cluster_up{job="deploy-hephaestus-exporter",namespace="data"} == 0'
    assert rules["HephaestusAccuracyFailed"]["expr"] == "hephaestus_accuracy_match == 0"
    docs = render(
        helm,
        *ALL_ON,
        "--set-string",
        'monitoring.prometheusRule.selector=namespace="data"\\,service="x"',
        "--set-string",
        'monitoring.prometheusRule.pushedSelector=job="hephaestus_dwh_accuracy"',
        "--set",
        "monitoring.prometheusRule.alertLabels.team=data",
    )
    rules = rules_of(docs)
    assert rules["HephaestusClusterDown"]["expr"] == 'hephaestus_cluster_up{namespace="data",service="x"} == 0'
    assert rules["HephaestusAccuracyFailed"]["expr"] == 'hephaestus_accuracy_match{job="hephaestus_dwh_accuracy"} == 0'
    assert all(r["labels"]["team"] == "data" for r in rules.values())
    without_monitor = rules_of(render(helm, *EXPORTER, "--set", "monitoring.prometheusRule.enabled=true"))
    assert without_monitor["HephaestusClusterDown"]["expr"] == "hephaestus_cluster_up == 0"
    assert without_monitor["HephaestusExporterDown"]["expr"] == "absent(hephaestus_status_last_check_timestamp_seconds)"


def test_the_schema_alerts_match_every_drift_effect_once(monitored: list[dict[str, Any]]) -> None:
    """The effects the schema alerts select are those hephaestus_schema_drift carries (a
    misspelt one would never fire): the breaking ones, the added column's, unknown."""
    from hephaestus.drift.model import ADDED, BREAKING, CODES, UNKNOWN

    rules = rules_of(monitored)
    effects = {}
    for name in ("HephaestusSchemaBreaking", "HephaestusSchemaColumnNotReplicated", "HephaestusSchemaUnknown"):
        (matcher,) = re.findall(r'effect=~?"([^"]*)"', rules[name]["expr"])
        effects[name] = set(matcher.split("|"))
    assert effects == {
        "HephaestusSchemaBreaking": {c for c, kind in CODES.items() if kind == BREAKING},
        "HephaestusSchemaColumnNotReplicated": {c for c, kind in CODES.items() if kind == ADDED},
        "HephaestusSchemaUnknown": {UNKNOWN},
    }


def test_thresholds_and_for_come_from_values(helm: str) -> None:
    a = "monitoring.prometheusRule.alerts"
    rules = rules_of(
        render(
            helm,
            *ALL_ON,
            "--set",
            f"{a}.connectorFailed.for=30m",
            "--set",
            f"{a}.slotWalRetained.maxBytes=5368709120",
            "--set",
            f"{a}.dlqGrowing.window=1h",
            "--set",
            f"{a}.exporterStale.afterSeconds=900",
            "--set",
            f"{a}.dlqUnresolved.enabled=false",
            "--set",
            f"{a}.clusterDown.severity=page",
        )
    )
    assert rules["HephaestusConnectorFailed"]["for"] == "30m"
    assert "30m" in rules["HephaestusConnectorFailed"]["annotations"]["description"]
    assert rules["HephaestusSlotWalRetained"]["expr"].endswith("> 5368709120")
    assert "[1h]" in rules["HephaestusDlqGrowing"]["expr"]
    assert rules["HephaestusExporterStale"]["expr"].endswith("> 900")
    assert "HephaestusDlqUnresolved" not in rules
    assert rules["HephaestusClusterDown"]["labels"]["severity"] == "page"
    # afterSeconds 0: three exporter intervals
    stale = rules_of(render(helm, *ALL_ON, "--set", "exporter.intervalSeconds=120"))["HephaestusExporterStale"]
    assert stale["expr"].endswith("> 360")


def test_each_group_renders_with_what_feeds_it(helm: str) -> None:
    """Exporter alerts with the exporter, the accuracy alert with a Pushgateway to push to."""
    on = ("--set", "monitoring.prometheusRule.enabled=true")
    only_jobs = rules_of(render(helm, *PUSHGATEWAY, *on))
    assert set(only_jobs) == {"HephaestusAccuracyFailed"}
    only_exporter = rules_of(render(helm, *EXPORTER, *on))
    assert set(only_exporter) == set(ALERTS) - {"HephaestusAccuracyFailed"}
    error = render_error(
        helm, *EPHEMERAL, *PUSHGATEWAY, *on, "--set", "monitoring.prometheusRule.alerts.accuracyFailed.enabled=false"
    )
    assert "no alert to render" in error


def test_the_rules_pass_promtool_check(promtool: str, monitored: list[dict[str, Any]], tmp_path: Path) -> None:
    rules = write_rules(monitored, tmp_path / "rules.yaml")
    result = promtool_run(promtool, "check", "rules", "--lint=all", "--lint-fatal", str(rules), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout


def test_the_alerts_fire_as_their_unit_tests_say(
    promtool: str, monitored: list[dict[str, Any]], tmp_path: Path
) -> None:
    """tests/golden/monitoring/*.test.yaml on the rendered rules: input series, the alerts
    expected at each time (pending counts as none)."""
    write_rules(monitored, tmp_path / "rules.yaml")
    tests = sorted(GOLDEN.glob("*.test.yaml"))
    assert tests
    for test in tests:
        shutil.copy(test, tmp_path / test.name)
    result = promtool_run(promtool, "test", "rules", *(t.name for t in tests), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # Every alert is shown firing at least once, and shown silent at least once.
    fired: set[str] = set()
    silent: set[str] = set()
    for test in tests:
        for group in yaml.safe_load(test.read_text())["tests"]:
            for case in group.get("alert_rule_test", []):
                (fired if case.get("exp_alerts") else silent).add(case["alertname"])
    assert fired == set(ALERTS) == silent | {"HephaestusAccuracyFailed", "HephaestusSlotNotOk"}


def test_promtool_tells_a_wrong_expectation(promtool: str, monitored: list[dict[str, Any]], tmp_path: Path) -> None:
    """The unit tests can fail: a FAILED connector expected silent at 12m is reported."""
    write_rules(monitored, tmp_path / "rules.yaml")
    test = yaml.safe_load((GOLDEN / "hephaestus.test.yaml").read_text())
    first = test["tests"][0]
    first["alert_rule_test"] = [{"eval_time": "12m", "alertname": "HephaestusConnectorFailed", "exp_alerts": []}]
    test["tests"] = [first]
    (tmp_path / "wrong.test.yaml").write_text(yaml.safe_dump(test))
    result = promtool_run(promtool, "test", "rules", "wrong.test.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert "HephaestusConnectorFailed" in result.stdout + result.stderr


# --- names: only what hephaestus exports -----------------------------------------------------


def _sample(hint: Any) -> Any:
    """A value of the type an optional field holds (`int | None` → an int)."""
    (kind,) = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
    samples: dict[Any, Any] = {bool: True, int: 3, float: 2.5, str: "x", tuple[str, ...]: ("x",)}
    assert kind in samples, f"no sample for {hint}: teach _sample this type"
    return samples[kind]


def filled(obj: Any) -> Any:
    """`obj` with every field still None set: what is left out of the gauges when unknown."""
    hints = typing.get_type_hints(type(obj))
    unset = {f.name: _sample(hints[f.name]) for f in dataclasses.fields(obj) if getattr(obj, f.name) is None}
    return dataclasses.replace(obj, **unset)


def _names(metrics: Metrics) -> set[str]:
    text = generate_latest(metrics.registry).decode()
    families = list(text_string_to_metric_families(text))
    return {f.name for f in families} | {s.name for f in families for s in f.samples}


def _views() -> list[Any]:
    from hephaestus.status.model import ClusterView, ConnectorView

    sink = ConnectorView(
        "p",
        "prod_acme_sink",
        "sink",
        "FAILED",
        ((0, "FAILED"),),
        restarts=10,
        budget=10,
        desired="RUNNING",
        problems=("connector FAILED",),
    )
    source = ConnectorView("p", "prod_acme_source", "source", "RUNNING", ((0, "RUNNING"),), restarts=1, budget=10)
    return [filled(ClusterView("p", "http://p", (filled(sink), filled(source)), errors=("kafka",)))]


def _slots() -> Any:
    from hephaestus.fleet.read import SlotReport
    from hephaestus.fleet.slots import Judged, Slot

    slot = filled(Slot("bob", "prod_acme_bob", "pgoutput", True, None, None, None, dbname="bob"))
    return SlotReport((Judged(slot, "p/prod_acme_source", "ok", ""), Judged(slot, None, "orphan", "")), ("auth",))


def _schema() -> Any:
    """A schema drift report: one pipeline a dropped column breaks, one in step."""
    from hephaestus.drift.model import DriftReport, Finding

    broken, fine = "bob.public.users->lmsdwh.public.users", "bob.public.courses->lmsdwh.public.courses"
    dropped = Finding("sink-write-fails", broken, "users.email", "dropped at the source", sinks=("s",))
    return DriftReport((dropped,), (broken, fine))


def _exporter_page(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Metrics:
    """The exporter's page after one round of checks: Connect's listing and the slots' read
    replaced by the samples above, the rest of the round as it runs."""
    from hephaestus.project import load_project
    from hephaestus.status import exporter

    (tmp / "c").mkdir()
    project = tmp / "hephaestus.yaml"
    project.write_text("clusters:\n  p: {url: 'http://127.0.0.1:9', connectors: c, rollout: {lag_budget: 500}}\n")
    monkeypatch.chdir(tmp)
    monkeypatch.setattr(exporter, "listings", lambda clusters, **kw: {c.name: {} for c in clusters})
    monkeypatch.setattr(exporter, "fleet_status", lambda project, clusters, listed, read, schema, **kw: _views())
    monkeypatch.setattr(exporter, "report", lambda project, **kw: _slots())
    return exporter.Exporter(load_project(project), 60).check_all()


def _job_metrics() -> list[Metrics]:
    """What the jobs push to the Pushgateway: heal, dwh_accuracy, reconcile."""
    from hephaestus.accuracy import publish
    from hephaestus.accuracy.model import (
        AccuracyReport,
        Counts,
        Endpoint,
        Filters,
        KeyDiff,
        KeyList,
        TablePair,
        TableResult,
    )
    from hephaestus.generator.model import AccuracySpec, TableRef
    from hephaestus.heal import metrics as heal
    from hephaestus.heal.run import ClusterHeal, ConnectorHeal
    from hephaestus.reconciler import metrics as reconcile
    from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
    from hephaestus.reconciler.plan import Plan, Step

    items = (
        ConnectorHeal("a", "restart", "", healed=False, failed_tasks=(0,)),
        ConnectorHeal("b", "exhausted", "", failed_tasks=(1,)),
    )
    users = TableRef("public", "users")
    pair = TablePair(Endpoint("bob", users), Endpoint("lmsdwh", users), False, None, AccuracySpec(), "bob.yaml")
    keys = KeyDiff(KeyList(2, ()), KeyList(1, ()), KeyList(1, ()), 5)
    result = filled(TableResult(pair, "mismatch", Counts(10, 8), Filters("", ""), "s", 5, 0, keys))
    plan = Plan("p", (Step("create", "a"), Step("update", "b")))
    outcome = ClusterOutcome("p", "http://p", plan, applied=True, writes=1, results=(StepResult("a", "create", True),))
    return [
        heal.metrics_of([ClusterHeal("p", "http://p", items), ClusterHeal("q", "http://q", error="down")], now=1.0),
        publish.metrics_of(AccuracyReport((result, TableResult(pair, "error", error="boom")), True, 1.0), now=1.0),
        reconcile.metrics_of([outcome, ClusterOutcome("q", "http://q", None, error="down")], False, now=1.0),
    ]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    from hephaestus.status.metrics import schema_metrics, slot_metrics, status_metrics

    with pytest.MonkeyPatch.context() as monkeypatch:
        page = _exporter_page(tmp_path_factory.mktemp("exporter"), monkeypatch)
    registries = [
        page,
        status_metrics(_views(), now=1.0),
        slot_metrics(_slots()),
        schema_metrics(_schema()),
        *_job_metrics(),
    ]
    names = set().union(*map(_names, registries))
    return {n for n in names if n.startswith("hephaestus_")}


def unknown_names(text: str, exported: set[str]) -> set[str]:
    """The `hephaestus_*` tokens of `text` hephaestus does not export."""
    return set(NAME.findall(text)) - exported


def _series_names(test: Path) -> str:
    """The metric names of a promtool test's input series (its label values are not names)."""
    loaded = yaml.safe_load(test.read_text())
    return " ".join(s["series"].split("{")[0] for t in loaded["tests"] for s in t.get("input_series", []))


def test_the_exporter_and_the_jobs_export_what_the_brief_names(exported: set[str]) -> None:
    """The set the next test checks against is read off the code; it holds at least these."""
    assert exported >= {
        f"hephaestus_{n}"
        for n in (
            "cluster_up",
            "cluster_last_check_timestamp_seconds",
            "exporter_check_duration_seconds",
            "status_last_check_timestamp_seconds",
            "connector_healthy",
            "connector_state",
            "connector_failed_tasks",
            "connector_tasks",
            "connector_heal_restarts",
            "connector_heal_budget",
            "sink_dlq_records",
            "sink_dlq_unresolved_records",
            "sink_consumer_lag_records",
            "sink_consumer_lag_age_seconds",
            "source_slot_retained_bytes",
            "source_slot_unconfirmed_bytes",
            "source_slot_confirmed_lsn_bytes",
            "rollout_lag_budget_records",
            "slot_retained_bytes",
            "slot_active",
            "slot_ok",
            "slots_errors",
            "schema_drift",
            "heal_restarts",
            "heal_failed_connectors",
            "heal_failed_tasks",
            "heal_budget_exhausted",
            "heal_cluster_up",
            "heal_last_run_timestamp_seconds",
            "accuracy_match",
            "accuracy_last_run_timestamp_seconds",
            "accuracy_tables_mismatched",
            "accuracy_tables_failed",
            "reconcile_failed",
            "reconcile_last_run_timestamp_seconds",
        )
    }


def test_the_dashboard_and_the_rules_name_only_exported_metrics(
    exported: set[str], monitored: list[dict[str, Any]]
) -> None:
    texts = {
        str(DASHBOARD.relative_to(REPO)): DASHBOARD.read_text(),
        str(RULES.relative_to(REPO)): RULES.read_text(),
        "the rendered PrometheusRule": yaml.safe_dump(prometheus_rule(monitored)),
        **{str(t.relative_to(REPO)): _series_names(t) for t in sorted(GOLDEN.glob("*.test.yaml"))},
    }
    unknown = {where: sorted(found) for where, text in texts.items() if (found := unknown_names(text, exported))}
    assert not unknown, f"not exported by hephaestus: {unknown}"
    used = set().union(*(NAME.findall(t) for t in texts.values()))
    assert len(used) >= 25, "the check reads the names (a regex that matched nothing would pass anything)"


def test_the_name_check_reports_a_planted_bogus_name(exported: set[str]) -> None:
    board = DASHBOARD.read_text().replace("hephaestus_connector_failed_tasks", "hephaestus_connector_failed_taskz", 1)
    assert unknown_names(board, exported) == {"hephaestus_connector_failed_taskz"}
    rules = RULES.read_text().replace("hephaestus_cluster_up", "hephaestus_cluster_upp")
    assert unknown_names(rules, exported) == {"hephaestus_cluster_upp"}
    assert unknown_names("rate(hephaestus_bogus_total[5m])", exported) == {"hephaestus_bogus_total"}


def test_every_optional_field_of_the_samples_is_set() -> None:
    """A field added to a view later is filled by `filled`, so its gauge is in the set too."""
    for obj in (*_views(), *_views()[0].connectors, _slots().judged[0].slot):
        unset = [f.name for f in dataclasses.fields(obj) if getattr(obj, f.name) is None]
        assert not unset, (type(obj).__name__, unset)
    assert isinstance(_sample(int | None), int) and isinstance(_sample(types.NoneType | str), str)
