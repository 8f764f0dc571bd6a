"""The sealed plan (safety.seal, reconciler.sealed): what the file holds and never reveals, and
how an edited, truncated, foreign or stale plan is refused (mutation-tested core)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.project import Project, load_project
from hephaestus.reconciler import sealed
from hephaestus.reconciler.model import Desired, Live
from hephaestus.reconciler.outcome import Basis, ClusterOutcome
from hephaestus.reconciler.plan import Plan, Step
from hephaestus.reconciler.publications import Change
from hephaestus.safety import seal
from hephaestus.safety.effects import Effect
from hephaestus.safety.seal import Fingerprints

SINK = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": "t"}
SECRET = "hunter2-seal-canary"
URL = "http://c:8083"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    for cluster in ("c", "d"):
        folder = tmp_path / "connectors" / cluster / "sink"
        folder.mkdir(parents=True)
        for i in range(7):
            config = {**SINK, "connection.password": SECRET} if i == 0 else SINK
            (folder / f"s{i}.json").write_text(json.dumps({"name": f"s{i}", "config": config}))
    (tmp_path / "hephaestus.yaml").write_text(
        f"clusters:\n  c: {{url: '{URL}', connectors: connectors/c}}\n"
        "  d: {url: 'http://d:8083', connectors: connectors/d}\n"
    )
    return load_project(tmp_path / "hephaestus.yaml")


LIVE = {
    "a": Live("a", {**SINK, "connection.password": "live-pw-canary"}, "sink", "RUNNING"),
    "z": Live("z", SINK, "sink"),
}
PLAN = Plan(
    "c",
    (
        Step("create", "s0", {**SINK, "connection.password": SECRET}, origin="connectors/c/sink/s0.json"),
        Step("update", "a", SINK, live_state="RUNNING", effects=(Effect("keys-changed", "x"),)),
        Step("unchanged", "z", SINK),
    ),
    publications=(Change("bob", "pub", ("public.x",), ("public.y",), ("src",)),),
    adopt=("z",),
)
BASIS = Basis("http://c:8083", "kafka-1", LIVE, frozenset({"a"}), {"bob/pub": {"tables": frozenset({"public.y"})}})


def made(project: Project, outcome: ClusterOutcome | None = None) -> sealed.Sealed:
    outcome = outcome or ClusterOutcome("c", URL, PLAN, basis=BASIS)
    return sealed.build(project, [outcome], sealed.Options(("c",)), [project.clusters["c"]])


def written(project: Project, s: sealed.Sealed) -> Path:
    path = Path(project.file).parent / "plan.json"
    sealed.write(path, s)
    return path


def edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_the_file_holds_the_steps_and_preconditions_and_reveals_no_secret(project: Project) -> None:
    s = made(project)
    path = written(project, s)
    text = path.read_text()
    assert SECRET not in text and "live-pw-canary" not in text
    doc = json.loads(text)
    assert doc["hephaestus_plan"] == 2 and doc["id"] == s.id == doc["seal"][7:19] and "signature" not in doc
    body = doc["body"]
    c = body["clusters"]["c"]
    assert [(x["action"], x["name"]) for x in c["steps"]] == [("create", "s0"), ("update", "a")]
    assert c["steps"][0]["config"]["connection.password"] == {"secret": s.fingerprints.value(SECRET)}
    assert c["steps"][0]["config"]["topics"] == "t" and c["steps"][1]["effects"] == ["keys-changed"]
    assert sorted(c["live"]) == ["a", "z"] and c["url"] == URL and c["kafka_cluster_id"] == "kafka-1"
    assert c["publications"] == [
        {"database": "bob", "publication": "pub", "add": ["public.x"], "drop": ["public.y"], "connectors": ["src"]}
    ]
    assert c["adopt"] == ["z"] and len(body["git"]) == 7 and body["options"]["clusters"] == ["c"]
    loaded = sealed.load(path, project)
    assert loaded.id == s.id and loaded.options == sealed.Options(("c",))


def test_no_plan_is_sealed_when_a_cluster_could_not_be_planned(project: Project) -> None:
    for broken in (
        ClusterOutcome("c", URL, None, error="down"),
        ClusterOutcome("c", URL, PLAN),
        ClusterOutcome("c", URL, PLAN, invalid={"a": {"k": ("bad",)}}, basis=BASIS),
    ):
        with pytest.raises(HephaestusError, match="no plan sealed"):
            made(project, broken)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["body"]["options"].update(allow_destructive="all"), "edited or truncated"),  # issue 29
        (lambda d: d["body"]["options"].update(force=True), "edited or truncated"),
        (lambda d: d["body"]["options"].update(clusters=[]), "edited or truncated"),
        (lambda d: d["body"]["options"].update(targets="zz*"), "edited or truncated"),
        (lambda d: d["body"]["clusters"]["c"]["steps"].pop(), "edited or truncated"),
        (lambda d: d.update(seal="sha256:" + "0" * 64), "edited or truncated"),
        (lambda d: d.pop("body"), "edited or truncated"),
        (lambda d: d.update(id="000000000000"), "id does not match"),
        (lambda d: d.update(hephaestus_plan=1), "format 1, not 2"),
        (lambda d: d.pop("hephaestus_plan"), "not a hephaestus plan file"),
    ],
)
def test_an_edited_plan_is_refused_naming_what_is_wrong(project: Project, change: Any, message: str) -> None:
    path = written(project, made(project))
    edit(path, change)
    with pytest.raises(InputError, match=message) as err:
        sealed.load(path, project)
    assert err.value.file == str(path)


def test_a_hand_made_plan_with_a_valid_seal_is_still_checked_for_shape(project: Project) -> None:
    """Anyone may recompute a content hash: the body is still checked strictly (and, with a key,
    signed). `"force": "no"` is not read as true."""
    path = written(project, made(project))
    for change, field in (
        (lambda b: b["options"].update(force="no"), "body.options.force"),
        (lambda b: b["options"].update(targets="zz*"), "body.options.targets"),
        (lambda b: b["clusters"]["c"]["steps"][0].update(action="drop"), "body.clusters.c.steps[0].action"),
        (lambda b: b.update(extra=1), "body"),
    ):
        doc = json.loads(path.read_text())
        change(doc["body"])
        doc["seal"] = seal.seal(doc["body"])
        doc["id"] = doc["seal"][7:19]
        path.write_text(json.dumps(doc))
        with pytest.raises(InputError, match="not a well-formed plan") as err:
            sealed.load(path, project)
        assert err.value.field == field
        path = written(project, made(project))


def test_a_truncated_file_is_an_input_error(project: Project) -> None:
    path = written(project, made(project))
    path.write_text(path.read_text()[:200])
    with pytest.raises(InputError, match="invalid JSON"):
        sealed.load(path, project)


def test_with_a_key_only_a_signed_plan_is_applied(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    unsigned = written(project, made(project))
    monkeypatch.setenv(seal.KEY_ENV, "ci-key")
    with pytest.raises(InputError, match="not signed, and HEPHAESTUS_PLAN_KEY is set"):
        sealed.load(unsigned, project)
    path = written(project, made(project))
    assert json.loads(path.read_text())["signature"].startswith("hmac-sha256:")
    assert sealed.load(path, project).id
    forged = json.loads(path.read_text())
    forged["body"]["options"]["force"] = True
    forged["seal"] = seal.seal(forged["body"])
    forged["id"] = forged["seal"][7:19]
    path.write_text(json.dumps(forged))
    with pytest.raises(InputError, match="signature does not match"):
        sealed.load(path, project)
    monkeypatch.setenv(seal.KEY_ENV, "another-key")
    with pytest.raises(InputError, match="signature does not match"):
        sealed.load(written_signed(project, "ci-key", monkeypatch), project)
    monkeypatch.delenv(seal.KEY_ENV)
    with pytest.raises(InputError, match="signed: set HEPHAESTUS_PLAN_KEY"):
        sealed.load(written_signed(project, "ci-key", monkeypatch), project)


def written_signed(project: Project, key: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    before = seal.plan_key()
    monkeypatch.setenv(seal.KEY_ENV, key)
    path = written(project, made(project))
    if before is None:
        monkeypatch.delenv(seal.KEY_ENV)
    else:
        monkeypatch.setenv(seal.KEY_ENV, before.decode())
    return path


def test_moved_inputs_make_a_plan_stale_and_a_foreign_project_is_refused(project: Project) -> None:
    path = written(project, made(project))
    root = Path(project.file).parent
    for i in range(7):
        (root / f"connectors/c/sink/s{i}.json").write_text("{}")
    with pytest.raises(sealed.StalePlan, match=r"is stale: .*s0.json, .*s4.json and 2 more changed since") as err:
        sealed.load(path, project)
    assert err.value.exit_code == 2
    (root / "hephaestus.yaml").write_text((root / "hephaestus.yaml").read_text() + "\n")
    with pytest.raises(sealed.StalePlan, match="hephaestus.yaml"):
        sealed.load(path, load_project(root / "hephaestus.yaml"))
    other = replace(project, clusters={"d": project.clusters["d"]})
    with pytest.raises(InputError, match="for clusters this project does not name: c"):
        sealed.load(path, other)
    with pytest.raises(InputError, match="made for deployment 'default'"):
        sealed.load(path, replace(project, name="prod"))


def test_identity_a_foreign_connect_or_kafka_is_named(project: Project) -> None:
    s = made(project)
    assert sealed.identity(s, "c", URL, "kafka-1") == ""
    assert "made against http://c:8083, and cluster c is now http://x:8083: a foreign plan" in sealed.identity(
        s, "c", "http://x:8083", "kafka-1"
    )
    assert "Kafka kafka-1, and http://c:8083 now runs on Kafka kafka-2" in sealed.identity(s, "c", URL, "kafka-2")
    assert sealed.identity(s, "d", URL, "kafka-1") == f"plan {s.id} has no cluster d"


def test_preconditions_cover_secret_values_states_ownership_and_publications(project: Project) -> None:
    s = made(project)
    assert sealed.stale(s, "c", PLAN, BASIS) == ""
    rotated = {**LIVE, "a": Live("a", {**SINK, "connection.password": "rotated-pw"}, "sink", "RUNNING")}
    assert "live config or state of a changed" in sealed.stale(s, "c", PLAN, replace(BASIS, live=rotated))  # issue 29
    paused = {**LIVE, "a": replace(LIVE["a"], state="PAUSED")}
    assert "of a changed" in sealed.stale(s, "c", PLAN, replace(BASIS, live=paused))  # a written one's state
    flapping = {**LIVE, "z": replace(LIVE["z"], state="FAILED")}
    assert sealed.stale(s, "c", PLAN, replace(BASIS, live=flapping)) == ""  # an untouched one's state is health
    extra = {**LIVE, "new": Live("new", SINK, "sink")}
    assert "of new changed" in sealed.stale(s, "c", PLAN, replace(BASIS, live=extra))
    assert "owns on the cluster changed" in sealed.stale(s, "c", PLAN, replace(BASIS, owned=frozenset()))
    assert "publication changed" in sealed.stale(s, "c", PLAN, replace(BASIS, published={}))


def test_the_steps_run_as_sealed_with_secrets_taken_from_git(project: Project) -> None:
    s = made(project)
    desired = {"s0": Desired("s0", {**SINK, "connection.password": SECRET})}
    steps = sealed.steps(s, "c", desired, LIVE)
    assert [(x.action, x.name) for x in steps] == [("create", "s0"), ("update", "a")]
    assert steps[0].config["connection.password"] == SECRET and steps[0].origin == "connectors/c/sink/s0.json"
    assert steps[1].live_state == "RUNNING"
    with pytest.raises(sealed.StalePlan, match="the secret connection.password of s0 is not the one planned"):
        sealed.steps(s, "c", {"s0": Desired("s0", {**SINK, "connection.password": "other"})}, LIVE)
    with pytest.raises(sealed.StalePlan):
        sealed.steps(s, "c", {}, LIVE)
    assert sealed.publications(s, "c") == PLAN.publications and sealed.adopt(s, "c") == ("z",)
    assert sealed.adopt(s, "d") == ()


def test_effects_judged_again_must_be_the_sealed_ones(project: Project) -> None:
    s = made(project)
    assert sealed.effects_moved(s, "c", PLAN) == ""
    moved = replace(PLAN, steps=(PLAN.steps[0], replace(PLAN.steps[1], effects=())))
    assert sealed.effects_moved(s, "c", moved) == (
        "stale plan: the effects of a differ from the plan's; make a new plan"
    )


def test_fingerprints_are_keyed_and_stretch_secrets() -> None:
    a, b = Fingerprints(seal.new_salt()), Fingerprints(seal.new_salt())
    assert a.value("pw") != b.value("pw") and a.value("pw") == a.value("pw") and len(a.value("pw")) == 32
    assert a.config({"k": "v"}) != a.config({"k": "w"}) and a.config({"k": "v"}) != a.config({"k": "v"}, "PAUSED")
    assert a.config({"k": "v", "name": "x"}) == a.config({"k": "v"})
    assert a.config({"password": "one"}) != a.config({"password": "two"})
    keyed = Fingerprints("00" * 16, b"key")
    assert keyed.of([1]) != Fingerprints("00" * 16).of([1]) and keyed.of([1]) == Fingerprints("00" * 16, b"key").of([1])
    assert seal.is_secret("connection.password", "x") and seal.is_secret("url", "jdbc:postgresql://u:pw12@h/d")
    assert not seal.is_secret("topics", "t")
    body = {"b": 1, "a": [1, "é"]}
    assert seal.canonical(body) == '{"a":[1,"é"],"b":1}'.encode()
    assert seal.seal(body) == seal.seal({"a": [1, "é"], "b": 1}) and seal.seal(body).startswith("sha256:")
    assert seal.verify(seal.signature(body, b"k"), seal.signature(body, b"k"))
    assert not seal.verify(seal.signature(body, b"k"), seal.signature(body, b"j"))
    with pytest.raises(ValueError):
        seal.canonical({"x": float("nan")})
