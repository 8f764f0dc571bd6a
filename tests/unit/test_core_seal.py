"""The sealed plan (safety.seal, reconciler.sealed): what the file holds and never reveals, and
how an edited, truncated, foreign or stale plan is refused (mutation-tested core)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hephaestus.errors import HephaestusError, InputError
from hephaestus.fleet.model import Desired, Live
from hephaestus.project import Project, load_project
from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler import sealed
from hephaestus.reconciler.outcome import Basis, ClusterOutcome
from hephaestus.reconciler.plan import Plan, Step
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
        Step("create", "s0", config={**SINK, "connection.password": SECRET}, origin="connectors/c/sink/s0.json"),
        Step("update", "a", config=SINK, live_state="RUNNING", effects=(Effect("keys-changed", "x"),)),
        Step("unchanged", "z", config=SINK),
    ),
    publications=(PublicationChange("bob", "pub", ("public.x",), ("public.y",), ("src",)),),
    adopt=("z",),
)
BASIS = Basis("http://c:8083", "kafka-1", LIVE, frozenset({"a"}), {"bob/pub": {"tables": frozenset({"public.y"})}})


def made(project: Project, outcome: ClusterOutcome | None = None) -> sealed.Sealed:
    outcome = outcome or ClusterOutcome("c", URL, PLAN, basis=BASIS)
    return sealed.build(project, [outcome], sealed.PlanScope(clusters=("c",)), [project.clusters["c"]])


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
    assert doc["hephaestus_plan"] == 3 and doc["id"] == s.id == doc["seal"][7:19] and "signature" not in doc
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
    assert loaded.id == s.id and loaded.options == sealed.PlanScope(clusters=("c",))


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
        (lambda d: d.update(hephaestus_plan=2), "format 2, not 3: make a new plan"),
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


# --- pinned: what the file holds, to the letter (from mutation testing) ----------------------


def test_the_pass_and_its_words(project: Project) -> None:
    from hephaestus.safety.gate import Cleared, Item, check, judge, passed

    with pytest.raises(TypeError, match=r"^a Cleared is handed out by safety\.gate\.clear only$"):
        Cleared("c", ())
    assert check([]).cluster == "" and passed(judge([Item("c", "a", "update")]), "c").cluster == "c"


def test_fingerprints_stretch_exactly_the_secret_values() -> None:
    fp = Fingerprints("00" * 16)
    assert fp.config({"connection.password": "p", "topics": "t"}) == fp.of(
        [{"connection.password": "secret:" + fp.value("p"), "topics": "t"}, ""]
    )
    assert fp.config({"topics": "t"}, "PAUSED") == fp.of([{"topics": "t"}, "PAUSED"])


def test_what_each_cluster_holds_is_pinned(project: Project) -> None:
    s = made(project)
    c = s.body["clusters"]["c"]
    fp = s.fingerprints
    assert c["live"] == {"a": fp.config(LIVE["a"].config, "RUNNING"), "z": fp.config(LIVE["z"].config)}
    assert c["published"] == {"bob/pub": fp.of({"tables": ["public.y"]})}
    assert c["owned"] == fp.of(["a"])


def test_the_file_is_stable_text(project: Project, tmp_path: Path) -> None:
    rename = Step(
        "rename",
        "néw",
        config=SINK,
        reason="from old, offsets kept",
        connector_class=SINK["connector.class"],
        origin="connectors/c/sink/néw.json",
        live_state="PAUSED",
        renamed_from="old",
        target_state="STOPPED",
    )
    live = {**LIVE, "old": Live("old", SINK, "sink", "PAUSED")}
    s = made(project, ClusterOutcome("c", URL, replace(PLAN, steps=(rename,)), basis=replace(BASIS, live=live)))
    path = written(project, s)
    text = path.read_text(encoding="utf-8")
    # The marker first (outputs.PLAN knows its own plan by its head), the body last, sorted.
    assert text.startswith('{\n  "hephaestus_plan": ') and text.endswith("}\n") and "néw" in text
    doc = json.loads(text)
    assert doc["created"].endswith("+00:00") and list(doc) == ["hephaestus_plan", "id", "created", "seal", "body"]
    assert list(doc["body"]) == sorted(doc["body"])
    assert sealed.steps(s, "c", {}, live) == (replace(rename, effects=()),)
    with pytest.raises(HephaestusError, match=r"^cannot write the plan to .*: Is a directory$"):
        sealed.write(tmp_path, s)


def test_every_refusal_names_the_file_and_its_words(project: Project) -> None:
    path = written(project, made(project))
    for change, words, field in (
        (lambda d: d.update(seal=5), "the plan was edited or truncated: its seal does not match its content", ""),
        (lambda d: d.update(id="0" * 12), "the plan's id does not match its seal", "id"),
        (lambda d: d.pop("hephaestus_plan"), "not a hephaestus plan file", ""),
    ):
        doc = json.loads(path.read_text())
        change(doc)
        bad = path.with_name("bad.json")
        bad.write_text(json.dumps(doc))
        with pytest.raises(InputError) as err:
            sealed.load(bad, project)
        assert (err.value.file, err.value.field) == (str(bad), field)
        assert str(err.value).endswith(f": {words}")


def test_the_first_of_several_shape_errors_is_named_in_120_characters(project: Project) -> None:
    path = written(project, made(project))
    doc = json.loads(path.read_text())
    doc["body"]["clusters"]["c"]["steps"][0]["action"] = "a" * 300  # its message sorts first
    doc["body"]["options"]["force"] = "no"
    doc["seal"] = seal.seal(doc["body"])
    doc["id"] = doc["seal"][7:19]
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        sealed.load(path, project)
    assert err.value.file == str(path)
    message = str(err.value).split("not a well-formed plan: ", 1)[1]
    assert len(message) == 120 and message.startswith("'aaa")


def test_signature_refusals_name_the_file(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    unsigned = written(project, made(project)).rename(Path(project.file).parent / "unsigned.json")
    monkeypatch.setenv(seal.KEY_ENV, "k1")
    signed = written_signed(project, "k1", monkeypatch)
    with pytest.raises(InputError) as err:
        sealed.load(unsigned, project)
    assert err.value.file == str(unsigned)
    monkeypatch.setenv(seal.KEY_ENV, "k2")
    with pytest.raises(InputError) as err:
        sealed.load(signed, project)
    assert err.value.file == str(signed) and str(err.value).endswith(
        ": the plan's signature does not match (edited, or signed with another key)"
    )
    monkeypatch.delenv(seal.KEY_ENV)
    with pytest.raises(InputError) as err:
        sealed.load(signed, project)
    assert err.value.file == str(signed)


def test_a_signed_plan_keys_its_fingerprints_with_the_key(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(seal.KEY_ENV, "k1")
    s = made(project)
    salt = s.body["salt"]
    assert s.fingerprints.value("x") == Fingerprints(salt, b"k1").value("x") != Fingerprints(salt).value("x")
    loaded = sealed.load(written(project, s), project)
    assert sealed.stale(loaded, "c", PLAN, BASIS) == ""


def test_a_foreign_project_names_its_file(project: Project) -> None:
    path = written(project, made(project))
    for other in (replace(project, clusters={"d": project.clusters["d"]}), replace(project, name="prod")):
        with pytest.raises(InputError) as err:
            sealed.load(path, other)
        assert err.value.file == project.file


def test_listed_shows_five_and_counts_the_rest() -> None:
    from hephaestus.safety.effects import few

    assert few(list("abcde"), 5) == "a, b, c, d, e"
    assert few(list("abcdef"), 5) == "a, b, c, d, e and 1 more"


def test_stale_words(project: Project) -> None:
    s = made(project)
    assert sealed.stale(s, "c", PLAN, replace(BASIS, owned=frozenset())) == (
        "stale plan: what this deployment owns on the cluster changed since the plan; make a new plan"
    )
    assert sealed.stale(s, "c", PLAN, replace(BASIS, published={})) == (
        "stale plan: a source's publication changed since the plan; make a new plan"
    )


def test_a_sealed_step_without_effects_listed_has_none(project: Project) -> None:
    s = made(project)
    body = json.loads(json.dumps(s.body))
    for step in body["clusters"]["c"]["steps"]:
        step.pop("effects")
    bare = sealed.Sealed(s.id, body, s.fingerprints)
    no_effects = replace(PLAN, steps=tuple(replace(x, effects=()) for x in PLAN.steps))
    assert sealed.effects_moved(bare, "c", no_effects) == ""


def test_an_outcome_with_an_error_is_never_sealed(project: Project) -> None:
    with pytest.raises(HephaestusError, match=r"^no plan sealed: a cluster could not be planned \(see above\)$"):
        made(project, ClusterOutcome("c", URL, PLAN, error="x", basis=BASIS))
