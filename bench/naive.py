"""The naive sequential tool, the contender in bench/apply_ab.py: what the reference's Go upsert
job does, honestly done (issue 15).

For each connector file, one after the other: `GET /connectors/{name}/config`; on 404 or a
different config `PUT /connectors/{name}/config`; after a PUT, poll `GET …/status` until the
connector and all its tasks are RUNNING (or FAILED: reported, go on). One reused keep-alive
connection (http.client, the lightest client there is), no sleeps but the poll interval, which
is kept short (20 ms) in the contender's favour.

    python bench/naive.py --url http://127.0.0.1:28083 connectors/bench/sink
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import ports  # bench/ports.py: the stack's ports, from dev/stack/env.sh's variables

POLL_S = 0.02
TIMEOUT_S = 180.0


class Connect:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)
        self.requests = 0

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"} if data else {}
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        self.requests += 1
        return response.status, (json.loads(raw) if raw else None)


def upsert(connect: Connect, name: str, config: dict[str, str]) -> str:
    path = f"/connectors/{quote(name, safe='')}"
    status, live = connect.call("GET", f"{path}/config")
    if status == 200 and {k: v for k, v in live.items() if k != "name"} == config:
        return "unchanged"
    status, answer = connect.call("PUT", f"{path}/config", config)
    if status not in (200, 201):
        return f"failed: {status} {answer}"
    return wait_running(connect, path)


def wait_running(connect: Connect, path: str) -> str:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        status, st = connect.call("GET", f"{path}/status")
        if status == 200:
            states = [st["connector"]["state"], *(t["state"] for t in st.get("tasks", []))]
            if "FAILED" in states:
                return "FAILED"
            if st.get("tasks") and all(s == "RUNNING" for s in states):
                return "RUNNING"
        time.sleep(POLL_S)
    return "timeout"


def run(url: str, folder: Path) -> tuple[dict[str, int], int]:
    connect = Connect(url)
    outcomes: dict[str, int] = {}
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text())
        outcome = upsert(connect, doc["name"], doc["config"])
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes, connect.requests


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default=ports.CONNECT)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    outcomes, requests = run(args.url, args.folder)
    print(json.dumps({"outcomes": outcomes, "requests": requests}))
    sys.exit(0 if set(outcomes) <= {"unchanged", "RUNNING"} else 1)


if __name__ == "__main__":
    main()
