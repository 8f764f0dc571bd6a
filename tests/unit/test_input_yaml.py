"""Hostile definitions through `hephaestus generate`: strict, bounded YAML; exit 1, the file (and
line) named, nothing written, no traceback, never a whole value echoed."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.conftest import Project, Result

GOOD = """\
cluster: platforms
database: bob
envs: [local]
orgs: [manabie]
pipelines:
  - source_table: users
    sinks:
      - database: auth
"""


def only(project: Project, text: str | bytes) -> Result:
    """bob.yaml is the only definition; generate once."""
    for f in project.definitions.glob("*.yaml"):
        f.unlink()
    path = project.definitions / "bob.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return project.generate()


def refused(project: Project, text: str | bytes) -> str:
    """Generate is refused: exit 1, no file written, a clean error naming bob.yaml."""
    result = only(project, text)
    assert result.code == 1, result.out + result.err
    assert project.files() == {}, "nothing may be written"
    assert "bob.yaml" in result.err
    assert "Traceback" not in result.err and "unexpected" not in result.err
    return result.err


def configs(result: Result, project: Project) -> dict[str, dict[str, str]]:
    assert result.code == 0, result.err
    return {json.loads(b)["name"]: json.loads(b)["config"] for b in project.files().values()}


def test_a_duplicate_cluster_names_both_lines_and_writes_nothing(project: Project) -> None:
    err = refused(project, GOOD + "cluster: lmsdwh\n")
    assert "bob.yaml:9 at cluster: duplicate key 'cluster' (first at line 1)" in err


def test_a_duplicate_key_deep_inside_is_found_too(project: Project) -> None:
    err = refused(project, GOOD.replace("      - database: auth\n", "      - database: auth\n        database: x\n"))
    assert "bob.yaml:9 at pipelines[0].sinks[0].database: duplicate key 'database' (first at line 8)" in err


def test_an_alias_bomb_is_refused_at_once_with_a_short_message(project: Project) -> None:
    bomb = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
    )
    assert len(bomb) < 1500
    err = refused(project, bomb + GOOD)
    assert "bob.yaml:1: anchors and aliases (&, *) are not supported" in err
    assert len(err) < 500 and "lol" not in err


def test_an_anchor_alone_is_refused(project: Project) -> None:
    err = refused(project, GOOD.replace("envs: [local]", "envs: &e [local]"))
    assert "bob.yaml:3" in err and "anchors and aliases" in err


def test_yaml_11_scalars_keep_the_text_written(project: Project) -> None:
    text = GOOD + (
        "source:\n  options: {a.time: 5:00, a.octal: 010, a.hex: 0x1F, a.exp: 1e3, a.flag: True,\n"
        "             a.quoted: '010', a.on: on, a.int: 42}\n"
        "sink_defaults:\n  options: {s.time: 1:30, s.octal: 0700}\n"
    )
    text = text.replace("      - database: auth\n", "      - database: auth\n        options: {s.octal: 007}\n")
    got = configs(only(project, text), project)
    src = got["local_manabie_bob_source_connector"]
    assert (src["a.time"], src["a.octal"], src["a.hex"], src["a.exp"]) == ("5:00", "010", "0x1F", "1e3")
    assert (src["a.flag"], src["a.quoted"], src["a.on"], src["a.int"]) == ("true", "010", "on", "42")
    sink = got["local_manabie_bob_to_auth_users_sink_connector"]
    assert (sink["s.time"], sink["s.octal"]) == ("1:30", "007"), "the sink's own option wins, as written"


def test_invalid_utf8_names_file_and_line(project: Project) -> None:
    err = refused(project, GOOD.encode().replace(b"envs: [local]", b"envs: [loc\xe9l]"))
    assert "bob.yaml:3: not UTF-8: byte 0xe9" in err


def test_a_utf8_bom_is_accepted_and_changes_nothing(project: Project) -> None:
    plain = configs(only(project, GOOD), project)
    with_bom = configs(only(project, b"\xef\xbb\xbf" + GOOD.encode()), project)
    assert with_bom == plain


def test_utf16_is_not_utf8(project: Project) -> None:
    err = refused(project, GOOD.encode("utf-16"))
    assert "not UTF-8" in err


def test_deep_nesting_is_refused(project: Project) -> None:
    err = refused(project, GOOD + "converter: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "bob.yaml:9: nested deeper than 64 levels" in err


def test_a_huge_file_is_refused_before_parsing(project: Project) -> None:
    err = refused(project, GOOD + "#" + "x" * (1024 * 1024) + "\n")
    assert "file too large" in err


def test_a_directory_named_like_a_definition(project: Project) -> None:
    (project.definitions / "zz.yaml").mkdir()
    result = project.generate()
    assert result.code == 1
    assert "zz.yaml: is a directory, expected a file" in result.err
    assert project.files() == {}


def test_every_missing_key_is_listed(project: Project) -> None:
    err = refused(project, "database: bob\npipelines:\n  - {}\n")
    for key in ("cluster", "envs", "orgs"):
        assert f"at {key}: missing required key '{key}'" in err
    assert "at pipelines[0].sinks: missing required key 'sinks'" in err
    assert "pipelines[0].sinks: missing required key" in err


def test_every_unknown_key_is_listed(project: Project) -> None:
    err = refused(project, GOOD + "colour: blue\nflavor: x\n")
    assert "bob.yaml:9 at colour: unknown key 'colour'" in err
    assert "bob.yaml:10 at flavor: unknown key 'flavor'" in err


def test_a_long_value_is_never_echoed_whole(project: Project) -> None:
    err = refused(project, GOOD.replace("cluster: platforms", "cluster: " + "X" * 5000))
    assert "bob.yaml:1 at cluster" in err and "X" * 41 not in err and len(err) < 1000


def test_a_long_unknown_key_is_cut_in_the_field_and_message(project: Project) -> None:
    # A key is a name, shown whole (issue 48), unless longer than any real name (NAME_CLIP).
    err = refused(project, GOOD + "? " + "k" * 5000 + "\n: 1\n")  # explicit: implicit keys stop at 1024
    assert "unknown key" in err and "k" * 255 + "…" in err and "k" * 256 not in err


def test_an_unknown_key_is_named_whole(project: Project) -> None:
    key = "sink_database_connection_pool_maximum_size"  # 42 characters: once cut at 40
    err = refused(project, GOOD + key + ": 1\n")
    assert f"bob.yaml:9 at {key}: unknown key {key!r}" in err


def test_a_second_document_is_refused(project: Project) -> None:
    err = refused(project, GOOD + "---\n" + GOOD)
    assert "bob.yaml:9: one YAML document per file" in err


def test_a_python_tag_is_refused(project: Project) -> None:
    err = refused(project, GOOD.replace("database: bob", "database: !!python/object/apply:os.system [ls]"))
    assert "bob.yaml:2 at database: tag" in err and "is not supported" in err


def test_a_complex_key_is_refused(project: Project) -> None:
    err = refused(project, GOOD + "? [a, b]\n: c\n")
    assert "complex keys are not supported" in err


def test_a_control_character_names_its_line(project: Project) -> None:
    err = refused(project, GOOD.replace("orgs: [manabie]", "orgs: [mana\x07bie]"))
    assert "bob.yaml:4: invalid YAML: character #x0007 is not allowed" in err


def test_a_lone_surrogate_escape_is_refused(project: Project) -> None:
    err = refused(project, GOOD.replace("database: bob", 'database: "\\ud800"'))
    assert "bob.yaml:2: a lone surrogate escape" in err


def test_an_endless_integer_is_refused(project: Project) -> None:
    err = refused(project, GOOD + "source: {heartbeat_interval_ms: " + "9" * 5000 + "}\n")
    assert "bob.yaml:9 at source.heartbeat_interval_ms: number" in err and "too long" in err


def test_a_broken_schema_snapshot_directory_and_encoding(project: Project) -> None:
    (project.catalogs / "zz.json").mkdir()
    (project.catalogs / "yy.json").write_bytes(b'{"database": "caf\xe9"}')
    only(project, GOOD)
    result = project.generate()
    assert result.code == 1
    assert "zz.json: is a directory, expected a file" in result.err
    assert "yy.json:1: not UTF-8" in result.err


def test_a_snapshot_missing_every_key_and_a_duplicate_database(project: Project) -> None:
    (project.catalogs / "empty.json").write_text("{}")
    (project.catalogs / "zz_bob_again.json").write_text((project.catalogs / "bob.json").read_text())
    result = only(project, GOOD)
    assert result.code == 1
    assert "empty.json at database: missing required key 'database'" in result.err
    assert "empty.json at tables: missing required key 'tables'" in result.err
    assert "zz_bob_again.json at database: database 'bob' is also in" in result.err


def test_a_snapshot_with_deep_nesting_or_duplicate_keys(project: Project) -> None:
    (project.catalogs / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (project.catalogs / "dup.json").write_text('{"database": "x", "database": "y", "tables": {}}')
    result = only(project, GOOD)
    assert result.code == 1
    assert "deep.json: invalid JSON: nested deeper than 64 levels" in result.err
    assert "dup.json: invalid JSON: duplicate key 'database'" in result.err


def test_names_longer_than_postgres_allows_are_refused_before_being_quoted(project: Project) -> None:
    err = refused(project, GOOD.replace("source_table: users", "source_table: " + "u" * 3000))
    assert "bob.yaml:6 at pipelines[0].source_table: name 'uuuu" in err
    assert "is longer than 63 bytes (PostgreSQL's limit)" in err and "u" * 256 not in err


def test_a_long_snapshot_mode_is_not_quoted_whole(project: Project) -> None:
    err = refused(project, GOOD + "source: {snapshot_mode: " + "m" * 5000 + "}\n")
    assert "source.snapshot_mode" in err and len(err) < 1000


def test_long_names_in_a_snapshot(project: Project) -> None:
    (project.catalogs / "long.json").write_text(
        json.dumps(
            {
                "database": "long",
                "tables": {
                    "public." + "t" * 100: {"columns": [{"name": "c" * 100, "type": "int"}], "primary_key": ["c" * 100]}
                },
            }
        )
    )
    result = only(project, GOOD)
    assert result.code == 1
    for field in ("tables.public.tttt", "columns[0].name", "primary_key[0]"):
        assert field in result.err
    # Names, shown whole (issue 48): the user sees which one to shorten.
    assert f"name {'c' * 100!r} is longer than 63 bytes" in result.err
    assert f"tables.public.{'t' * 100}.columns[0].name" in result.err


def _depth(value: object) -> int:
    """Container nesting as _check_tree counts it (a scalar is 0, `[]` is 1)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ax', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=3), inner, max_size=3)
    ),
    max_leaves=40,
)


@given(data=_JSON, wrap=st.integers(0, 70))
def test_load_json_refuses_exactly_what_nests_deeper_than_the_limit(data: object, wrap: int) -> None:
    """Brackets inside strings never count (the text pre-check only spares the walk), and the
    verdict is the nesting's, on both sides of the limit."""
    import tempfile
    from pathlib import Path

    from hephaestus.errors import InputError
    from hephaestus.yamlsrc import MAX_DEPTH, load_json

    for _ in range(wrap):
        data = [data]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.json"
        path.write_text(json.dumps(data))
        try:
            load_json(path)
            refused = False
        except InputError as exc:
            assert "nested deeper" in str(exc)
            refused = True
    assert refused == (_depth(data) > MAX_DEPTH)
