"""What Kafka Connect reports, as frozen values. No I/O here: `parse` builds these from JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

RUNNING = "RUNNING"
FAILED = "FAILED"
UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class TaskState:
    id: int
    state: str
    worker_id: str
    trace: str | None = None
    version: str = ""  # the plugin version it runs (Connect 4.1+, KIP-891; "" before)


def _healthy(state: str, tasks: tuple[TaskState, ...]) -> bool:
    # A RUNNING connector with no tasks yet is not doing work (tasks are assigned after a
    # rebalance, or the connector produced no task configs), so it does not count as healthy.
    # STOPPED/PAUSED connectors are never healthy, whatever their (empty) task list says.
    return state == RUNNING and bool(tasks) and all(t.state == RUNNING for t in tasks)


@dataclass(frozen=True)
class ConnectorStatus:
    """`GET /connectors/{name}/status`: state only, no config (the status topic's view)."""

    name: str
    type: str
    state: str
    worker_id: str
    trace: str | None
    tasks: tuple[TaskState, ...]
    version: str = ""  # the plugin version it runs (Connect 4.1+, KIP-891; "" before)

    @property
    def healthy(self) -> bool:
        return _healthy(self.state, self.tasks)

    @property
    def failed_tasks(self) -> tuple[TaskState, ...]:
        return tuple(t for t in self.tasks if t.state == FAILED)

    @property
    def failure_traces(self) -> tuple[str | None, ...]:
        """The traces of what is FAILED (its tasks, then itself): a RUNNING task may still carry
        the trace of a failure a restart mended."""
        return (*(t.trace for t in self.failed_tasks), self.trace if self.state == FAILED else None)


@dataclass(frozen=True)
class LiveConnector(ConnectorStatus):
    """One connector of `fleet()`: its status plus its stored config.

    `type` is "source", "sink" or "unknown"; `state` is "UNKNOWN" when Connect gave no status.
    """

    config: dict[str, str] = field(default_factory=dict)

    @property
    def connector_class(self) -> str:
        return self.config.get("connector.class", "")

    @property
    def status(self) -> ConnectorStatus:
        return ConnectorStatus(self.name, self.type, self.state, self.worker_id, self.trace, self.tasks, self.version)


@dataclass(frozen=True)
class ValidationResult:
    """`PUT /connector-plugins/{class}/config/validate`: `errors` holds only keys with errors,
    with any config value that could be a secret masked out of the messages."""

    connector_class: str
    error_count: int
    errors: dict[str, tuple[str, ...]]

    @property
    def ok(self) -> bool:
        return self.error_count == 0 and not self.errors


@dataclass(frozen=True)
class Plugin:
    class_name: str
    type: str
    version: str
