"""Where the benchmarks find the stack: dev/stack/env.sh's variables, with its defaults. A stack
on its own ports (HEPH_CONNECT_PORT=38083 … dev/stack/up) is measured by exporting the same
variables to the benchmark (issue 47: the benchmarks hard-coded the CI stack's ports)."""

from __future__ import annotations

import os

CONNECT = f"http://{os.environ.get('HEPH_CONNECT_HOST', '127.0.0.1')}:{os.environ.get('HEPH_CONNECT_PORT', '28083')}"
BOOTSTRAP = f"{os.environ.get('HEPH_KAFKA_HOST', '127.0.0.1')}:{os.environ.get('HEPH_KAFKA_PORT', '29092')}"
PG_HOST = os.environ.get("HEPH_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("HEPH_PG_PORT", "25432")
PG_DSN = f"host={PG_HOST} port={PG_PORT} user=postgres password=postgres"
JDBC_URL = f"jdbc:postgresql://{PG_HOST}:{PG_PORT}/postgres"
