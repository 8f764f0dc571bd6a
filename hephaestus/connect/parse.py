"""Connect's JSON answers → model values. Pure: the client hands in decoded JSON.

A malformed answer raises `MalformedAnswer` naming the field, never its value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hephaestus.connect.models import (
    UNKNOWN,
    ConnectorStatus,
    LiveConnector,
    Plugin,
    TaskState,
    ValidationResult,
)
from hephaestus.connect.redact import redact
from hephaestus.secrets import REDACTOR


class MalformedAnswer(ValueError):
    """Connect answered with JSON of an unexpected shape."""


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"expected a JSON object at {where}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedAnswer(f"expected a JSON array at {where}")
    return value


def document(body: Any) -> dict[str, Any]:
    """Any JSON object, passed on as is; an empty answer (204) is {}."""
    return {} if body is None else _obj(body, "answer")


def kafka_cluster_id(body: Any) -> str:
    """`GET /` (`RootResource`'s ServerInfo: version, commit, kafka_cluster_id): the Kafka
    cluster this Connect cluster stores its configs and offsets in."""
    found = _obj(body, "answer").get("kafka_cluster_id")
    if not isinstance(found, str) or not found:
        raise MalformedAnswer("expected a string at kafka_cluster_id")
    return found


def config(body: Any, where: str = "config") -> dict[str, str]:
    # Connect stores strings; a null value (possible through the REST API) carries nothing
    # a desired config could match, so it is dropped rather than turned into "None".
    return {str(k): str(v) for k, v in _obj(body, where).items() if v is not None}


def _task(body: Any, where: str) -> TaskState:
    task = _obj(body, where)
    return TaskState(
        int(task.get("id", -1)),
        str(task.get("state", UNKNOWN)),
        str(task.get("worker_id", "")),
        _opt(task.get("trace")),
        str(task.get("version") or ""),
    )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def status(body: Any, where: str = "status") -> ConnectorStatus:
    """`GET /connectors/{name}/status` (also the `status` part of the expanded list)."""
    doc = _obj(body, where)
    conn = _obj(doc.get("connector", {}), f"{where}.connector")
    tasks = tuple(_task(t, f"{where}.tasks[]") for t in _list(doc.get("tasks", []), f"{where}.tasks"))
    return ConnectorStatus(
        str(doc.get("name", "")),
        str(doc.get("type", "unknown")),
        str(conn.get("state", UNKNOWN)),
        str(conn.get("worker_id", "")),
        _opt(conn.get("trace")),
        tuple(sorted(tasks, key=lambda t: t.id)),
        str(conn.get("version") or ""),
    )


def fleet(body: Any) -> dict[str, LiveConnector]:
    """`GET /connectors?expand=info&expand=status`, keyed and ordered by connector name.

    Connect itself leaves out a connector it cannot describe (deleted meanwhile); one without
    `info` is left out the same way, since guessing its config would plan a false update.
    """
    doc = _obj(body, "connectors")
    live = (_live(name, _obj(doc[name], name)) for name in sorted(doc))
    return {c.name: c for c in live if c is not None}


def statuses(body: Any) -> dict[str, ConnectorStatus]:
    """`GET /connectors?expand=status`, keyed by name; one without status is UNKNOWN (it
    lags a create), so a waiter keeps waiting for it rather than forgetting it."""
    doc = _obj(body, "connectors")
    return {
        name: status(_obj(doc[name], name).get("status") or {"name": name}, f"{name}.status") for name in sorted(doc)
    }


def task_configs(body: Any) -> list[dict[str, str]]:
    """`GET /connectors/{name}/tasks`: each task's config, in task order."""
    tasks = [_obj(t, "tasks[]") for t in _list(body, "tasks")]
    ordered = sorted(tasks, key=lambda t: int(_obj(t.get("id", {}), "tasks[].id").get("task", -1)))
    return [config(t.get("config", {}), "tasks[].config") for t in ordered]


def _live(name: str, entry: dict[str, Any]) -> LiveConnector | None:
    if "info" not in entry:
        return None
    info = _obj(entry["info"], f"{name}.info")
    found = status(entry["status"], f"{name}.status") if "status" in entry else None
    st = found or _status_unknown(name, info)
    kind = str(info.get("type") or st.type or "unknown")
    return LiveConnector(
        name,
        kind,
        st.state,
        st.worker_id,
        st.trace,
        st.tasks,
        st.version,
        config=config(info.get("config", {}), f"{name}.info.config"),
    )


def _status_unknown(name: str, info: dict[str, Any]) -> ConnectorStatus:
    # Without status we still know how many tasks the connector has, from its info.
    ids = sorted(
        int(_obj(t, f"{name}.info.tasks[]").get("task", -1)) for t in _list(info.get("tasks", []), f"{name}.info.tasks")
    )
    tasks = tuple(TaskState(i, UNKNOWN, "", None) for i in ids)
    return ConnectorStatus(name, str(info.get("type", "unknown")), UNKNOWN, "", None, tasks)


def password_keys(body: Any) -> frozenset[str]:
    """`GET /connector-plugins/{class}/config`: the names of the keys typed PASSWORD."""
    items = (_obj(i, "config[]") for i in _list(body, "config"))
    return frozenset(str(i.get("name")) for i in items if str(i.get("type", "")).upper() == "PASSWORD")


def _password_key(item: Any) -> str | None:
    definition = _obj(item, "validate.configs[]").get("definition") or {}
    typed = str(_obj(definition, "configs[].definition").get("type", "")).upper()
    return str(definition.get("name")) if typed == "PASSWORD" else None


def validation(body: Any, connector_class: str, masked: Iterable[str]) -> ValidationResult:
    """The validate answer; error texts are masked since Connect echoes offending values.
    Keys whose definition is typed PASSWORD are taught to the redactor on the way."""
    doc = _obj(body, "validate")
    hidden = tuple(masked)
    errors: dict[str, tuple[str, ...]] = {}
    configs = _list(doc.get("configs", []), "validate.configs")
    REDACTOR.learn_secret_keys(k for k in map(_password_key, configs) if k)
    for item in configs:
        # Seen on Connect 4.3 with Debezium 3.6: a key Connect did not evaluate has value null.
        value = _obj(_obj(item, "validate.configs[]").get("value") or {}, "configs[].value")
        found = tuple(redact(str(e), hidden) for e in _list(value.get("errors", []), "errors"))
        if found:
            errors[str(value.get("name", ""))] = found
    return ValidationResult(connector_class, int(doc.get("error_count", 0)), errors)


def plugins(body: Any) -> list[Plugin]:
    return [_plugin(_obj(p, "connector-plugins[]")) for p in _list(body, "connector-plugins")]


def _plugin(doc: dict[str, Any]) -> Plugin:
    return Plugin(str(doc.get("class", "")), str(doc.get("type", "")), str(doc.get("version", "")))
