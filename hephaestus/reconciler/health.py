"""Health of the connectors git manages, from the live listing (edge: may re-list once).

Drift is not only config: a managed connector that is FAILED, has FAILED tasks, or stays
UNASSIGNED past a grace period is not in the state git asks for either. UNASSIGNED is normal
for a moment during a rebalance, so the cluster is looked at again until the grace runs out
before one is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from hephaestus.connect import ConnectClient, ConnectError, ConnectorStatus
from hephaestus.connect.ready import failed, failure
from hephaestus.connect.redact import sensitive_values
from hephaestus.reconciler.plan import Desired, Unhealthy

UNASSIGNED = "UNASSIGNED"


def unassigned(st: ConnectorStatus) -> bool:
    return st.state == UNASSIGNED or any(t.state == UNASSIGNED for t in st.tasks)


def findings(
    desired: Mapping[str, Desired], live: Mapping[str, ConnectorStatus], grace_s: float
) -> tuple[Unhealthy, ...]:
    """Managed (in git) and live connectors that are FAILED or UNASSIGNED, in name order."""
    out = []
    for name in sorted(set(desired) & set(live)):
        st = live[name]
        # The values to mask are worked out only for a failure to report (a fleet is mostly healthy).
        reason = failure(st, sensitive_values(desired[name].config)) if failed(st) else None
        if reason is None and unassigned(st):
            reason = f"UNASSIGNED for more than {grace_s:.0f}s (tasks {[t.state for t in st.tasks]})"
        if reason:
            out.append(Unhealthy(name, reason))
    return tuple(out)


def past_grace(
    client: ConnectClient,
    desired: Mapping[str, Desired],
    live: Mapping[str, ConnectorStatus],
    grace_s: float,
    poll_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, ConnectorStatus]:
    """`live`, with managed UNASSIGNED connectors looked at again until they leave that state
    or the grace runs out (only what was UNASSIGNED is waited for; nothing when none is)."""
    waiting = {n for n in desired if n in live and unassigned(live[n])}
    current = dict(live)
    deadline = clock() + grace_s
    while waiting and clock() < deadline:
        time.sleep(poll_s)  # polling a condition, bounded by the grace deadline
        try:
            current.update(client.statuses())
        except ConnectError:
            break  # keep what was seen; the caller reports it as it stands
        waiting = {n for n in waiting if n in current and unassigned(current[n])}
    return current
