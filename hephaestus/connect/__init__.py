"""Kafka Connect REST client: typed errors, retries (tenacity) on transient failures only."""

from hephaestus.connect.client import ConnectClient
from hephaestus.connect.errors import (
    ConnectConflict,
    ConnectError,
    ConnectorNotFound,
    ConnectUnavailable,
    InvalidConnectorConfig,
    NonStringConfigValue,
    NotConnectApi,
)
from hephaestus.connect.models import (
    ConnectorStatus,
    LiveConnector,
    Plugin,
    TaskState,
    ValidationResult,
)
from hephaestus.http import RetryPolicy

__all__ = [
    "ConnectClient",
    "ConnectConflict",
    "ConnectError",
    "ConnectUnavailable",
    "ConnectorNotFound",
    "ConnectorStatus",
    "InvalidConnectorConfig",
    "LiveConnector",
    "NonStringConfigValue",
    "NotConnectApi",
    "Plugin",
    "RetryPolicy",
    "TaskState",
    "ValidationResult",
]
