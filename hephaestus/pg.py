"""The PostgreSQL edge: every connection hephaestus opens goes through here (edge: psycopg).

It owns what each caller used to write for itself: the connect timeout, the application name
a DBA sees in `pg_stat_activity`, server-side keepalives for sessions that hold a lock, and
how a driver error reaches the user: one line (libpq's messages carry a DETAIL and a HINT
below), redacted (a DSN's password can appear in it), prefixed with what was being done.
TLS is the DSN's business (`sslmode`, `sslrootcert`): the edge passes it through untouched.

The test seam is `seam(factory)`, as `httpx.MockTransport` is the HTTP edge's: tests hand in
a factory that returns a fake connection, and every module that talks to PostgreSQL runs
offline through it. psycopg is imported only when a connection is opened: a run that never
touches a database does not pay its ~80 ms import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hephaestus.errors import HephaestusError, first_line
from hephaestus.secrets import REDACTOR

if TYPE_CHECKING:
    import psycopg

    Connection = psycopg.Connection[tuple[Any, ...]]
else:
    Connection = Any

CONNECT_TIMEOUT_S = 10
# Server-side keepalives for a session that holds a lock: a holder that vanished (its node
# gone) is dropped, and its lock released, after about idle + interval × count = 30 s.
KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=4"

Factory = Callable[..., Any]
_factory: Factory | None = None  # None: psycopg.connect


class DatabaseError(HephaestusError):
    """A database hephaestus reads or writes failed, or could not be reached."""


def text(exc: BaseException, whole: bool = False) -> str:
    """A driver's error as one redacted line: its first line, or (`whole`) all its lines
    joined, where the DETAIL is what the user needs (a snapshot's checks)."""
    return REDACTOR(" ".join((str(exc) if whole else first_line(exc)).split()))


def driver_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean "the database said no" (psycopg's root; imported when needed)."""
    import psycopg

    return (psycopg.Error,)


@contextmanager
def errors(what: str, error: type[HephaestusError] = DatabaseError, whole: bool = False) -> Iterator[None]:
    """A driver error inside becomes `error("<what>: <one line>")` (`whole`: see `text`). Also a
    decorator: every call of the function is inside it."""
    try:
        yield
    except driver_errors() as exc:
        raise error(f"{what}: {text(exc, whole)}") from exc


def connect(
    dsn: str,
    what: str,
    *,
    autocommit: bool = True,
    application: str = "hephaestus",
    keepalives: bool = False,
    error: type[HephaestusError] = DatabaseError,
    **extra: Any,
) -> Connection:
    """An open connection (the caller closes it); `what` names it in an error."""
    options: dict[str, Any] = {"autocommit": autocommit, "connect_timeout": CONNECT_TIMEOUT_S}
    options["application_name"] = application
    if keepalives:
        options["options"] = KEEPALIVES
    with errors(what, error):
        conn: Connection = _connect_with()(dsn, **options, **extra)
    return conn


@contextmanager
def session(dsn: str, what: str, *, error: type[HephaestusError] = DatabaseError, **kw: Any) -> Iterator[Connection]:
    """A connection for a `with` block: closed at its end, a driver error in it made one line.
    Without autocommit the work is committed on a clean exit and rolled back on an error."""
    conn = connect(dsn, what, error=error, **kw)
    with errors(what, error), conn:
        yield conn


def table_ident(name: str) -> Any:
    """`users` or `public.users` as the quoted identifier `"public"."users"` (publications, snapshot signals)."""
    from psycopg import sql

    schema, _, table = name.rpartition(".")
    return sql.Identifier(schema or "public", table)


def _connect_with() -> Factory:
    if _factory is not None:
        return _factory
    import psycopg

    return psycopg.connect


@contextmanager
def seam(factory: Factory) -> Iterator[None]:
    """Tests: every connection in the block comes from `factory(dsn, **options)`."""
    global _factory
    before, _factory = _factory, factory
    try:
        yield
    finally:
        _factory = before
