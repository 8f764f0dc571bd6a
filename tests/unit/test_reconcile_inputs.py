"""Project file and desired-state loading: bad input names file and field; secrets by reference."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hephaestus.errors import HephaestusError, InputError, InputErrors
from hephaestus.fleet.desired import load_desired
from hephaestus.project import load_project


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def connector(path: Path, name: str, **config: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": name, "config": {"connector.class": "x.Sink", **config}}))


PROJECT = """
clusters:
  platforms:
    url: http://connect:8083
    connectors: connectors/platforms
    select: ["local_manabie_*"]
    username: admin
    password: {env: CONNECT_PASSWORD}
"""


def test_project_loads_and_resolves_secrets_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = load_project(write(tmp_path / "hephaestus.yaml", PROJECT))
    cluster = project.clusters["platforms"]
    assert cluster.url == "http://connect:8083"
    assert cluster.connectors == tmp_path / "connectors/platforms"
    monkeypatch.setenv("CONNECT_PASSWORD", "s3cret")
    assert cluster.password is not None and cluster.password.resolve("x") == "s3cret"
    monkeypatch.delenv("CONNECT_PASSWORD")
    with pytest.raises(HephaestusError, match="CONNECT_PASSWORD is not set"):
        cluster.password.resolve("cluster password")


def test_project_refuses_an_inline_password(tmp_path: Path) -> None:
    path = write(tmp_path / "hephaestus.yaml", PROJECT.replace("{env: CONNECT_PASSWORD}", "hunter2"))
    with pytest.raises(InputErrors) as err:
        load_project(path)
    assert "hephaestus.yaml:7 at clusters.platforms.password" in str(err.value)
    assert "hunter2" not in str(err.value)
    assert "expected one of the keys env, file" in str(err.value)


def test_project_refuses_a_dsn_with_password(tmp_path: Path) -> None:
    path = write(tmp_path / "hephaestus.yaml", PROJECT + "databases:\n  bob: {dsn: 'dbname=bob password=s3cr3t'}\n")
    with pytest.raises(InputErrors, match="databases.bob.dsn") as err:
        load_project(path)
    assert "s3cr3t" not in str(err.value)


def test_url_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_URL", "http://elsewhere:1/")
    path = write(
        tmp_path / "p.yaml",
        PROJECT.replace("    url: http://connect:8083\n", "    url: http://connect:8083\n    url_env: MY_URL\n"),
    )
    assert load_project(path).clusters["platforms"].url == "http://elsewhere:1"


def test_unknown_cluster_selected(tmp_path: Path) -> None:
    project = load_project(write(tmp_path / "hephaestus.yaml", PROJECT))
    with pytest.raises(InputError, match="no cluster 'nope'"):
        project.select(("nope",))


def test_desired_selects_and_skips_custom_unless_asked(tmp_path: Path) -> None:
    project = load_project(write(tmp_path / "hephaestus.yaml", PROJECT))
    base = tmp_path / "connectors/platforms"
    connector(base / "sink/local_manabie_a.json", "local_manabie_a")
    connector(base / "sink/stag_manabie_b.json", "stag_manabie_b")
    connector(base / "custom/local_manabie_custom.json", "local_manabie_custom")
    cluster = project.clusters["platforms"]
    assert set(load_desired(cluster, include_custom=False)) == {"local_manabie_a"}
    assert set(load_desired(cluster, include_custom=True)) == {"local_manabie_a", "local_manabie_custom"}


def test_desired_bad_files_all_reported(tmp_path: Path) -> None:
    project = load_project(write(tmp_path / "hephaestus.yaml", PROJECT))
    base = tmp_path / "connectors/platforms"
    connector(base / "sink/local_manabie_a.json", "local_manabie_a", **{"tasks.max": 1})
    (base / "sink/b.json").write_text("{not json")
    connector(base / "source/local_manabie_c.json", "local_manabie_c")
    connector(base / "sink/local_manabie_c.json", "local_manabie_c")
    with pytest.raises(InputErrors) as err:
        load_desired(project.clusters["platforms"], include_custom=False)
    text = str(err.value)
    assert "local_manabie_a.json at config.tasks.max: must be a string" in text
    assert "b.json:1: invalid JSON" in text
    assert "connector 'local_manabie_c' is also defined in" in text


def test_helm_templated_names_rendered_from_cluster_values(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hephaestus.yaml",
        PROJECT.replace(
            '    select: ["local_manabie_*"]\n', "    helm_values: {environment: local, vendor: manabie}\n"
        ),
    )
    base = tmp_path / "connectors/platforms"
    connector(
        base / "sink/bob_to_auth.json",
        "{{ .Values.global.environment }}_{{ .Values.global.vendor }}_x",
        topics="{{ .Values.global.environment }}.{{ .Values.global.vendor }}.bob.public.users",
    )
    desired = load_desired(load_project(path).clusters["platforms"], include_custom=False)
    assert desired["local_manabie_x"].config["topics"] == "local.manabie.bob.public.users"


def test_helm_value_missing(tmp_path: Path) -> None:
    project = load_project(
        write(tmp_path / "hephaestus.yaml", PROJECT.replace('    select: ["local_manabie_*"]\n', ""))
    )
    connector(tmp_path / "connectors/platforms/sink/x.json", "{{ .Values.global.environment }}_x")
    with pytest.raises(InputErrors, match="helm_values.environment"):
        load_desired(project.clusters["platforms"], include_custom=False)


def test_select_also_scopes_the_live_side(tmp_path: Path) -> None:
    from hephaestus.project import Cluster

    scoped = Cluster("c", "http://c", tmp_path, ("local_manabie_*", "x?"))
    assert scoped.selects("local_manabie_x") and scoped.selects("xy")
    assert not scoped.selects("stag_manabie_x") and not scoped.selects("xyz") and not scoped.selects("Local_manabie_x")
    assert Cluster("c", "http://c", tmp_path).selects("anything")


def test_held_back_names_the_custom_connectors_without_the_flag(tmp_path: Path) -> None:
    from hephaestus.fleet.desired import held_back

    project = load_project(write(tmp_path / "hephaestus.yaml", PROJECT))
    connector(tmp_path / "connectors/platforms/custom/local_manabie_custom.json", "local_manabie_custom")
    cluster = project.clusters["platforms"]
    assert held_back(cluster, include_custom=False) == {"local_manabie_custom"}
    assert held_back(cluster, include_custom=True) == frozenset()


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ('"old_sink"', True),
        ('""', True),
        ("5", False),
        ('".."', False),
        ('"a/b"', False),
        ('"x"', False),
        ("null", False),
    ],
)
def test_renamed_from_is_checked_at_load(tmp_path: Path, value: str, ok: bool) -> None:
    project = load_project(
        write(tmp_path / "hephaestus.yaml", PROJECT.replace('    select: ["local_manabie_*"]\n', ""))
    )
    path = tmp_path / "connectors/platforms/sink/x.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"name": "x", "renamed_from": ' + value + ', "config": {"connector.class": "C"}}')
    if ok:
        (d,) = load_desired(project.clusters["platforms"], include_custom=False).values()
        assert d.renamed_from == json.loads(value)
    else:
        with pytest.raises(InputErrors, match="x.json at renamed_from: renamed_from must be another connector's name"):
            load_desired(project.clusters["platforms"], include_custom=False)
