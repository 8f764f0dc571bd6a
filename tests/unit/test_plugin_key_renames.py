"""Config keys a plugin release renamed (issue 50): the list is data with its source
(hephaestus/keyrenames.json), read against a pin or the version that runs. A bump across the
release rewrites the key in what generate writes, a rollback below it rewrites it back, a connector
file pinned past it that spells the other name is bad input (file and field named, nothing asked of
Connect), and `plugins`/`status` name a running version that does not read a key its config sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hephaestus import keyrenames
from hephaestus.errors import InputErrors
from hephaestus.fleet.plugins import Workers, findings
from hephaestus.keyrenames import Rename, RenameClash, misnamed, rewritten
from hephaestus.versions import requirement
from tests.unit.conftest import Project
from tests.unit.test_core_run import World, cfg

PG = "io.debezium.connector.postgresql.PostgresConnector"
MYSQL = "io.debezium.connector.mysql.MySqlConnector"
PIN = "connector.plugin.version"
# A rename that was gradual: the new name read from 1.3, the old one until 2.0.
GRADUAL = Rename("x.Src", "table.whitelist", "table.include.list", "1.3.0.Final", "2.0.0.Final", "test")
FAMILY = Rename("x.Src", "database.history.", "schema.history.internal.", "2.0", "2.0", "test", prefix=True)


def pg(pin: str | None = None, **keys: str) -> dict[str, str]:
    return {"connector.class": PG, **({PIN: pin} if pin is not None else {}), **keys}


# --- the data ---------------------------------------------------------------------------------


def test_every_packaged_rename_names_its_source_and_reads_as_versions() -> None:
    found = keyrenames.builtin()
    assert {r.cls for r in found} >= {PG, MYSQL}
    for r in found:
        assert r.source.startswith("https://") and r.old != r.new and r.cls.count(".") >= 2, r
        requirement(r.added), requirement(r.removed)  # each a version Connect reads
        assert r.prefix == r.old.endswith("."), r  # a family is named by its prefix


def test_debezium_2_renamed_the_server_name_to_the_topic_prefix() -> None:
    (m,) = misnamed(pg("2.1.4.Final", **{"database.server.name": "bob"}))
    assert (m.key, m.wanted) == ("database.server.name", "topic.prefix")
    assert m.why.startswith(f"{PG} reads it as 'topic.prefix' from 2.0.0.Final on (source: https://docs.confluent.io/")


# --- which side of the release a pin is on --------------------------------------------------


@pytest.mark.parametrize(
    ("pin", "wanted"),
    [
        ("2.0.0.Final", "table.include.list"),  # exactly the release that removed the old name
        ("[2.0,3.0)", "table.include.list"),
        ("(2.0,)", "table.include.list"),
        ("[2.0,2.1),[2.5,)", "table.include.list"),  # every range of a union past it
        ("1.2.9.Final", "table.whitelist"),  # before the new name was read
        ("(,1.3.0.Final)", "table.whitelist"),  # up to, not including, the release
    ],
)
def test_a_pin_wholly_on_one_side_of_the_release_wants_that_side_s_name(pin: str, wanted: str) -> None:
    other = "table.whitelist" if wanted == "table.include.list" else "table.include.list"
    (m,) = misnamed({"connector.class": "x.Src", PIN: pin, other: "a.b"}, (GRADUAL,))
    assert (m.key, m.wanted) == (other, wanted)
    assert misnamed({"connector.class": "x.Src", PIN: pin, wanted: "a.b"}, (GRADUAL,)) == []


@pytest.mark.parametrize(
    "pin",
    [None, "latest", "1.9.7.Final", "1.3.0.Final", "(,1.3.0.Final]", "[1.9,2.1)", "[1.0,1.1),[2.0,)", "[1.5,)"],
)
def test_no_pin_a_pin_where_both_names_are_read_or_one_across_the_release_decides_nothing(pin: str | None) -> None:
    for key in ("table.whitelist", "table.include.list"):
        config = {"connector.class": "x.Src", key: "a.b", **({PIN: pin} if pin is not None else {})}
        assert misnamed(config, (GRADUAL,)) == [] and rewritten(config, (GRADUAL,)) == config


def test_another_class_and_a_pin_connect_would_refuse_decide_nothing() -> None:
    assert misnamed({"connector.class": "y.Other", PIN: "2.1", "table.whitelist": "a"}, (GRADUAL,)) == []
    assert misnamed({"connector.class": "x.Src", PIN: "[2.1,", "table.whitelist": "a"}, (GRADUAL,)) == []


def test_a_family_of_keys_is_renamed_by_its_prefix_both_ways() -> None:
    old = {"connector.class": "x.Src", PIN: "2.1", "database.history.kafka.topic": "h", "database.hostname": "db"}
    assert rewritten(old, (FAMILY,)) == {
        "connector.class": "x.Src",
        PIN: "2.1",
        "schema.history.internal.kafka.topic": "h",
        "database.hostname": "db",  # not of the family: left alone
    }
    back = {"connector.class": "x.Src", PIN: "1.9", "schema.history.internal.kafka.topic": "h"}
    assert rewritten(back, (FAMILY,)) == {"connector.class": "x.Src", PIN: "1.9", "database.history.kafka.topic": "h"}
    (m,) = misnamed(old, (FAMILY,))
    assert "'schema.history.internal.*'" in m.why


def test_one_setting_under_both_names_with_two_values_is_refused_and_with_one_value_kept_once() -> None:
    both = pg("3.6.1.Final", **{"database.server.name": "bob", "topic.prefix": "other"})
    with pytest.raises(RenameClash, match="'database.server.name' and 'topic.prefix' are both set"):
        rewritten(both)
    same = pg("3.6.1.Final", **{"database.server.name": "bob", "topic.prefix": "bob"})
    assert rewritten(same) == pg("3.6.1.Final", **{"topic.prefix": "bob"})


# --- generate ---------------------------------------------------------------------------------


def test_generate_spells_each_key_as_the_pinned_version_reads_it(project: Project) -> None:
    from tests.unit.test_input_yaml import GOOD, configs, only

    source = "local_manabie_bob_source_connector"
    assert "topic.prefix" in configs(only(project, GOOD), project)[source]  # unpinned: as written
    old = GOOD + "source:\n  options: {connector.plugin.version: 1.9.7.Final}\n"
    got = configs(only(project, old), project)[source]
    assert "topic.prefix" not in got and got["database.server.name"]  # a rollback below Debezium 2.0
    before = project.files()
    back = GOOD + "source:\n  options: {connector.plugin.version: 3.6.1.Final, database.server.name: bob_x}\n"
    err = only(project, back)
    assert err.code == 1 and project.files() == before, err.out + err.err  # nothing written
    assert "bob.yaml" in err.err and "'database.server.name' and 'topic.prefix' are both set" in err.err


# --- a connector file pinned by hand ------------------------------------------------------------


def test_a_file_pinned_past_the_release_with_the_old_key_is_bad_input_and_nothing_is_asked(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "s", cfg(**{"connector.class": PG, PIN: "2.7.3.Final", "database.server.name": "bob"}))
    with pytest.raises(InputErrors) as caught:
        w.run()
    assert "sink/s.json at config.database.server.name: the pinned version does not read 'database.server.name'" in (
        str(caught.value)
    )
    assert "reads it as 'topic.prefix' from 2.0.0.Final on (source: https://" in str(caught.value)
    assert w.doubles["c"].log == []  # nothing asked, nothing written


def test_a_file_pinned_before_the_release_with_the_new_key_is_bad_input_too(tmp_path: Path) -> None:
    w = World(tmp_path, "c")
    w.git("c", "s", cfg(**{"connector.class": PG, PIN: "1.9.7.Final", "topic.prefix": "bob"}))
    with pytest.raises(InputErrors, match="at config.topic.prefix: the pinned version does not read 'topic.prefix'"):
        w.run()


# --- what runs (plugins, status) ------------------------------------------------------------------


def test_a_running_version_that_does_not_read_a_key_of_its_config_is_named() -> None:
    w = Workers("c", {"w1": {PG: frozenset({"2.7.3.Final"})}})
    configs = {"src": pg(**{"database.server.name": "bob"}), "ok": pg(**{"topic.prefix": "bob"})}
    found = findings("c", w, configs, {"src": "2.7.3.Final", "ok": "2.7.3.Final", "gone": "2.7.3.Final"})
    assert found == (
        "c: src: runs 2.7.3.Final, which does not read 'database.server.name': "
        + misnamed(pg("2.7.3.Final", **{"database.server.name": "bob"}))[0].why,
    )
    assert findings("c", w, configs, {"src": ""}) == ()  # the version is unknown (Connect before 4.1)


def test_the_plugins_command_exits_1_on_a_key_the_running_version_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx

    from hephaestus.cli import run
    from tests.connect_double import ConnectDouble, serve

    double = ConnectDouble()
    double.plugins = [(PG, "source", "2.7.3.Final")]
    with serve(double) as url:
        double.worker_id = httpx.URL(url).netloc.decode()
        (tmp_path / "c").mkdir()
        project = tmp_path / "hephaestus.yaml"
        project.write_text(f"clusters: {{c: {{url: '{url}', connectors: c}}}}\n")
        double.add("src", pg(**{"database.server.name": "bob", "slot.name": "s"}), type="source")
        assert run(["plugins", "--project", str(project), "-o", "json"]) == 1
    (cluster,) = json.loads(capsys.readouterr().out)["clusters"]
    assert any("src: runs 2.7.3.Final, which does not read 'database.server.name'" in e for e in cluster["errors"])


# --- the plan's judgement ------------------------------------------------------------------------


def test_a_bump_across_the_release_that_renamed_the_prefix_is_no_topic_change() -> None:
    from hephaestus.safety import effects
    from tests.unit.test_core_effects import SRC

    old = {k: v for k, v in SRC.items() if k != "topic.prefix"} | {PIN: "1.9.7.Final", "database.server.name": "bob"}
    bumped = {**SRC, PIN: "2.7.3.Final", "topic.prefix": "bob"}
    found = effects.of_update(old, bumped, running="1.9.7.Final")
    assert [(e.code, e.why) for e in found] == [
        (
            "plugin-upgrade",
            f"{PIN}: 1.9.7.Final → 2.7.3.Final (runs 1.9.7.Final); renamed: database.server.name → topic.prefix",
        )
    ]
    moved = effects.of_update(old, {**bumped, "topic.prefix": "other"})
    assert {"topics-renamed", "offsets-lost"} <= {e.code for e in moved}  # a rename that also moves is judged
    unpinned = effects.of_update(old, {k: v for k, v in bumped.items() if k != PIN})
    assert "topics-renamed" in {e.code for e in unpinned}  # no pin, no rename: the prefix did change


def test_a_rollback_below_the_release_names_the_old_name_and_the_release() -> None:
    (m,) = misnamed(pg("1.9.7.Final", **{"topic.prefix": "bob"}))
    assert (m.key, m.wanted) == ("topic.prefix", "database.server.name")
    assert m.why.startswith(f"{PG} reads it as 'database.server.name' before 2.0.0.Final (source: https://")


def test_the_judge_compares_the_old_config_under_the_new_pin_s_names_and_keeps_its_own_pin() -> None:
    from hephaestus.keyrenames import aligned

    old = pg("1.9.7.Final", **{"database.server.name": "bob"})
    assert aligned(old, pg("2.7.3.Final")) == pg("1.9.7.Final", **{"topic.prefix": "bob"})
    assert aligned(pg(**{"database.server.name": "bob"}), pg("2.7.3.Final")) == pg(**{"topic.prefix": "bob"})
    clash = pg("1.9.7.Final", **{"database.server.name": "bob", "topic.prefix": "x"})
    assert aligned(clash, pg("2.7.3.Final")) == clash  # which one is meant cannot be told: as it is
    assert aligned(old, pg()) == old  # no pin: nothing decided


def test_every_rename_of_a_class_applies_at_once() -> None:
    old = {"connector.class": MYSQL, PIN: "2.7.3.Final", "database.server.name": "m"}
    old |= {"database.history.kafka.topic": "h", "event.deserialization.failure.handling.mode": "warn"}
    assert rewritten(old) == {
        "connector.class": MYSQL,
        PIN: "2.7.3.Final",
        "topic.prefix": "m",
        "schema.history.internal.kafka.topic": "h",
        "event.processing.failure.handling.mode": "warn",
    }
