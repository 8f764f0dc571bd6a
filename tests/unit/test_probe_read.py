"""probe.read through the PostgreSQL seam (tests/unit/pgfake.py: a statement it does not know
fails the test): sinks read first, a hostile schema quoted, and every way of not reading a probe
is `unknown`, never fresh."""

from __future__ import annotations

from hephaestus import pg
from hephaestus.probe.model import Route
from hephaestus.probe.read import freshness
from hephaestus.project import Database, Project
from tests.unit.pgfake import Server, on

NOW = 1_000_000.0
ROUTE = Route("c", "snk", "src", "bob", "auth", "public", "public.users")


def project(*names: str) -> Project:
    return Project("p.yaml", {}, {n: Database(n, f"host=h dbname={n}") for n in names})


def source(exists: bool = True) -> Server:
    return Server(
        handlers=[
            on(r"clock_timestamp", [(NOW,)]),
            on(r"to_regclass", [("public.hephaestus_probe" if exists else None,)]),
            on(r'FROM "public"."hephaestus_probe"$', [("src", "", NOW - 2, 7, NOW - 3600)]),
        ]
    )


def sink(schema: str = "public", exists: bool = True) -> Server:
    quoted = schema.replace('"', '""')
    return Server(
        handlers=[
            on(r"clock_timestamp", [(NOW + 0.2,)]),
            on(r"to_regclass", [(f"{schema}.hephaestus_probe" if exists else None,)]),
            on(rf'FROM "{quoted}"\."hephaestus_probe" WHERE', [("src", "snk", NOW - 5, 6, "")]),
        ]
    )


def read(servers: dict[str, Server], route: Route = ROUTE, names: tuple[str, ...] = ("bob", "auth")) -> list:  # type: ignore[type-arg]
    order: list[str] = []

    def connect(dsn: str, **kw: object) -> object:
        name = dsn.rsplit("=", 1)[-1]
        order.append(name)
        return servers[name].connect(dsn, **kw)

    with pg.seam(connect):  # type: ignore[arg-type]
        found = freshness(project(*names), [route], 120.0)
    return [order, *found]


def test_both_ends_read_sinks_first_and_judged() -> None:
    order, f = read({"bob": source(), "auth": sink()})
    assert order == ["auth", "bob"]  # the sink first: its probe is never newer than the source's row
    assert (f.state, f.seconds, round(f.skew_s, 1)) == ("fresh", 5.0, 0.2)


def test_a_schema_from_a_hand_edited_config_is_quoted_not_spliced() -> None:
    hostile = 'x"; DROP TABLE users; --'
    servers = {"bob": source(), "auth": sink(hostile)}
    _, f = read(servers, Route("c", "snk", "src", "bob", "auth", hostile, "public.users"))
    assert f.state == "fresh"
    (statement,) = [s for s in servers["auth"].statements if "WHERE probe_sink" in s]
    assert '"x""; DROP TABLE users; --"."hephaestus_probe"' in statement


def test_what_cannot_be_read_is_unknown_never_fresh() -> None:
    _, missing = read({"bob": source(exists=False), "auth": sink()})
    assert (missing.state, missing.why) == (
        "unknown",
        "no probe table public.hephaestus_probe in bob: reconcile creates it",
    )
    _, unnamed = read({"bob": source()}, names=("bob",))
    assert unnamed.state == "unknown" and "database auth is not in the project's databases" in unnamed.why
    _, refused = read({"bob": source(), "auth": Server(refuse="connection refused")})
    assert refused.state == "unknown" and "connection refused" in refused.why
