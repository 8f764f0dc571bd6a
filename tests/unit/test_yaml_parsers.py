"""libyaml's parser (ruamel.yaml.clib) reads input files when installed, ruamel's pure-Python
parser when libyaml refuses one (libyaml reads YAML 1.1). The C path is only sound if whatever
it accepts, the pure parser accepts too, with the same data, positions and errors of ours: a
differential test over every YAML file in the repository and over fuzzed text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml.error import YAMLError

from hephaestus import yamlsrc
from hephaestus.errors import InputError

REPO = Path(__file__).resolve().parents[2]
FILES = sorted(
    p
    for folder in ("definitions", "tests", "features", "dev")
    for p in (REPO / folder).rglob("*.yaml")
    if "{{" not in p.read_text(errors="replace")
)  # Helm templates are not YAML until rendered


def outcome(text: str, pure: bool) -> tuple[Any, ...]:
    """What the loader makes of `text` (pure=False: libyaml first, as load_yaml reads), or
    what ruamel's parser alone makes of it."""
    try:
        doc = yamlsrc._build("f.yaml", text, pure=True) if pure else yamlsrc.parse_yaml("f.yaml", text)
    except YAMLError:
        return ("refused by the parser",)
    except InputError as exc:
        return ("refused by us", str(exc))
    return ("read", doc.data, doc.pos)


def agree(text: str) -> None:
    assert outcome(text, pure=False) == outcome(text, pure=True), text


def test_the_c_parser_is_installed_with_the_package() -> None:
    assert yamlsrc._C_PARSER


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_yaml_file_here_reads_alike_with_both_parsers(path: Path) -> None:
    agree(path.read_text())


def test_yaml_12_syntax_libyaml_refuses_is_read_by_the_pure_parser(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("options: {a.time: 5:00, b: 'x'}\n")
    with pytest.raises(YAMLError):
        yamlsrc._build("f.yaml", path.read_text(), pure=False)
    assert yamlsrc.load_yaml(path).data == {"options": {"a.time": "5:00", "b": "x"}}


@pytest.mark.parametrize(
    "text", ["a: one\x85two\n", "a: one\u2028two\n", "a: one\u2029two\n", "\n\ufeff", "a\t", "!:!", "|#", ">\n..."]
)
def test_text_libyaml_reads_otherwise_goes_to_the_pure_parser(text: str) -> None:
    try:
        libyaml: tuple[Any, ...] = ("read", yamlsrc._build("f.yaml", text, pure=False).data)
    except YAMLError:
        libyaml = ("refused by the parser",)
    except InputError as exc:
        libyaml = ("refused by us", str(exc))
    assert libyaml != outcome(text, pure=True)[:2], "libyaml alone reads this otherwise"
    agree(text)


SYNTAX = st.sampled_from(
    list(" :-#'\"[]{},\n\t\\/&*!|>?%@`.~")
    + ["  ", "- ", ": ", "\n  ", "\n- ", "---\n", "...", "a: |\n  x\n", "b: >-\n  y\n  z\n", "\n    "]
)
WORDS = st.sampled_from(
    [
        "a",
        "key",
        "5:00",
        "010",
        "0x1F",
        "on",
        "null",
        "1e3",
        "é",
        "\u2028",
        "\x85",
        "\ufeff",
        "x y",
        "# c",
        "'a b'",
        '"x\\ny"',
        "k: v\n",
        "[a, b]",
        "{a: 1}",
    ]
)


@settings(max_examples=1500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(SYNTAX, WORDS), max_size=40).map("".join))
def test_whatever_libyaml_accepts_reads_as_the_pure_parser_reads_it(text: str) -> None:
    agree(text)


@settings(max_examples=1000, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(FILES),
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), st.one_of(SYNTAX, WORDS)), min_size=1, max_size=3),
)
def test_a_real_file_spliced_reads_alike(path: Path, edits: list[tuple[float, int, str]]) -> None:
    text = path.read_text()
    for where, cut, snippet in edits:
        at = int(where * len(text))
        text = text[:at] + snippet + text[at + cut :]
    agree(text)


@settings(max_examples=500, deadline=None, database=None)
@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
        lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
        max_leaves=12,
    ),
    st.sampled_from([None, True, False]),
)
def test_documents_ruamel_writes_read_alike(data: Any, flow: bool | None) -> None:
    import io

    from ruamel.yaml import YAML

    out = io.StringIO()
    writer = YAML(typ="safe", pure=True)
    writer.default_flow_style = flow
    writer.dump(data, out)
    agree(out.getvalue())
