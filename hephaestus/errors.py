"""The one error root. The CLI catches HephaestusError once and maps it to an exit code."""

from __future__ import annotations

# The exit codes Helm hooks and cron read: 0 ok, 1 an error, 2 drift or a refusal (when asked).
EXIT_OK, EXIT_ERROR, EXIT_DRIFT = 0, 1, 2


class HephaestusError(Exception):
    """Anything a user can act on. The message says what and where."""

    exit_code = 1


class InputError(HephaestusError):
    """Bad input (a definition, a table catalog, a connector file): names file and field."""

    def __init__(self, file: str, message: str, field: str = "", line: int | None = None):
        self.file = file
        self.field = field
        self.line = line
        where = file if line is None else f"{file}:{line}"
        at = f" at {field}" if field else ""
        super().__init__(f"{where}{at}: {message}")


class InputErrors(HephaestusError):
    """Several input errors found in one validation pass, reported together."""

    def __init__(self, errors: list[InputError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def first_line(exc: BaseException) -> str:
    """A driver's error in one line (psycopg's carry a DETAIL and a HINT below it)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
