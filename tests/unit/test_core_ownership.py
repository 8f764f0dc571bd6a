"""The ownership record's file store, scope overlap of `select` globs and the project-file
checks built on it (mutation-tested core)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hephaestus.errors import InputError, InputErrors
from hephaestus.globs import globs_overlap, scopes_overlap
from hephaestus.project import Project, load_project
from hephaestus.settings import StateSettings
from hephaestus.state.backend import ownership_store
from hephaestus.state.ownership import (
    Claim,
    OwnershipFile,
    OwnershipTable,
    OwnershipUnavailable,
    claims_of,
    owns,
    releasing,
    scope_of,
)
from hephaestus.urls import normalised_url


def test_claims_round_trip_per_project_and_cluster(tmp_path: Path) -> None:
    store = OwnershipFile(tmp_path / "o" / "deeper" / "ownership.json")
    assert store.owned("p", "c") == {}
    store.claim("p", "c", [Claim("a", "x_*", "created", "r1", "t1"), Claim("b", "*", "imported", "r1", "t1")])
    store.claim("p", "d", [Claim("a", "*", "adopted", "r2", "t2")])
    store.claim("q", "c", [Claim("z", "*", "created", "r3", "t3")])
    assert store.owned("p", "c") == {
        "a": Claim("a", "x_*", "created", "r1", "t1"),
        "b": Claim("b", "*", "imported", "r1", "t1"),
    }
    store.claim("p", "c", [Claim("a", "*", "renamed", "r4", "t4")])  # a later claim replaces the record
    store.release("p", "c", ["b", "never"])
    assert store.owned("p", "c") == {"a": Claim("a", "*", "renamed", "r4", "t4")}
    assert list(store.owned("p", "d")) == ["a"] and list(store.owned("q", "c")) == ["z"]
    record = {
        "p": {
            "c": {"a": {"how": "renamed", "run_id": "r4", "scope": "*", "since": "t4"}},
            "d": {"a": {"how": "adopted", "run_id": "r2", "scope": "*", "since": "t2"}},
        },
        "q": {"c": {"z": {"how": "created", "run_id": "r3", "scope": "*", "since": "t3"}}},
    }
    assert store.path.read_text() == json.dumps(record, indent=2, sort_keys=True) + "\n"  # reviewable in a diff
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["ownership.json"]


def test_a_record_without_since_reads_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "ownership.json"
    path.write_text('{"p": {"c": {"a": {"scope": "*", "how": "created", "run_id": "r"}}}}')
    assert OwnershipFile(path).owned("p", "c") == {"a": Claim("a", "*", "created", "r", "")}


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"p": []}',
        '{"p": {"c": []}}',
        '{"p": {"c": {"a": 1}}}',
        '{"p": {"c": {"a": {"scope": "*", "how": "x"}}}}',
    ],
)
def test_a_corrupt_record_stops_the_run(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ownership.json"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        OwnershipFile(path).owned("p", "c")
    assert str(info.value) in (
        f"{path}: ownership record is corrupt: repair it or restore it from backup",
        f"{path}: ownership record of 'a' is corrupt",
    )


def test_an_unwritable_record_is_an_ownership_error(tmp_path: Path) -> None:
    (tmp_path / "ro").write_text("")  # a file where the folder should be
    with pytest.raises(OwnershipUnavailable) as info:
        OwnershipFile(tmp_path / "ro" / "ownership.json").claim("p", "c", claims_of(["a"], "*", "created", "r"))
    assert str(info.value) == f"ownership record {tmp_path / 'ro' / 'ownership.json'}: File exists"


def test_claims_of_and_scope_of() -> None:
    claims = claims_of(["b", "a", "b"], "x_*", "created", "r1")
    assert [(c.connector, c.scope, c.how, c.run_id) for c in claims] == [
        ("a", "x_*", "created", "r1"),
        ("b", "x_*", "created", "r1"),
    ]
    assert all(c.since.endswith("+00:00") for c in claims)
    assert scope_of(()) == "*" and scope_of(("b_*", "a_*")) == "a_*,b_*"


def test_a_releasing_claim_keeps_its_connector_and_scope_and_says_when_and_which_config() -> None:
    (claim,) = claims_of(["a"], "x_*", "created", "r1")
    mark = releasing(claim, "0123abcd", "r2")
    assert (mark.connector, mark.scope, mark.how, mark.run_id) == ("a", "x_*", "releasing 0123abcd", "r2")
    assert mark.since.endswith("+00:00") and mark.since >= claim.since
    assert owns(mark, lambda: "0123abcd") and not owns(mark, lambda: "ffff0000") and not owns(mark, lambda: None)


def test_a_kept_claim_is_owned_without_fingerprinting_its_config() -> None:
    """Issue 47: the fingerprint is computed for a claim being released only."""
    (claim,) = claims_of(["a"], "x_*", "created", "r1")

    def never() -> str:
        raise AssertionError("fingerprinted a claim that is not being released")

    assert owns(claim, never)


def test_the_store_is_the_state_database_else_a_file(tmp_path: Path) -> None:
    local = ownership_store(Project("p", {}, {}, base=tmp_path))
    assert isinstance(local, OwnershipFile) and local.path == tmp_path / ".hephaestus/ownership.json"
    from hephaestus.project import Database

    dbs = {"state": Database("state", "host=h dbname=s")}
    for state in (StateSettings("state"), StateSettings(lock_database="state"), StateSettings(heal_database="state")):
        pg = ownership_store(Project("p", {}, dbs, state=state))
        assert isinstance(pg, OwnershipTable) and pg.dsn == "host=h dbname=s"
    assert isinstance(
        ownership_store(Project("p", {}, dbs, state=StateSettings(audit_database="state"))), OwnershipFile
    )


# --- select scopes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("local_manabie_*", "stag_manabie_*", False),
        ("a*b*c", "a*d*c", True),
        ("a_*_x", "a_*_y", False),
        ("*", "x", True),
        ("[ab]x", "[cd]x", False),
        ("[a-z]x", "[m-q]x", True),
        ("a?", "ab", True),
        ("a?", "a", False),
        ("local_*", "local_manabie_*", True),
        ("*_sink", "*_source", False),
        ("x[!a]", "xa", False),
        ("x[!a]", "x[!b]", True),
        ("", "", True),
        ("", "*", True),
        ("", "a", False),
        ("**", "a", True),
        ("*", "abc", True),
        ("abc", "*", True),
        ("a*", "*b", True),
        ("*a*", "b*c", True),
        ("*ab", "*ba", False),
        ("[a-c]", "[!ac]", True),
        ("[a-d]", "[!abd]", True),
        ("[a-c]", "[!a-c]", False),
        ("[b-c]", "[!b]", True),
    ],
)
def test_globs_overlap(a: str, b: str, overlap: bool) -> None:
    assert globs_overlap(a, b) is overlap and globs_overlap(b, a) is overlap


ALPHABET = "abcd"
_NAMES = ["".join(p) for n in range(7) for p in itertools.product(ALPHABET, repeat=n)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "*", "?", "[a]", "[!a]", "[a-c]", "[!ac]"]), max_size=3).map("".join),
    st.lists(st.sampled_from(["a", "b", "c", "*", "?", "[a]", "[!a]", "[b-c]", "[!b]"]), max_size=3).map("".join),
)
def test_globs_overlap_agrees_with_brute_force(a: str, b: str) -> None:
    """Any witness is at most as long as both patterns together: every name up to 6 is tried."""
    assert globs_overlap(a, b) is any(fnmatchcase(n, a) and fnmatchcase(n, b) for n in _NAMES)


def test_scopes_overlap() -> None:
    assert scopes_overlap((), ("a_*",)) and scopes_overlap(("a_*",), ())
    assert scopes_overlap(("x_*", "a_*"), ("b_*", "a_1"))
    assert not scopes_overlap(("x_*", "a_*"), ("b_*", "c_1"))


# --- the project file -------------------------------------------------------------------------


def project_file(tmp_path: Path, a: str, b: str, sel_a: str = "", sel_b: str = "") -> Path:
    path = tmp_path / "hephaestus.yaml"
    path.write_text(
        json.dumps(
            {
                "clusters": {
                    "one": {"url": a, "connectors": "c1", **({"select": [sel_a]} if sel_a else {})},
                    "two": {"url": b, "connectors": "c2", **({"select": [sel_b]} if sel_b else {})},
                }
            }
        )
    )
    return path


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://connect:8083", "http://CONNECT:8083/"),
        ("http://connect", "http://connect:80"),
        ("https://u:p@connect/", "https://connect:443"),
    ],
)
def test_two_clusters_on_one_url_with_overlapping_scopes_are_refused(tmp_path: Path, a: str, b: str) -> None:
    with pytest.raises(InputErrors) as info:
        load_project(project_file(tmp_path, a, b, "x_*"))
    (err,) = info.value.errors
    assert err.field == "clusters.two.select"
    assert "clusters 'one' and 'two' both point at" in str(err) and "select` scopes overlap" in str(err)
    assert str(err).startswith(str(tmp_path / "hephaestus.yaml"))


def test_disjoint_scopes_or_different_clusters_are_fine(tmp_path: Path) -> None:
    assert len(load_project(project_file(tmp_path, "http://c:8083", "http://c:8083", "a_*", "b_*")).clusters) == 2
    assert len(load_project(project_file(tmp_path, "http://c:8083", "http://c:8084")).clusters) == 2
    assert load_project(project_file(tmp_path, "http://c:8083", "http://c:8084")).name == "default"


def test_normalised_url() -> None:
    assert normalised_url("HTTP://User:Pw@Connect.Example/base/") == "http://connect.example:80/base"
    assert normalised_url("https://c") == "https://c:443"


def _as_httpx_spelt_it(url: str) -> str:
    """normalised_url before issue 47 (httpx.URL): lock keys and sealed plans hold this spelling."""
    import httpx

    u = httpx.URL(url)
    return f"{u.scheme}://{u.host.lower()}:{u.port or {'http': 80, 'https': 443}[u.scheme]}{u.path.rstrip('/')}"


@given(
    scheme=st.sampled_from(["http", "https", "HTTP"]),
    host=st.one_of(
        st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,10}[a-zA-Z0-9])?(\.[a-z0-9]{1,8}){0,3}", fullmatch=True),
        st.ip_addresses(v=4).map(str),
        st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
    ),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    path=st.from_regex(r"(/[a-zA-Z0-9._~%-]{0,6}){0,3}/?", fullmatch=True),
    user=st.sampled_from(["", "u:p@", "user@"]),
)
def test_normalised_url_spells_every_usable_url_as_before(
    scheme: str, host: str, port: int | None, path: str, user: str
) -> None:
    url = f"{scheme}://{user}{host}{'' if port is None else f':{port}'}{path}"
    try:
        before = _as_httpx_spelt_it(url)
    except Exception:  # noqa: BLE001 - httpx refused it (a bad percent escape …): no spelling to keep
        return
    assert normalised_url(url) == before


@pytest.mark.parametrize(
    "url", ["http://h:99999", "http://h h:1", "http://[::1", "http://027.0.0.1:1", "http://a..b:1"]
)
def test_normalised_url_refuses_what_no_request_could_reach(url: str) -> None:
    with pytest.raises(ValueError):
        normalised_url(url)


@pytest.mark.parametrize("url", ["http://027.0.0.1:8083", "http://[::1"])
def test_an_unusable_url_is_an_input_error_naming_the_cluster(tmp_path: Path, url: str) -> None:
    with pytest.raises(InputErrors) as info:
        load_project(project_file(tmp_path, url, "http://c:8084"))
    (err,) = info.value.errors
    assert err.field == "clusters.one.url" and "not a usable URL" in str(err)


CLAIMER = """
import sys
from pathlib import Path
from hephaestus.state.ownership import OwnershipFile, claims_of
record = OwnershipFile(Path(sys.argv[1]))
for i in range(150):
    record.claim("p", sys.argv[2], claims_of([f"s{i}"], "*", "created", "r"))
"""


def test_runs_of_two_clusters_in_two_processes_lose_no_claim(tmp_path: Path) -> None:
    """Each cluster's run holds its own cluster lock, and both edit the project's one record:
    without the file's own lock one run's claims were lost (a connector it created would then
    never be deleted as ours), or the JSON was left unreadable."""
    path = tmp_path / "ownership.json"
    runs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(path), c], stderr=subprocess.PIPE) for c in "ab"]
    assert [r.wait(120) for r in runs] == [0, 0], [r.stderr.read() for r in runs if r.stderr]
    assert [len(OwnershipFile(path).owned("p", c)) for c in "ab"] == [150, 150]
    assert [p.name for p in tmp_path.iterdir()] == ["ownership.json"]  # no temporary left
