"""The pure diff of two catalogs (generator.catalogdiff): every kind of change as a value, and
the words `catalog refresh` prints for it."""

from __future__ import annotations

from hephaestus.generator.catalogdiff import Retyped, TableChange, changes, table_change
from hephaestus.generator.model import Catalog, Column, TableRef, TableSchema

USERS = TableRef("public", "users")
ID, NAME, PHONE = Column("user_id", "text"), Column("name", "text"), Column("phone", "text")
BASE = TableSchema((ID, NAME), ("user_id",))


def catalog(**tables: TableSchema) -> Catalog:
    return Catalog("bob.json", "bob", {TableRef("public", n): t for n, t in tables.items()})


def users(*columns: Column, key: tuple[str, ...] = ("user_id",)) -> TableChange | None:
    return table_change(USERS, BASE, TableSchema(columns, key))


def test_alike_catalogs_have_no_changes() -> None:
    assert changes(catalog(users=BASE), catalog(users=BASE)) == ()
    assert changes(catalog(), catalog()) == ()


def test_tables_added_then_gone_then_changed_each_in_name_order() -> None:
    old = catalog(users=BASE, b_gone=BASE, a_gone=BASE)
    new = catalog(users=TableSchema((ID, NAME, PHONE), ("user_id",)), z_new=BASE, m_new=BASE)
    found = changes(old, new)
    assert [(str(c.table), c.what) for c in found] == [
        ("public.m_new", "added"),
        ("public.z_new", "added"),
        ("public.a_gone", "gone"),
        ("public.b_gone", "gone"),
        ("public.users", "changed"),
    ]
    assert [str(c) for c in found[:3]] == ["public.m_new added", "public.z_new added", "public.a_gone gone"]
    assert found[0] == TableChange(TableRef("public", "m_new"), "added")  # its columns are in the file, not here


def test_a_column_added() -> None:
    change = users(ID, NAME, PHONE)
    assert change == TableChange(USERS, "changed", added=(PHONE,))
    assert str(change) == "public.users +phone (text)"


def test_a_column_removed() -> None:
    change = users(ID)
    assert change == TableChange(USERS, "changed", removed=("name",))
    assert str(change) == "public.users -name"


def test_a_column_retyped() -> None:
    change = users(ID, Column("name", "character varying(40)"))
    assert change == TableChange(USERS, "changed", retyped=(Retyped("name", "text", "character varying(40)"),))
    assert str(change) == "public.users ~name (text -> character varying(40))"


def test_columns_reordered() -> None:
    """A column dropped and added again moves to the end: the sinks' field lists follow."""
    change = users(NAME, ID)
    assert change == TableChange(USERS, "changed", reordered=True)
    assert str(change) == "public.users columns reordered"
    assert users(ID, PHONE, NAME) == TableChange(USERS, "changed", added=(PHONE,))  # an insertion is not a move


def test_the_primary_key_changed() -> None:
    change = users(ID, NAME, key=("user_id", "name"))
    assert change == TableChange(USERS, "changed", primary_key=(("user_id",), ("user_id", "name")))
    assert str(change) == "public.users primary key (user_id) -> (user_id, name)"
    assert str(users(ID, NAME, key=())) == "public.users primary key (user_id) -> ()"


def test_everything_at_once_in_one_line() -> None:
    old = TableSchema((ID, NAME, Column("email", "text"), Column("n", "integer")), ("user_id",))
    new = TableSchema((Column("n", "bigint"), Column("user_id", "uuid"), PHONE, NAME), ("user_id", "n"))
    change = table_change(USERS, old, new)
    assert change == TableChange(
        USERS,
        "changed",
        added=(PHONE,),
        removed=("email",),
        retyped=(Retyped("n", "integer", "bigint"), Retyped("user_id", "text", "uuid")),
        reordered=True,
        primary_key=(("user_id",), ("user_id", "n")),
    )
    assert str(change) == (
        "public.users +phone (text), -email, ~n (integer -> bigint), ~user_id (text -> uuid), "
        "columns reordered, primary key (user_id) -> (user_id, n)"
    )


def test_unchanged_table_is_none() -> None:
    assert users(ID, NAME) is None
