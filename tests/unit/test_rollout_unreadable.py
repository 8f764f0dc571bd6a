"""A rollback whose cluster cannot be read any more (test_rollout_run.py's world: the CLI, the
strict Connect double on loopback, Kafka through the seam): the rollback's gate judges the live
configs, so with none to judge nothing is put back, and the report says why.

The fault (the double's fault hook) answers 401 with Kafka Connect's JSON error body, as a
worker whose basic-auth credentials rotated does; it is narrowed to the listing the rollback's
gate reads (`expand=info`), so the canary's readiness and gate reads (`expand=status`) still
pass and the failure lands where this test looks: in the rollback."""

from __future__ import annotations

import httpx

from tests.connect_double import ConnectDouble
from tests.unit import test_rollout_run
from tests.unit.test_rollout_run import Rollout, dlq_fills

world = test_rollout_run.world


def test_a_cluster_gone_unreadable_after_the_canary_leaves_it_as_written_and_says_why(world: Rollout) -> None:
    world.fleet()
    down: list[bool] = []

    def unreadable(request: httpx.Request, double: ConnectDouble) -> httpx.Response | None:
        if request.method == "PUT" and request.url.path == "/connectors/s0/config":
            down.append(True)
            dlq_fills(world, "s0")  # the canary parks its records: its gate fails
        elif down and request.url.path == "/connectors" and "info" in request.url.params.get_list("expand"):
            return httpx.Response(401, json={"error_code": 401, "message": "Unauthorized"})
        return None

    world.double.faults.append(unreadable)
    code, cluster, _ = world.run()
    assert code == 1 and cluster["rollout"]["rollback"] == []
    (line,) = [x for x in cluster["rollout"]["report"] if x.startswith("rollback not taken")]
    assert line.startswith("rollback not taken: rollback: cannot read cluster c: ") and "401" in line, line
    assert world.puts() == ["/connectors/s0/config"] and world.double.connectors["s0"].config["tasks.max"] == "2"
