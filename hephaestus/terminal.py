"""Text that came from a cluster or a database, made safe to print on a terminal."""

from __future__ import annotations


def printable(text: str) -> str:
    """Control characters shown escaped (`\\x1b`), never sent to the terminal: an ESC sequence in
    a connector's name, a task's trace or a database's error could rewrite the screen or hide a
    row. Everything printable, non-ASCII included, is kept as it is."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
