"""A rename, or a move between clusters, that keeps the connector's place in its stream, with
Connect's offsets API (edge).

stop the old one (its tasks commit their offsets as they stop) -> read its offsets -> create
the new one STOPPED -> write those offsets to it -> start it -> delete the old one. Until the
new connector has its offsets, a failure is rolled back: the new one (which never ran) is
deleted and the old one resumed, so nothing is lost and the next run can try again. After
that point the new connector is the one that counts: a failure is reported, never undone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from hephaestus.connect import ConnectClient, ConnectError
from hephaestus.errors import HephaestusError
from hephaestus.reconciler.plan import Step


class RenameFailed(HephaestusError):
    """A rename (or a move) stopped part-way; the message says where and what state it left."""


class Marks(Protocol):
    """A cluster's ownership record as a move sees it (`apply.Claims`): the cluster it leaves
    releases it before the delete and forgets it once Connect confirmed it; the cluster it goes
    to marks it `moving` before the first write, and forgets that when no copy came of it."""

    def release(self, name: str) -> None: ...

    def forget(self, name: str) -> None: ...

    def moving(self, name: str, source: str) -> None: ...


@dataclass(frozen=True)
class Peer:
    """The cluster a move leaves: its Connect client, and its ownership record."""

    client: ConnectClient
    marks: Marks | None = None


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
    failed = _undone(client, step.name, created, client, step.renamed_from, step.live_state)
    if failed is not None:
        return f"roll-back failed too ({failed}): {step.renamed_from} may be STOPPED, {step.name} may exist"
    return f"rolled back: {step.renamed_from} is {step.live_state or 'RUNNING'} again"


def _undone(
    here: ConnectClient, name: str, created: bool, back: ConnectClient, old: str, state: str
) -> ConnectError | None:
    """What a rename or a move that failed before its offsets landed leaves: the copy it
    `created` here deleted, and `old` on `back` started again in `state` (None: done)."""
    try:
        if created:
            here.delete(name)
        _start(back, old, state)
    except ConnectError as exc:
        return exc
    return None


def move(client: ConnectClient, step: Step, state: str, peer: Peer, marks: Marks | None = None) -> str:
    """stop on A → read its offsets → create STOPPED here → write them → start → delete on A.
    Taken up where a killed run left it: what each cluster runs says which steps are done.
    `marks`: this cluster's ownership record, which says `moving from A` before the first write."""
    try:
        if marks is not None:
            marks.moving(step.name, step.moved_from)  # a copy here is ours to finish, never a stranger's
    except HephaestusError as exc:  # no mark, no move: a copy left here would read as a stranger's
        raise RenameFailed(f"not applied: {exc}") from exc
    try:
        return _moved(client, step, state, peer)
    except (ConnectError, RenameFailed):
        if marks is not None and _state_of_known(client, step.name) is None:
            marks.forget(step.name)  # nothing came of it here: the mark must not outlive it
        raise


def _moved(client: ConnectClient, step: Step, state: str, peer: Peer) -> str:
    there, here = _state_of(peer.client, step.name), _state_of(client, step.name)
    if there is None:
        if here is None:
            raise RenameFailed(f"{step.name} runs on neither {step.moved_from} nor here: nothing to move")
        if here == "STOPPED":
            _start(client, step.name, state)
        return f"moved from {step.moved_from} by an earlier run, which deleted it there"
    peer.client.stop(step.name)
    detail = "already started here by an earlier run" if here not in (None, "STOPPED") else ""
    if not detail:
        detail = _carried(client, step, state, peer.client, created_before=here is not None)
    return _left(peer, step, f"moved from {step.moved_from}, {detail}")


def _carried(client: ConnectClient, step: Step, state: str, there: ConnectClient, created_before: bool) -> str:
    created = False
    try:
        offsets = _positions(there.offsets(step.name))
        if not created_before:
            created = client.create(step.name, dict(step.config), initial_state="STOPPED") == "created"
        if offsets:
            client.alter_offsets(step.name, offsets)
    except (ConnectError, ValueError) as exc:
        undone = _undo_move(client, step, created, there)
        raise RenameFailed(f"move from {step.moved_from} failed before the offsets moved: {exc}; {undone}") from exc
    try:
        _start(client, step.name, state)
    except ConnectError as exc:
        raise RenameFailed(
            f"{len(offsets)} offset partitions carried over, but {step.name} did not start here "
            f"(STOPPED here and on {step.moved_from}; the next run takes it up): {exc}"
        ) from exc
    return f"{len(offsets)} offset partitions carried over"


def _left(peer: Peer, step: Step, detail: str) -> str:
    """A's copy goes once this cluster runs it with A's offsets."""
    try:
        if peer.marks is not None:
            peer.marks.release(step.name)
        peer.client.delete(step.name)
    except (ConnectError, HephaestusError) as exc:
        raise RenameFailed(
            f"{detail}, but it is left STOPPED on {step.moved_from} (the next run deletes it): {exc}"
        ) from exc
    if peer.marks is not None:
        peer.marks.forget(step.name)
    return detail


def _state_of_known(client: ConnectClient, name: str) -> str | None:
    """`_state_of`, or "unknown" when the cluster does not answer (its mark is then kept)."""
    try:
        return _state_of(client, name)
    except ConnectError:
        return "unknown"


def _state_of(client: ConnectClient, name: str) -> str | None:
    """What the cluster runs it as (None: not at all), from one listing of states."""
    found = client.statuses().get(name)
    return found.state if found is not None else None


def _undo_move(client: ConnectClient, step: Step, created: bool, there: ConnectClient) -> str:
    failed = _undone(client, step.name, created, there, step.name, step.live_state)
    if failed is not None:
        return f"roll-back failed too ({failed}): {step.name} may be STOPPED on {step.moved_from} and exist here"
    return f"rolled back: {step.name} is {step.live_state or 'RUNNING'} on {step.moved_from} again"
