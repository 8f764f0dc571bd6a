"""stdout and stderr through the redactor, for the whole of a CLI run.

Every channel that ends on a terminal or in a pod's log — click.echo, rich, the logging
handler, click's own error messages — writes to `sys.stdout`/`sys.stderr`, so wrapping the two
streams is the one place no output path can bypass. Text is held until a line is complete,
so a secret split across two writes is still seen whole.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from hephaestus.secrets import REDACTOR


class RedactingStream:
    def __init__(self, inner: IO[str]) -> None:
        self.inner = inner
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            done, self._pending = self._pending.rsplit("\n", 1)
            self.inner.write(REDACTOR(done + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.inner.write(REDACTOR(self._pending))
            self._pending = ""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno … of the real stream
        return getattr(self.inner, name)


@contextmanager
def redacted_output() -> Iterator[None]:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out), RedactingStream(err)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = out, err
