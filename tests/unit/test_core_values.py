"""safety.values' Resolver exactly: which placeholders it resolves and from which file, why one
it cannot resolve is unknown (its file unreadable, or without the key, or not here at all), and
that a file is read once. Written so that mutants of `_lookup`, `_properties` and
`_read_properties` die."""

from __future__ import annotations

from pathlib import Path

import pytest

from hephaestus.safety.values import Ref, Resolver, known, unread


def secrets(tmp_path: Path, text: str | bytes = "user=u\npassword = p1\n", name: str = "s.properties") -> Path:
    f = tmp_path / name
    f.write_bytes(text.encode() if isinstance(text, str) else text)
    return f


def why(v: object) -> tuple[str, str, str | None]:
    """Everything a Ref says (`unreadable` and `missing` are not compared)."""
    assert isinstance(v, Ref), v
    return v.unreadable, v.missing, v.value


def test_a_named_file_resolves_wherever_the_workers_mount_it(tmp_path: Path) -> None:
    r = Resolver([secrets(tmp_path)])
    raw = "${file:/opt/connect/s.properties:password}"
    assert r(raw) == Ref(raw, "p1")
    assert r("jdbc://${file:/elsewhere/s.properties:user}:${file:s.properties:password}@h") == Ref(
        "jdbc://${file:/elsewhere/s.properties:user}:${file:s.properties:password}@h", "jdbc://u:p1@h"
    )


def test_an_absolute_path_here_resolves_unnamed(tmp_path: Path) -> None:
    f = secrets(tmp_path)
    assert known(Resolver()(f"${{file:{f}:user}}")) == "u"


def test_other_providers_are_never_resolved_and_say_nothing(tmp_path: Path) -> None:
    f = secrets(tmp_path)
    for raw in (f"${{env:{f}:user}}", f"${{vault:{f}:user}}", "${FILE:s.properties:user}"):
        got = Resolver([f])(raw)
        assert got == Ref(raw) and why(got) == ("", "", None), raw


def test_a_key_the_file_lacks_is_named_missing(tmp_path: Path) -> None:
    r = Resolver([secrets(tmp_path)])
    raw = "${file:/mnt/s.properties:token}"
    got = r(raw)
    assert got == Ref(raw) and why(got) == ("", "s.properties has no key token", None)
    assert unread(got) == ("s.properties has no key token", False)


def test_a_missing_key_with_a_control_character_is_quoted(tmp_path: Path) -> None:
    got = Resolver([secrets(tmp_path)])("${file:s.properties:a\nb}")
    assert why(got) == ("", "s.properties has no key 'a\\nb'", None)


def test_the_projects_own_file_missing_is_a_fault_naming_it(tmp_path: Path) -> None:
    gone = tmp_path / "gone.properties"
    got = Resolver([gone])("${file:/x/gone.properties:k}")
    expected = f"cannot read {str(gone)!r}: No such file or directory"
    assert why(got) == (expected, "", None)
    assert unread(got) == (expected, True)


def test_a_named_path_under_a_file_is_a_fault_naming_it(tmp_path: Path) -> None:
    under = secrets(tmp_path, name="f") / "s.properties"
    got = Resolver([under])("${file:s.properties:k}")
    assert why(got) == (f"cannot read {str(under)!r}: Not a directory", "", None)


def test_an_absolute_path_not_here_and_not_named_lives_on_the_workers(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.properties", secrets(tmp_path, name="f") / "x"):
        raw = f"${{file:{path}:k}}"
        got = Resolver()(raw)
        assert got == Ref(raw) and why(got) == ("", "", None), path
        assert unread(got) == ("", False)


def test_a_relative_path_not_named_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets(tmp_path)
    monkeypatch.chdir(tmp_path)  # the file is there, relative to here: still not read
    assert why(Resolver()("${file:s.properties:user}")) == ("", "", None)


def test_no_path_at_all_is_not_read(tmp_path: Path) -> None:
    got = Resolver([secrets(tmp_path)])("${file:user}")
    assert got == Ref("${file:user}") and why(got) == ("", "", None)


def test_a_directory_is_unreadable_with_the_os_reason(tmp_path: Path) -> None:
    d = tmp_path / "s.properties"
    d.mkdir()
    got = Resolver()(f"${{file:{d}:k}}")
    assert why(got) == (f"cannot read {str(d)!r}: Is a directory", "", None)
    named = Resolver([d])("${file:s.properties:k}")
    assert why(named) == (f"cannot read {str(d)!r}: Is a directory", "", None)


def test_a_nul_in_the_path_is_unreadable_by_its_error_type(tmp_path: Path) -> None:
    path = f"{tmp_path}/a\x00b"
    got = Resolver()(f"${{file:{path}:k}}")
    assert why(got) == (f"cannot read {path!r}: ValueError", "", None)


def test_bytes_that_are_not_utf8_are_replaced_not_a_fault(tmp_path: Path) -> None:
    f = secrets(tmp_path, b"user=caf\xe9\n")
    assert known(Resolver([f])("${file:s.properties:user}")) == "caf\ufffd"


def test_a_file_is_read_once_per_path(tmp_path: Path) -> None:
    f = secrets(tmp_path)
    r = Resolver([f])
    assert known(r("${file:s.properties:user}")) == "u"
    f.write_text("user=v\n")
    assert known(r("${file:s.properties:user}")) == "u"  # the same run sees one file
    assert known(r("${file:/other/s.properties:user}")) == "v"  # another path: read again
    f.unlink()
    assert known(r("${file:s.properties:password}")) == "p1"
