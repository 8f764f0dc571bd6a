"""A rename that keeps the connector's place in its stream, with Connect's offsets API (edge).

stop the old one (its tasks commit their offsets as they stop) -> read its offsets -> create
the new one STOPPED -> write those offsets to it -> start it -> delete the old one. Until the
new connector has its offsets, a failure is rolled back: the new one (which never ran) is
deleted and the old one resumed, so nothing is lost and the next run can try again. After
that point the new connector is the one that counts: a failure is reported, never undone.
"""

from __future__ import annotations

from typing import Any

from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.reconciler.plan import Step


class RenameFailed(HephaestusError):
    """A rename stopped part-way; the message says where and what state it left."""


def rename(client: ConnectClient, step: Step, state: str) -> str:
    """`state`: what the new connector should end in (RUNNING, PAUSED or STOPPED)."""
    old = step.renamed_from
    client.stop(old)
    created = False
    try:
        offsets = _positions(client.offsets(old))
        created = client.create(step.name, dict(step.config), initial_state="STOPPED") == "created"
        if offsets:
            client.alter_offsets(step.name, offsets)
    except (ConnectError, ValueError) as exc:
        raise RenameFailed(
            f"rename from {old} failed before the offsets moved: {exc}; {_roll_back(client, step, created)}"
        ) from exc
    detail = f"renamed from {old}, {len(offsets)} offset partitions carried over"
    try:
        _start(client, step.name, state)
    except ConnectError as exc:
        raise RenameFailed(f"{detail}, but {step.name} did not start (STOPPED; {old} STOPPED too): {exc}") from exc
    try:
        client.delete(old)
    except ConnectError as exc:
        raise RenameFailed(f"{detail}, but the old connector {old} is left STOPPED: {exc}") from exc
    return detail


def _positions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The partitions that have a position (a JSON object is checked by the client)."""
    offsets = doc.get("offsets")
    if not isinstance(offsets, list):
        raise ValueError(f"unexpected offsets answer: 'offsets' is {type(offsets).__name__}, not a list")
    return [o for o in offsets if isinstance(o, dict) and o.get("offset") is not None]


def _start(client: ConnectClient, name: str, state: str) -> None:
    """From STOPPED to `state` (a FAILED connector's target is RUNNING)."""
    if state == "PAUSED":
        client.pause(name)  # a PAUSED connector's tasks start paused: no record is read
    elif state != "STOPPED":
        client.resume(name)


def _roll_back(client: ConnectClient, step: Step, created: bool) -> str:
    try:
        if created:
            client.delete(step.name)
        _start(client, step.renamed_from, step.live_state)
    except ConnectError as exc:
        return f"roll-back failed too ({exc}): {step.renamed_from} may be STOPPED, {step.name} may exist"
    return f"rolled back: {step.renamed_from} is {step.live_state or 'RUNNING'} again"
