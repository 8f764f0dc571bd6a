"""Kafka record bytes made readable: JSON, Confluent wire-format Avro, text, else a short base64.

Confluent's wire format is a zero magic byte, a 4-byte big-endian schema id, then the Avro
binary body; the schema comes from the Schema Registry (`GET /schemas/ids/{id}` answers
`{"schema": "<the schema as a JSON string>"}`, `schemaType` absent for Avro). Decoding never
raises: a record that cannot be read is shown as what it is, because the records an operator
looks at (a DLQ's) are exactly the ones something failed to read.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from typing import Any

import httpx

from hephaestus import http
from hephaestus.errors import HephaestusError

PREVIEW_BYTES = 48


@dataclass(frozen=True)
class Decoded:
    kind: str  # "null", "json", "avro", "text", "binary"
    value: Any  # the decoded value (JSON-able), or a description for binary
    schema_id: int | None = None


class RegistryError(HephaestusError):
    """A schema the registry did not give; `transient`: asking again may get it."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


# A registry restarting or behind a busy proxy: a GET is safe to ask again.
_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})


class SchemaRegistry:
    """Schemas by id from a Schema Registry, each fetched once (ids are immutable). Built on
    the shared HTTP edge: user info in the URL is its basic auth (and masked), https is
    verified, transient failures are retried (a GET, so an unanswered one is asked again)."""

    def __init__(
        self,
        url: str,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        retry: http.RetryPolicy = http.RetryPolicy(attempts=3),
    ) -> None:
        self._http = http.client(url, what="Schema Registry", timeout=timeout, transport=transport)
        self._retry = retry
        self._parsed: dict[int, Any] = {}

    def close(self) -> None:
        self._http.close()

    def schema(self, schema_id: int) -> Any:
        if schema_id not in self._parsed:
            self._parsed[schema_id] = self._fetch(schema_id)
        return self._parsed[schema_id]

    def _fetch(self, schema_id: int) -> Any:
        import fastavro

        doc = self._retry.retrying()(self._once, schema_id)  # transient failures asked again
        if doc.get("schemaType", "AVRO") != "AVRO":
            raise RegistryError(f"schema registry: schema {schema_id} is {doc['schemaType']}, not Avro")
        return fastavro.parse_schema(json.loads(doc["schema"]))

    def _once(self, schema_id: int) -> Any:
        where = f"schema registry: schema {schema_id}"
        try:
            response = self._http.get(f"/schemas/ids/{schema_id}")
        except httpx.TransportError as exc:
            raise RegistryError(f"{where}: {http.no_answer(exc).what}", transient=True) from exc
        if response.status_code != 200:
            raise RegistryError(f"{where}: HTTP {response.status_code}", response.status_code in _TRANSIENT_STATUS)
        try:
            doc = response.json()
        except ValueError as exc:
            raise RegistryError(f"{where}: the answer is not JSON") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("schema"), str):
            raise RegistryError(f"{where}: no schema in the answer")
        return doc


def decode(raw: bytes | None, registry: SchemaRegistry | None = None) -> Decoded:
    """What `raw` holds, as readable as it gets; never raises."""
    if raw is None:
        return Decoded("null", None)
    if len(raw) >= 5 and raw[0] == 0:
        return _avro(raw, registry)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _binary(raw)
    try:
        return Decoded("json", json.loads(text))
    except ValueError:
        return Decoded("text", text)


def _avro(raw: bytes, registry: SchemaRegistry | None) -> Decoded:
    schema_id = int.from_bytes(raw[1:5], "big")
    if registry is None:
        return Decoded(
            "binary", f"Avro (schema id {schema_id}; no schema registry configured), {_preview(raw)}", schema_id
        )
    import fastavro

    try:
        value = fastavro.schemaless_reader(io.BytesIO(raw[5:]), registry.schema(schema_id), None)
    except HephaestusError as exc:
        return Decoded("binary", f"Avro (schema id {schema_id}; {exc}), {_preview(raw)}", schema_id)
    except Exception as exc:  # noqa: BLE001 - a body that does not fit its schema
        return Decoded(
            "binary", f"Avro (schema id {schema_id}; unreadable: {type(exc).__name__}), {_preview(raw)}", schema_id
        )
    return Decoded("avro", _jsonable(value), schema_id)


def _binary(raw: bytes) -> Decoded:
    return Decoded("binary", _preview(raw))


def _preview(raw: bytes) -> str:
    more = f"… ({len(raw)} bytes)" if len(raw) > PREVIEW_BYTES else ""
    return "base64:" + base64.b64encode(raw[:PREVIEW_BYTES]).decode() + more


def _jsonable(value: Any) -> Any:
    """Avro values JSON can carry: bytes as base64, dates and decimals as text."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return "base64:" + base64.b64encode(value).decode()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
