"""Publication upkeep (publications.change, pure): what each publication gains and loses,
and what stops an apply (mutation-tested core)."""

from __future__ import annotations

import pytest

from hephaestus.fleet.model import Desired, Live
from hephaestus.fleet.sources import POSTGRES_SOURCE
from hephaestus.publications.change import PublicationChange, PublicationSource, Published, sources, upkeep

KEY = ("bob", "pub")


def src(name: str, tables: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": POSTGRES_SOURCE,
        "topic.prefix": "bob",
        "publication.name": "pub",
        "signal.data.collection": "public.sig",
        "table.include.list": tables,
        **extra,
    }


def source(name: str, *tables: str, dropped: tuple[str, ...] = ()) -> PublicationSource:
    return PublicationSource(name, "bob", "pub", "public.sig", frozenset(tables), frozenset(dropped))


def test_sources_read_git_and_what_this_run_drops_from_each_include_list() -> None:
    desired = {
        "a": Desired("a", src("a", "users,public.students")),
        "b": Desired("b", src("b", "users")),
        "sink": Desired("sink", {"connector.class": "x.JdbcSinkConnector"}),
    }
    live = {"a": Live("a", src("a", "users,locations"))}
    assert sources(desired, live) == [
        PublicationSource(
            "a",
            "bob",
            "pub",
            "public.sig",
            frozenset({"public.users", "public.students"}),
            frozenset({"public.locations"}),
        ),
        PublicationSource("b", "bob", "pub", "public.sig", frozenset({"public.users"})),
    ]


def test_captured_tables_missing_from_the_publication_are_added() -> None:
    changes, problems = upkeep(
        [source("a", "public.users", "public.t")], {KEY: Published(True, frozenset({"public.users", "public.sig"}))}
    )
    assert changes == (PublicationChange("bob", "pub", ("public.t",), (), ("a",)),) and problems == {}


def test_nothing_to_change_is_no_change() -> None:
    assert upkeep([source("a", "public.users")], {KEY: Published(True, frozenset({"public.users", "public.sig"}))}) == (
        (),
        {},
    )


def test_a_table_dropped_from_one_include_list_stays_while_another_source_captures_it() -> None:
    state = {KEY: Published(True, frozenset({"public.users", "public.t", "public.sig"}))}
    kept, _ = upkeep([source("a", "public.users", dropped=("public.t",)), source("b", "public.t")], state)
    assert kept == ()
    gone, _ = upkeep([source("a", "public.users", dropped=("public.t",)), source("b", "public.users")], state)
    assert gone == (PublicationChange("bob", "pub", (), ("public.t",), ("a",)),)


def test_a_table_published_by_hand_is_never_dropped_and_the_signal_table_never() -> None:
    state = {KEY: Published(True, frozenset({"public.users", "public.hand", "public.sig"}))}
    assert upkeep([source("a", "public.users", dropped=("public.sig", "public.gone"))], state) == ((), {})


def test_a_missing_publication_stops_the_apply_naming_the_ddl() -> None:
    changes, problems = upkeep([source("a", "public.users")], {KEY: Published(False)})
    assert changes == ()
    assert problems == {
        "a": {
            "publication.name": (
                "publication pub does not exist in database bob: create it with "
                "CREATE PUBLICATION pub FOR TABLE public.sig, public.users;",
            )
        }
    }


def test_a_publication_without_the_signal_table_stops_the_apply_naming_the_ddl() -> None:
    changes, problems = upkeep([source("a", "public.users")], {KEY: Published(True, frozenset({"public.users"}))})
    assert changes == ()
    assert problems["a"]["signal.data.collection"][0].endswith("run ALTER PUBLICATION pub ADD TABLE public.sig;")


@pytest.mark.parametrize("tables", [frozenset(), frozenset({"public.other"})])
def test_a_for_all_tables_publication_needs_nothing(tables: frozenset[str]) -> None:
    assert upkeep([source("a", "public.users", dropped=("public.x",))], {KEY: Published(True, tables, True)}) == (
        (),
        {},
    )


def test_a_publication_that_could_not_be_read_is_left_alone() -> None:
    assert upkeep([source("a", "public.users")], {}) == ((), {})


def test_each_publication_is_its_own_change_for_the_sources_that_need_it() -> None:
    other = PublicationSource("c", "eureka", "pub", "public.sig", frozenset({"public.x"}))
    state = {
        KEY: Published(True, frozenset({"public.sig"})),
        ("eureka", "pub"): Published(True, frozenset({"public.sig"})),
    }
    changes, _ = upkeep([source("a", "public.users"), source("b", "public.sig"), other], state)
    assert changes == (
        PublicationChange("bob", "pub", ("public.users",), (), ("a",)),
        PublicationChange("eureka", "pub", ("public.x",), (), ("c",)),
    )
    assert changes[0].describe() == "publication bob/pub: add public.users (for a)"


def test_a_captured_table_or_signal_table_the_database_lacks_stops_the_apply() -> None:
    state = {KEY: Published(True, frozenset({"public.users"}), absent=frozenset({"public.t", "public.sig"}))}
    changes, problems = upkeep([source("a", "public.users", "public.t")], state)
    assert changes == (), "an absent table is never added (the ALTER would fail half-way)"
    assert problems["a"]["table.include.list"] == (
        "public.t not in database bob: create it or take it out of the definition",
    )
    (signal,) = problems["a"]["signal.data.collection"]
    assert signal.startswith(
        "signal table public.sig does not exist in database bob; create it with CREATE TABLE "
        "public.sig (id VARCHAR(42) PRIMARY KEY"
    ) and signal.endswith("ALTER PUBLICATION pub ADD TABLE public.sig;")


def test_a_change_describes_what_it_adds_and_drops_for_whom() -> None:
    assert (
        PublicationChange("bob", "pub", (), ("public.x",), ("a",)).describe()
        == "publication bob/pub: drop public.x (for a)"
    )
    both = PublicationChange("bob", "pub", ("public.a", "public.b"), ("public.x", "public.y"), ("a", "b"))
    assert both.describe() == "publication bob/pub: add public.a, public.b; drop public.x, public.y (for a, b)"


def test_several_absent_tables_are_named_together() -> None:
    state = {KEY: Published(True, frozenset({"public.sig"}), absent=frozenset({"public.t", "public.u"}))}
    _, problems = upkeep([source("a", "public.t", "public.u")], state)
    assert problems == {
        "a": {
            "table.include.list": (
                "public.t, public.u not in database bob: create them or take them out of the definition",
            )
        }
    }


def test_a_source_that_does_not_tell_its_database_is_named() -> None:
    from hephaestus.errors import HephaestusError

    config = {"connector.class": POSTGRES_SOURCE, "table.include.list": "users"}
    with pytest.raises(HephaestusError, match="^src: cannot tell its database"):
        sources({"src": Desired("src", config)}, {})
