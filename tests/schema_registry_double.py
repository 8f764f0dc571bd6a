"""A Schema Registry double, as strict as the real one on the one call hephaestus makes.

It stands in for a registry in the unit tests; the stack runs a real one (Apicurio Registry
2.4.2, its Confluent-compatible API at /apis/ccompat/v7), and tests/stack/test_avro.py asks
both the same calls and fails on any difference. Behaviour, from Confluent's Schema Registry
API reference, checked against that real registry: `GET /schemas/ids/{id}` answers 200
`{"schema": "<the schema as a JSON string>", "references": []}` (`schemaType` is left out for
Avro; `references` is there even when empty: a difference the real registry showed, fixed
here), an unknown id 404 `{"error_code": 40403, "message": "Schema not found"}`; any other
method 405 and any other path 404, so a client asking anything else fails loudly (their
`error_code` differs between registries: Confluent's 405/404, Apicurio's 0; hephaestus reads
only the status, and the stack test compares only that).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from tests.loopback import serving


def answer(schemas: dict[int, dict[str, Any]], method: str, path: str) -> tuple[int, dict[str, Any]]:
    parts = path.split("/")
    if len(parts) != 4 or parts[1:3] != ["schemas", "ids"] or not parts[3].isdigit():
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}
    if method != "GET":
        return 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
    schema = schemas.get(int(parts[3]))
    if schema is None:
        return 404, {"error_code": 40403, "message": "Schema not found"}
    return 200, {"schema": json.dumps(schema), "references": []}


def transport(schemas: dict[int, dict[str, Any]], seen: list[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        status, body = answer(schemas, request.method, request.url.path)
        return httpx.Response(status, json=body, headers={"content-type": "application/vnd.schemaregistry.v1+json"})

    return httpx.MockTransport(handle)


@contextmanager
def served(schemas: dict[int, dict[str, Any]]) -> Iterator[str]:
    """The double on a loopback port: yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            status, body = answer(schemas, self.command, self.path)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/vnd.schemaregistry.v1+json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - http.server's names

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as url:
        yield url
