"""What decides which secrets are printed and what a bad read keeps (issue 43, items 2 and 4;
reconciler.rotation and safety.values, mutation-tested core): a key is secret when named like
one, typed PASSWORD by its plugin, or answered masked; a secrets file that is here but could not
be read keeps the last print, says so by connector and key, and fails an apply."""

from __future__ import annotations

import uuid
from pathlib import Path

from hephaestus.fleet.model import Desired
from hephaestus.reconciler import rotation
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.safety.values import Ref, Resolver, unread

OLD = {"resolved:connection.password": "fp(old)"}


def stretch(value: str) -> str:
    return "fp(" + value + ")"


def plain_key() -> str:
    """A key named like no secret that no other test teaches the process-wide redactor."""
    return "target.uri." + uuid.uuid4().hex[:8]


def test_secret_keys_are_those_typed_and_those_answered_masked() -> None:
    live = {"a": "****", "b": "x", "c": "[hidden]", "d": "y"}
    assert rotation.secret_keys(live, frozenset({"d"})) == frozenset({"a", "c", "d"})
    assert rotation.secret_keys({"b": "x"}, frozenset()) == frozenset()


def test_gits_value_of_a_typed_key_named_like_no_secret_is_printed() -> None:
    key, empty = plain_key(), plain_key()
    desired = {
        "m": Desired("m", {key: "mongodb://a/x", "topics": "t", empty: ""}),
        "n": Desired("n", {key: "mongodb://a/x"}),  # not typed for this connector: no print
    }
    found = rotation.current(desired, Resolver(), stretch, {}, {"m": frozenset({key, empty})})
    assert found == {"m": {"git:" + key: "fp(mongodb://a/x)"}, "n": {}}


def secrets_at(tmp_path: Path, text: str | None = "pw=new\n") -> tuple[Path, Resolver]:
    path = tmp_path / "s.properties"
    if text is not None:
        path.write_text(text)
    return path, Resolver([path])


def prints(resolve: Resolver, raw: str, before: dict[str, str]) -> dict[str, str]:
    return rotation.current({"s": Desired("s", {"connection.password": raw})}, resolve, stretch, {"s": before})["s"]


def test_an_unreadable_file_keeps_the_last_print(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path, None)  # the project's secrets file is missing
    raw = f"${{file:{path}:pw}}"
    assert prints(resolve, raw, OLD) == {**OLD, "git:connection.password": f"fp({raw})"}
    assert prints(resolve, raw, {}) == {"git:connection.password": f"fp({raw})"}  # nothing to keep


def test_a_file_without_the_key_keeps_the_last_print(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path, "other=1\n")
    assert prints(resolve, f"${{file:{path}:pw}}", OLD)["resolved:connection.password"] == "fp(old)"


def test_a_read_value_replaces_the_last_print(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path)
    assert prints(resolve, f"${{file:{path}:pw}}", OLD)["resolved:connection.password"] == "fp(new)"


def test_a_file_that_lives_on_the_workers_only_keeps_nothing(tmp_path: Path) -> None:
    raw = f"${{file:{tmp_path}/absent.properties:pw}}"  # absolute, not named by the project, not here
    assert prints(Resolver(), raw, OLD) == {"git:connection.password": f"fp({raw})"}


def test_the_resolver_says_why_a_file_here_gave_no_value(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path, None)
    assert unread(resolve(f"${{file:{path}:pw}}")) == (f"cannot read '{path}': No such file or directory", True)
    path.mkdir()
    assert unread(Resolver([path])(f"${{file:/elsewhere/{path.name}:pw}}")) == (
        f"cannot read '{path}': Is a directory",
        True,
    )
    # An absolute path the project does not name: here and unreadable is a fault, absent is not.
    assert unread(Resolver()(f"${{file:{path}:pw}}")) == (f"cannot read '{path}': Is a directory", True)
    assert unread(Resolver()(f"${{file:{tmp_path}/absent:pw}}")) == ("", False)
    assert unread(Resolver()("${file:/a\x00b:pw}")) == ("cannot read '/a\\x00b': ValueError", True)


def test_the_resolver_says_which_key_a_read_file_lacks(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path, "pw=1\n")
    assert unread(resolve(f"${{file:{path}:pw}}")) == ("", False)
    assert unread(resolve(f"x${{file:{path}:pw}}-${{file:{path}:nope}}")) == ("s.properties has no key nope", False)
    assert unread(resolve("${env:PW}")) == ("", False)  # other providers are never resolved here
    assert unread("plain") == ("", False) and unread(None) == ("", False)


def test_one_run_reads_a_file_once(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path, "pw=1\n")
    raw = f"${{file:{path}:pw}}"
    assert resolve(raw) == Ref(raw, "1")
    path.unlink()  # a rotation or a fault mid-run: the whole run judges one reading
    assert resolve(raw) == Ref(raw, "1")


def test_why_is_not_part_of_a_values_identity() -> None:
    assert Ref("x", None, "a", "b") == Ref("x", None, "c", "d")


def test_the_secrets_not_read_by_connector_and_key(tmp_path: Path) -> None:
    path, resolve = secrets_at(tmp_path, "pw=1\n")
    gone = tmp_path / "gone" / "s.properties"
    desired = {
        "b": Desired("b", {"z": f"${{file:{path}:nope}}", "a": f"${{file:{path}:pw}}"}),
        "a": Desired("a", {"k": f"${{file:{gone}:pw}}", "j": "literal"}),
    }
    named = Resolver([gone])
    assert rotation.unreadable(desired, resolve) == (rotation.Unread("b", "z", "s.properties has no key nope", False),)
    assert rotation.unreadable(desired, named)[0] == rotation.Unread(
        "a", "k", f"cannot read '{gone}': No such file or directory", True
    )


def test_an_unread_secret_is_said_without_its_value() -> None:
    u = rotation.Unread("s0", "connection.password", "cannot read '/s': Permission denied", True)
    assert u.warning() == (
        "s0: the secret in connection.password could not be read here (cannot read '/s': Permission denied): "
        "a rotation is not seen until it is read again (its last fingerprint is kept)"
    )


def test_only_a_file_not_read_fails_the_run() -> None:
    fatal = [rotation.Unread("a", "k", "w", True), rotation.Unread("b", "j", "w", False)]
    assert rotation.unread_error(fatal + [rotation.Unread("c", "i", "w", True)]) == (
        "secrets not read, their last fingerprints kept: a k, c i"
    )
    assert rotation.unread_error(fatal[1:]) == ""
    assert rotation.unread_error([]) == ""


def test_a_write_prints_the_keys_its_validation_typed() -> None:
    key = plain_key()
    typed = {key, "connection.password"}
    calls: list[str] = []

    def counted(value: str) -> str:
        calls.append(value)
        return stretch(value)

    cfg = {key: "u", "connection.password": "p", "topics": "t", "empty": ""}
    steps = tuple(
        Step(a, n, config=cfg)  # type: ignore[arg-type]
        for a, n in (
            ("create", "made"),
            ("update", "changed"),
            ("rename", "moved"),
            ("update", "failed"),
            ("restart", "restarted"),
            ("unchanged", "same"),
            ("create", "unprinted"),
        )
    )
    now = {n: {"git:connection.password": "kept"} for n in ("made", "changed", "moved", "failed", "restarted", "same")}
    ok = frozenset({"made", "changed", "moved", "restarted", "same", "unprinted"})
    found = rotation.with_typed(Plan("c", steps), now, ok, lambda k: k in typed or k == "empty", counted)
    more = {"git:connection.password": "kept", "git:" + key: "fp(u)"}
    kept = {n: now[n] for n in ("failed", "restarted", "same")}
    assert found == {"made": more, "changed": more, "moved": more, **kept}
    assert calls == ["u", "u", "u"]  # a print already made is not made again (scrypt costs ~40 ms)
    assert now["made"] == {"git:connection.password": "kept"}  # what was read is never changed


def test_a_hostile_key_cannot_forge_a_line_of_output(tmp_path: Path) -> None:
    hostile = "k\nerror: none"
    assert rotation.shown(hostile) == "'k\\nerror: none'" and rotation.shown("connection.uri") == "connection.uri"
    assert rotation.unread_error([rotation.Unread("s", hostile, "w", True)]).endswith(": s 'k\\nerror: none'")
    assert rotation.Unread("s", hostile, "w", True).warning().startswith("s: the secret in 'k\\nerror: none' could")
    assert rotation.unrecorded("s", Desired("s", {hostile: "x"}), (hostile,), {})[0].startswith(
        "s: Connect answers 'k\\nerror: none' masked"
    )
    p = Plan("c", (Step("unchanged", "s", config={}, live_state="RUNNING"),))
    (s,) = rotation.with_restarts(
        p, {"s": {"resolved:" + hostile: "2"}}, {"s": {"resolved:" + hostile: "1"}}, Resolver()
    ).steps
    assert s.reason == "secret rotated ('k\\nerror: none')"
    path, resolve = secrets_at(tmp_path, "pw=1\n")
    assert unread(resolve(f"${{file:{path}:a\nb}}"))[0] == "s.properties has no key 'a\\nb'"
