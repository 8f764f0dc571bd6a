"""The README and docs/ show only commands that exist (issue 32).

Every `hephaestus …` command line in README.md and docs/**/*.md, in a shell code block or in
inline code, is parsed (shlex) and walked down the click tree: the subcommand path must exist
and every flag must be an option of that command (hidden aliases count: they are documented on
the coming-from-the-reference page); `job run NAME` must name a job or an alias of
hephaestus/jobs.py, and its extra flags must exist on the job's command. Then what can run
offline runs: `--help` of every command shown, `validate`, `generate --check` and `job list`
on the repository's own project, and every project file shown is loaded against the schema.
A failure names the file, the line and the unknown command or flag.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hephaestus.cli import cli
from hephaestus.jobs import ALIASES, JOBS, command_line
from hephaestus.project import load_project
from tests.unit.conftest import REPO

README_MAX_LINES = 300
SHELL = {"", "bash", "sh", "shell", "console"}
OPERATORS = {"&&", "||", "|", ";", "(", ")", ">", ">>", "<", "&", "$"}
# Groups whose first option means a default subcommand (click's parse_args hook in the group).
DEFAULT_SUBCOMMAND = {("snapshot",): "send"}


@dataclass(frozen=True)
class Shown:
    """One `hephaestus …` command line as a document shows it."""

    file: str
    line: int
    args: tuple[str, ...]  # after `hephaestus`

    def where(self) -> str:
        return f"{self.file}:{self.line}: hephaestus {' '.join(self.args)}"


@dataclass(frozen=True)
class Checked:
    path: tuple[str, ...]  # the subcommand path, e.g. ("dlq", "replay")
    flags: tuple[str, ...]
    problems: tuple[str, ...]


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def shown_commands(path: Path) -> Iterator[Shown]:
    """Command lines in shell code blocks (continuations joined) and in inline code spans."""
    name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
    lines = path.read_text(encoding="utf-8").split("\n")
    prose: list[str] = []  # the text with code blocks blanked, so inline spans keep their lines
    fence: str | None = None
    pending, start = "", 0
    for number, line in enumerate(lines, 1):
        opening = re.match(r"\s*(```+|~~~+)\s*(\w*)", line)
        if fence is None and opening:
            fence = opening.group(1) if opening.group(2).lower() in SHELL else "skip:" + opening.group(1)
            prose.append("")
            continue
        if fence is not None:
            marker = fence.removeprefix("skip:")
            if line.strip().startswith(marker) and line.strip() == marker:
                fence = None
            elif not fence.startswith("skip:"):
                if not pending:
                    start = number
                pending += line.rstrip("\\") + " " if line.rstrip().endswith("\\") else line
                if not line.rstrip().endswith("\\"):
                    yield from _commands_in(name, start, pending)
                    pending = ""
            prose.append("")
            continue
        prose.append(line)
    text = "\n".join(prose)
    for span in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", text, re.S):
        code = " ".join(span.group(2).split())
        if code.startswith("hephaestus "):
            yield from _commands_in(name, text.count("\n", 0, span.start()) + 1, code)


def _commands_in(file: str, line: int, text: str) -> Iterator[Shown]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError as exc:  # an unbalanced quote: the document is wrong too
        raise AssertionError(f"{file}:{line}: cannot parse {text!r}: {exc}") from exc
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token in OPERATORS or set(token) <= set("();<>|&"):
            if "hephaestus" in segment:
                at = segment.index("hephaestus")
                if at == 0 or segment[at - 1] == "--":
                    yield Shown(file, line, tuple(segment[at + 1 :]))
            segment = []
        else:
            segment.append(token)


def _placeholder(token: str) -> bool:
    """`N`, `NAME`, `<tag>`, `…`: what a reader fills in, not a word of the CLI."""
    return token in ("…", "...") or token.startswith("<") or (token.isupper() and token.isalpha())


def _clean(args: tuple[str, ...]) -> list[str]:
    """Optional parts shown in brackets (`[--cluster C]`) are checked like the rest."""
    out = []
    for token in args:
        token = token.strip("[]").rstrip("…")
        if token and token not in ("…", "...", "|"):
            out.append(token)
    return out


def _options(command: click.Command) -> dict[str, click.Option]:
    found: dict[str, click.Option] = {}
    for param in command.params:  # hidden ones included: aliases are documented
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                found[name] = param
    for name in command.get_help_option_names(click.Context(command)):
        found[name] = click.Option([name], is_flag=True)
    return found


def check(args: list[str]) -> Checked:
    """Walk the click tree along `args`; what does not exist is a problem."""
    command: click.Command = cli
    path: list[str] = []
    flags: list[str] = []
    problems: list[str] = []
    rest = list(args)
    while isinstance(command, click.Group):
        if not rest:
            return Checked(tuple(path), tuple(flags), tuple(problems))
        token = rest[0]
        if token.startswith("-") and tuple(path) in DEFAULT_SUBCOMMAND:
            rest.insert(0, DEFAULT_SUBCOMMAND[tuple(path)])
            continue
        if token.startswith("-"):
            flags.append(token)
            if token not in _options(command):
                problems.append(f"unknown flag {token} of `hephaestus {' '.join(path)}`".replace(" `", "`"))
            rest.pop(0)
            continue
        sub = command.get_command(click.Context(command), token)
        if sub is None:
            if not _placeholder(token):
                problems.append(f"unknown command `hephaestus {' '.join([*path, token])}`")
            return Checked(tuple(path), tuple(flags), tuple(problems))
        command, path = sub, [*path, token]
        rest.pop(0)
    if path == ["job", "run"]:
        return _check_job(rest, flags, problems)
    options = _options(command)
    while rest:
        token = rest.pop(0)
        if token == "--":
            break
        if not token.startswith("-") or token == "-" or re.fullmatch(r"-\d+(\.\d+)?", token):
            continue
        name, eq, _ = token.partition("=")
        flags.append(name)
        option = options.get(name)
        if option is None:
            problems.append(f"unknown flag {name} of `hephaestus {' '.join(path)}`")
        elif not (option.is_flag or option.count) and not eq and rest and not rest[0].startswith("--"):
            rest.pop(0)  # its value
    return Checked(tuple(path), tuple(flags), tuple(problems))


def _check_job(rest: list[str], flags: list[str], problems: list[str]) -> Checked:
    if not rest or rest[0].startswith("-"):
        return Checked(("job", "run"), tuple(flags), tuple(problems))
    name = rest.pop(0)
    if _placeholder(name):
        return Checked(("job", "run"), tuple(flags), tuple(problems))
    argv = command_line(name)
    if argv is None:
        return Checked(("job", "run"), tuple(flags), (*problems, f"unknown job {name} (hephaestus/jobs.py)"))
    inner = check([*argv, *rest])  # the job's command with the extra ARGS
    return Checked(inner.path, (*flags, *inner.flags), (*problems, *inner.problems))


def all_shown() -> list[tuple[Shown, Checked]]:
    return [(s, check(_clean(s.args))) for doc in documents() for s in shown_commands(doc)]


def test_every_command_and_flag_shown_exists() -> None:
    shown = all_shown()
    problems = [f"{s.where()}\n    {p}" for s, c in shown for p in c.problems]
    assert not problems, "the docs show commands or flags that do not exist:\n" + "\n".join(problems)
    # The extraction itself: an empty harvest would pass anything.
    assert len(shown) >= 100, len(shown)
    assert len({c.path for _, c in shown}) >= 25
    assert sum(len(c.flags) for _, c in shown) >= 100


def test_the_check_fails_on_a_bogus_flag_command_or_job(tmp_path: Path) -> None:
    page = tmp_path / "bogus.md"
    page.write_text(
        "x\n\n```bash\nhephaestus reconcile --dry-run --no-such-flag\n```\n\n"
        "`hephaestus frobnicate --x` and `hephaestus job run no_such_job` and\n"
        "`hephaestus job run upsert_kafka_connect --deployCustomSinkConnector --bogus`\n",
        encoding="utf-8",
    )
    found = [(s.line, p) for s in shown_commands(page) for p in check(_clean(s.args)).problems]
    assert found == [
        (4, "unknown flag --no-such-flag of `hephaestus reconcile`"),
        (7, "unknown command `hephaestus frobnicate`"),
        (7, "unknown job no_such_job (hephaestus/jobs.py)"),
        (8, "unknown flag --bogus of `hephaestus reconcile`"),
    ]


def test_job_names_shown_exist() -> None:
    named = {
        s.args[2]
        for doc in documents()
        for s in shown_commands(doc)
        if s.args[:2] == ("job", "run") and len(s.args) > 2 and not _placeholder(s.args[2])
    }
    assert named, "no `hephaestus job run NAME` shown"
    assert named <= set(JOBS) | set(ALIASES), named - set(JOBS) - set(ALIASES)


def test_every_command_shown_answers_help() -> None:
    """Each command path shown runs (its --help), through click's own parsing; `snapshot
    --connector X` shows `snapshot send`'s help, as the group sends it there."""
    runner = CliRunner()
    paths = {c.path for _, c in all_shown()}
    for path in sorted(paths):
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output, path
    default = runner.invoke(cli, ["snapshot", "--connector", "x", "--help"])
    assert default.exit_code == 0 and "snapshot send" in default.output, default.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["validate"], "ok:"),
        (["generate", "--check"], "0 files would change"),
        (["job", "list"], "upsert_kafka_connect"),
    ],
)
def test_offline_commands_shown_run_on_the_repository(
    args: list[str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("HEPHAESTUS_PROJECT", raising=False)
    shown = {c.path for _, c in all_shown()}
    assert tuple(a for a in args if not a.startswith("-")) in shown
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert says in result.output


def project_files_shown() -> Iterator[tuple[str, int, str]]:
    """YAML blocks that are a whole project file: they name clusters at the top level."""
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        for block in re.finditer(r"```yaml\n(.*?)```", text, re.S):
            if re.search(r"^clusters:", block.group(1), re.M):
                yield str(doc.relative_to(REPO)), text.count("\n", 0, block.start()) + 2, block.group(1)


def test_project_files_shown_are_valid(tmp_path: Path) -> None:
    shown = list(project_files_shown())
    assert len(shown) >= 4, shown
    for file, line, body in shown:
        project = tmp_path / "hephaestus.yaml"
        project.write_text(body.replace("…", "x"), encoding="utf-8")
        try:
            load_project(project)
        except Exception as exc:  # noqa: BLE001 - the message is the finding
            pytest.fail(f"{file}:{line}: the project file shown is not valid: {exc}")


def _anchors(page: Path) -> set[str]:
    from markdown.extensions.toc import slugify

    headings = re.findall(r"^#{1,6} (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {slugify(h.replace("`", ""), "-") for h in headings}


def test_readme_links_reach_pages_and_anchors() -> None:
    """mkdocs --strict checks the links inside docs/; the README's are checked here."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) >= 20
    for link in links:
        target, _, anchor = link.partition("#")
        assert not re.match(r"\w+://", target), f"README links to docs by relative path: {link}"
        page = REPO / target
        assert page.exists(), f"README.md: {link}: no such file"
        if anchor:
            assert anchor in _anchors(page), f"README.md: {link}: no such anchor"


def test_readme_is_a_short_path() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the reference into docs/"


def test_the_quickstart_says_why_import_secret_leaves_an_update_and_what_dot_hephaestus_holds() -> None:
    """Issue 48: the quickstart promised exit 0 after `import --secret`, which shows an update
    and exits 2 (test_import pins why), and never said what `.hephaestus/` is, nor whether to
    commit it."""
    from hephaestus.settings import HealSettings
    from hephaestus.state.backend import FileBackend

    quickstart = (REPO / "docs/quickstart.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "must exit 0" not in quickstart + readme
    check = quickstart.split("## 5.", 1)[1].split("\n## ", 1)[0]
    assert "After `import --secret`" in check and "exits 2" in check
    files = FileBackend(Path(".hephaestus"))
    kept = (
        files.ownership().path.name,  # type: ignore[attr-defined]
        files.prints().path.name,  # type: ignore[attr-defined]
        Path(HealSettings().state_file).name,
        f"{files.lock('k').path.parent.name}/",  # type: ignore[attr-defined]
    )
    adopt = quickstart.split("## 4.", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in adopt for name in kept), kept
    assert "Do not commit it" in adopt and "`.gitignore`" in adopt
