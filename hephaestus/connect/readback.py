"""What the live cluster shows after a write whose answer was lost (the edge's ambiguity checks,
`Request.applied`): each read once, True/False when Connect says, None when it cannot be told."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from hephaestus.connect import parse
from hephaestus.connect.edge import ConnectEdge, Request, Seen
from hephaestus.connect.errors import ConnectError, ConnectorNotFound
from hephaestus.connect.models import ConnectorStatus


def path(name: str, *rest: str) -> str:
    # Names may hold spaces, braces or slashes: encode everything, keep no character "safe".
    return "/".join(("/connectors", quote(name, safe=""), *rest))


def _without_name(config: Mapping[str, str]) -> dict[str, str]:
    # Connect adds `name` to every stored config; it is not part of what we compare.
    return {k: v for k, v in config.items() if k != "name"}


def restarted(st: ConnectorStatus) -> bool:
    # Connect marks what it restarts RESTARTING before it answers 202; once that is over,
    # nothing FAILED is left. Either shows the restart landed.
    states = [st.state, *(t.state for t in st.tasks)]
    return "RESTARTING" in states or "FAILED" not in states


class Readback:
    def __init__(self, edge: ConnectEdge) -> None:
        self._edge = edge

    def _get(self, name: str, what: str) -> httpx.Response:
        return self._edge.once(Request("GET", path(name, what), name))

    def config(self, name: str, sent: Mapping[str, str]) -> Seen:
        try:
            live = parse.config(self._get(name, "config").json())
        except ConnectorNotFound:
            return False
        except (ConnectError, ValueError, TypeError):
            return None
        return _without_name(live) == _without_name(sent)

    def _offsets(self, name: str) -> list[Any] | None:
        try:
            found = self._get(name, "offsets").json().get("offsets", [])
        except (ConnectError, ValueError, TypeError, AttributeError):
            return None
        return found if isinstance(found, list) else None

    def offsets(self, name: str, offsets: list[dict[str, Any]]) -> Seen:
        live = self._offsets(name)
        return None if live is None else all(o in live for o in offsets)

    def no_offsets(self, name: str) -> Seen:
        live = self._offsets(name)
        return None if live is None else not live

    def absent(self, name: str) -> Seen:
        try:
            self._get(name, "config")
        except ConnectorNotFound:
            return True
        except ConnectError:
            return None
        return False

    def state(self, name: str, reached: Callable[[ConnectorStatus], bool]) -> Seen:
        try:
            return reached(parse.status(self._get(name, "status").json()))
        except (ConnectError, ValueError, TypeError):
            return None
