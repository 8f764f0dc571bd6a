"""Issue 14's adversary scenarios, replayed over the Connect double against one checkout:

    git worktree add /tmp/old <rev> && .venv/bin/python dev/adversary_ownership.py /tmp/old
    .venv/bin/python dev/adversary_ownership.py .

Prints, per scenario, what a run did (exit code, deletes, writes): the before/after numbers of
the issue's closing note. Not a test (tests/unit and tests/stack assert the same behaviours).
"""

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from hephaestus.cli import run
from tests.connect_double import ConnectDouble, serve

SRC = "io.debezium.connector.postgresql.PostgresConnector"
SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"


def cli(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = run(list(args))
    return code, out.getvalue()


def project(root, url, clusters=None, extra=""):
    clusters = clusters or {"c": {"url": url, "connectors": "connectors/c"}}
    (root / "hephaestus.yaml").write_text(
        json.dumps(
            {
                "clusters": clusters,
                "policy": {"ready_timeout_s": 5, "stability_window_s": 0},
                "heal": {"restart_wait_s": 0.2},
            }
        )
    )
    return str(root / "hephaestus.yaml")


def git(root, name, kind, cls, n, folder="c"):
    p = root / "connectors" / folder / kind / f"{name}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"name": name, "config": {"connector.class": cls, "topics": name}}))


def deletes(d):
    return sum(1 for m, p in d.writes() if m == "DELETE")


def scenario_emptied(n_src, n_sink, remove_folder):
    d = ConnectDouble()
    with serve(d) as url, tempfile.TemporaryDirectory() as t:
        root = Path(t)
        pf = project(root, url)
        for i in range(n_src):
            git(root, f"src{i}", "source", SRC, i)
        for i in range(n_sink):
            git(root, f"sink{i}", "sink", SINK, i)
        cli("reconcile", "--auto-approve", "--project", pf)
        d.log.clear()
        import shutil

        if remove_folder:
            shutil.rmtree(root / "connectors/c/sink")
        else:
            for p in (root / "connectors/c/sink").glob("*.json"):
                p.unlink()
        code, out = cli("reconcile", "--auto-approve", "--project", pf)
        return code, deletes(d)


def scenario_no_select():
    d = ConnectDouble()
    with serve(d) as url, tempfile.TemporaryDirectory() as t:
        root = Path(t)
        pf = project(root, url)
        for i in range(6):
            git(root, f"ours{i}", "sink", SINK, i)
        cli("reconcile", "--auto-approve", "--project", pf)
        for i in range(5):
            d.add(f"theirs{i}", {"connector.class": SINK, "topics": f"t{i}"})
        code, out = cli("reconcile", "--auto-approve", "--project", pf)
        return code, sum(1 for m, p in d.writes() if m == "DELETE" and "theirs" in p)


def scenario_same_url():
    d = ConnectDouble()
    with serve(d) as url, tempfile.TemporaryDirectory() as t:
        root = Path(t)
        pf = project(
            root,
            url,
            {"a": {"url": url, "connectors": "connectors/a"}, "b": {"url": url + "/", "connectors": "connectors/b"}},
        )
        for i in range(3):
            git(root, f"a{i}", "sink", SINK, i, "a")
        for i in range(3):
            git(root, f"b{i}", "sink", SINK, i, "b")
        cli("reconcile", "--auto-approve", "--project", pf, "--cluster", "a")
        cli("reconcile", "--auto-approve", "--project", pf, "--cluster", "b")
        code, out = cli("reconcile", "--auto-approve", "--project", pf)
        return code, deletes(d), len(d.log)


def scenario_heal():
    d = ConnectDouble()
    d.add("mine_a", {"connector.class": SINK}).task_states = ["FAILED"]
    d.add("theirs_b", {"connector.class": SINK}).task_states = ["FAILED"]
    with serve(d) as url, tempfile.TemporaryDirectory() as t:
        root = Path(t)
        pf = project(root, url, {"c": {"url": url, "connectors": "connectors/c", "select": ["mine_*"]}})
        (root / "connectors/c").mkdir(parents=True)
        cli("heal", "--project", pf)
        return sum(1 for m, p in d.writes() if "theirs_b" in p)


def scenario_hand_made():
    d = ConnectDouble()
    for i in range(4):
        d.add(f"hand{i}", {"connector.class": SINK, "topics": f"h{i}"})
    with serve(d) as url, tempfile.TemporaryDirectory() as t:
        root = Path(t)
        pf = project(root, url)
        (root / "connectors/c/sink").mkdir(parents=True)
        code, out = cli("import", "--project", pf)
        if code != 0 and "No such command" in out:
            return "no import command"
        code, out = cli("reconcile", "--auto-approve", "--project", pf, "--dry-run", "--exit-code")
        return code, len(d.writes())


print("10 src + 10 sinks, sink files removed: (exit, deletes) =", scenario_emptied(10, 10, False))
print("8 src + 8 sinks, sink/ folder missing: (exit, deletes) =", scenario_emptied(8, 8, True))
print("no select, 6 own sinks + 5 of another team's live: (exit, their sinks deleted) =", scenario_no_select())
print("two clusters on one URL: (exit, deletes, requests) =", scenario_same_url())
print("heal with select mine_*: writes to theirs_b =", scenario_heal())
print("hand-made fleet of 4 -> import -> dry-run --exit-code: (exit, writes) =", scenario_hand_made())
