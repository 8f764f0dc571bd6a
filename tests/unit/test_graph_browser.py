"""`hephaestus graph` in a real browser: Debian's Chromium (dev/tools/chromium installs it with
apt-get when missing) driven by Playwright, on a generated project of 300+ connectors over three
Connect clusters and a ksqlDB cluster, one table name hostile.

The page is opened from file:// as a user would; a sink is searched for and clicked on the
canvas; its source table and source connector must be highlighted, its source's other tables
not; the filters must keep a cluster's paths; and the page must log no error, raise nothing,
fetch nothing and run no injected script.

In the packaging group (needs the package index when Chromium is missing; `dev/test` runs it).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hephaestus.cli import run
from tests.unit.conftest import REPO

pytestmark = pytest.mark.packaging

PG_SOURCE = "io.debezium.connector.postgresql.PostgresConnector"
JDBC_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
HOSTILE = "</script><img src=x onerror=alert(1)>"
CLUSTERS = ("alpha", "beta", "gamma")
SOURCES_PER_CLUSTER = 20
TABLES = 5  # per source; every table has one sink, every other table a second


@dataclass
class Browser:
    page: Any
    problems: list[str] = field(default_factory=list)  # console errors, page errors, dialogs, fetches


@pytest.fixture(scope="module")
def chromium() -> str:
    found = subprocess.run(
        [str(REPO / "dev" / "tools" / "chromium")], capture_output=True, text=True, timeout=900, check=False
    )
    assert found.returncode == 0, found.stderr
    return found.stdout.strip()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project of 3 × 20 sources × 5 tables, 1 or 2 sinks a table (482 connectors), a ksqlDB
    query between one source and its sink, and a table whose name is an HTML injection."""
    root = tmp_path_factory.mktemp("fleet")
    lines = ["clusters:"] + [f"  {c}: {{url: 'http://127.0.0.1:9/{c}', connectors: connectors/{c}}}" for c in CLUSTERS]
    lines += ["ksqldb:", "  dwh: {url: 'http://127.0.0.1:9/ksql', migrations: ksql}"]
    (root / "hephaestus.yaml").write_text("\n".join(lines) + "\n")
    for c in CLUSTERS:
        for s in range(SOURCES_PER_CLUSTER):
            _pipeline(root / "connectors" / c, f"{c}_db{s}", hostile=(c, s) == ("alpha", 0))
    (root / "ksql").mkdir()
    (root / "ksql" / "V000001__orders.sql").write_text(
        "CREATE STREAM ORDERS (ID STRING) WITH (KAFKA_TOPIC = 'beta_db3.public.t1', VALUE_FORMAT = 'JSON');\n"
        "CREATE STREAM BIG_ORDERS WITH (KAFKA_TOPIC = 'dwh.big_orders') AS SELECT * FROM ORDERS EMIT CHANGES;\n"
    )
    _write(
        root / "connectors" / "gamma" / "sink" / "dwh_big_orders_sink.json",
        "dwh_big_orders_sink",
        _sink("dwh.big_orders", "big_orders"),
    )
    return root


def _pipeline(folder: Path, db: str, hostile: bool) -> None:
    tables = [f"public.t{t}" for t in range(TABLES)] + ([f"public.{HOSTILE}"] if hostile else [])
    config = {"connector.class": PG_SOURCE, "database.dbname": db, "database.hostname": "pg", "topic.prefix": db}
    _write(folder / "source" / f"{db}_source.json", f"{db}_source", {**config, "table.include.list": ",".join(tables)})
    for table in tables:
        short = table.removeprefix("public.")
        for wh in range(1 + (short[-1:] in "13")):
            name = f"{db}_{short}_to_wh{wh}_sink" if short.startswith("t") else f"{db}_hostile_sink"
            _write(folder / "sink" / f"{name}.json", name, _sink(f"{db}.{table}", f"{db}_{short}", wh))


def _sink(topic: str, table: str, wh: int = 0) -> dict[str, str]:
    url = f"jdbc:postgresql://wh{wh}:5432/warehouse{wh}"
    return {"connector.class": JDBC_SINK, "topics": topic, "connection.url": url, "collection.name.format": table}


def _write(path: Path, name: str, config: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": name, "config": config}))


@pytest.fixture(scope="module")
def page_file(fleet: Path) -> Path:
    out = fleet / "graph.html"
    assert run(["graph", "--project", str(fleet / "hephaestus.yaml"), "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def chrome(chromium: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


@contextmanager
def opened(chrome: Any, page_file: Path) -> Iterator[Browser]:
    """The page in its own tab from file://, laid out, every problem it shows collected."""
    page = chrome.new_page(viewport={"width": 1600, "height": 1000})
    b = Browser(page)
    page.on("console", lambda m: b.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: b.problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (b.problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("request", lambda r: None if r.url.startswith("file:") else b.problems.append(f"fetch: {r.url}"))
    start = time.monotonic()
    page.goto(page_file.as_uri())
    page.wait_for_function("document.body.dataset.ready === 'true'", timeout=120_000)
    layout = page.evaluate("hephaestusGraph.layoutMs")
    took = time.monotonic() - start
    print(f"\n{page_file.stat().st_size // 1024} KiB page ready in {took:.1f} s (layout {layout} ms)")
    yield b
    page.close()


@pytest.fixture(scope="module")
def browser(chrome: Any, page_file: Path) -> Iterator[Browser]:
    with opened(chrome, page_file) as b:
        yield b


def classes(b: Browser, *ids: str) -> dict[str, list[str]]:
    script = "ids => Object.fromEntries(ids.map(id => [id, hephaestusGraph.cy.getElementById(id).classes()]))"
    found: dict[str, list[str]] = b.page.evaluate(script, list(ids))
    return found


def test_a_sink_found_by_search_and_clicked_lights_up_its_source_table_and_source(browser: Browser) -> None:
    page = browser.page
    sink = "connector:beta/beta_db7_t3_to_wh1_sink"
    page.locator("#search").press_sequentially("beta_db7_t3_to_wh1")
    assert page.locator("#results li").count() == 1
    box = page.evaluate(
        """id => { const n = hephaestusGraph.cy.getElementById(id), p = n.renderedPosition();
                   const r = document.getElementById('cy').getBoundingClientRect();
                   return {x: r.left + p.x, y: r.top + p.y}; }""",
        sink,
    )
    page.mouse.click(box["x"], box["y"])
    assert page.evaluate("hephaestusGraph.selected") == sink
    found = classes(
        browser, sink, "table:beta_db7/public.t3", "connector:beta/beta_db7_source", "table:beta_db7/public.t2"
    )
    assert "selected" in found[sink]
    assert "highlighted" in found["table:beta_db7/public.t3"], "its source table"
    assert "highlighted" in found["connector:beta/beta_db7_source"], "its source connector"
    assert "faded" in found["table:beta_db7/public.t2"], "the source's other tables are not on its path"
    assert page.locator("#panel-title").text_content() == "beta_db7_t3_to_wh1_sink"
    assert "beta_db7.public.t3" in (page.locator("#panel-lineage-facts").text_content() or "")
    assert browser.problems == []


def test_a_ksqldb_stream_sits_on_the_path_from_a_source_to_its_sink(browser: Browser) -> None:
    browser.page.evaluate("hephaestusGraph.focus('connector:gamma/dwh_big_orders_sink')")
    found = classes(browser, "ksql:dwh/BIG_ORDERS", "ksql:dwh/ORDERS", "connector:beta/beta_db3_source")
    assert all("highlighted" in c for c in found.values()), found
    assert browser.problems == []


def test_a_cluster_filter_keeps_its_connectors_and_their_paths_only(browser: Browser) -> None:
    page = browser.page
    page.select_option("#filter-cluster", "ksqldb dwh")
    hidden = page.evaluate(
        "ids => ids.map(id => hephaestusGraph.cy.getElementById(id).hasClass('hidden'))",
        [
            "ksql:dwh/ORDERS",
            "connector:beta/beta_db3_source",
            "connector:gamma/dwh_big_orders_sink",
            "table:alpha_db0/public.t0",
        ],
    )
    assert hidden == [False, False, False, True]
    page.click("#reset")
    assert page.evaluate("hephaestusGraph.cy.nodes('.hidden').length") == 0
    assert browser.problems == []


def test_a_hostile_table_name_is_text_and_runs_nothing(browser: Browser) -> None:
    page = browser.page
    node = f"table:alpha_db0/public.{HOSTILE}"
    assert (
        page.evaluate("id => hephaestusGraph.cy.getElementById(id).data('label')", node)
        == f"alpha_db0.public.{HOSTILE}"
    )
    page.evaluate("id => hephaestusGraph.focus(id)", node)
    assert page.locator("#panel-title").text_content() == f"alpha_db0.public.{HOSTILE}"
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert browser.problems == []


def test_the_whole_fleet_is_drawn(browser: Browser) -> None:
    counts = browser.page.evaluate(
        "['source', 'sink', 'topic', 'table', 'stream'].map(k => hephaestusGraph.cy.nodes('.' + k).length)"
    )
    assert counts[0] + counts[1] >= 300 and counts[4] == 2, counts
    assert browser.page.evaluate("hephaestusGraph.cy.nodes().every(n => isFinite(n.position('x')))")


# --- a hub-shaped fleet of 1,448 connectors ---------------------------------------------------

ENVS_ORGS = [(e, o) for e in ("local", "stag", "uat") for o in ("manabie", "jprep")]
HUB_TABLES = 60
HUB_SINKS = ("auth", "eureka", "fatima", "tokyo")  # each table's topic feeds a sink into each


@pytest.fixture(scope="module")
def hub_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database of 60 tables, captured by a source per env and org (6), each table's topic
    read by a sink into each of 4 databases (1,440), as the generator fans a hub out; and one
    small pipeline beside it: 1,448 connectors, nearly all in one connected part whose hubs are
    the 6 sources (120 edges each). The sinks' URLs are the generator's placeholders."""
    root = tmp_path_factory.mktemp("hub")
    dbs = "".join(f"  {d}: {{dsn: 'host=pg port=5432 dbname={d}'}}\n" for d in ("bob", "other", *HUB_SINKS))
    folder = root / "connectors" / "platforms"
    (root / "hephaestus.yaml").write_text(
        f"clusters:\n  platforms: {{url: 'http://127.0.0.1:9/p', connectors: {folder}}}\ndatabases:\n{dbs}"
    )
    tables = [f"public.t{i:02d}" for i in range(HUB_TABLES)]
    for env, org in ENVS_ORGS:
        prefix = f"{env}.{org}.bob"
        source = {"connector.class": PG_SOURCE, "database.hostname": "pg", "database.dbname": "bob"}
        source |= {"topic.prefix": prefix, "table.include.list": ",".join(tables)}
        _write(folder / "source" / f"{env}_{org}_bob_source.json", f"{env}_{org}_bob_source", source)
        for table in tables:
            short = table.removeprefix("public.")
            for db in HUB_SINKS:
                name = f"{env}_{org}_bob_to_{db}_{short}_sink"
                url = f"${{file:secrets/connect.properties:{db}_url}}"
                config = {"connector.class": JDBC_SINK, "topics": f"{prefix}.{table}", "connection.url": url}
                _write(folder / "sink" / f"{name}.json", name, {**config, "collection.name.format": short})
    other = {"connector.class": PG_SOURCE, "database.hostname": "pg", "database.dbname": "other"}
    other |= {"topic.prefix": "other", "table.include.list": "public.x"}
    _write(folder / "source" / "other_source.json", "other_source", other)
    _write(folder / "sink" / "other_x_sink.json", "other_x_sink", _sink("other.public.x", "x"))
    out = root / "graph.html"
    assert run(["graph", "--project", str(root / "hephaestus.yaml"), "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def hub(chrome: Any, hub_page: Path) -> Iterator[Browser]:
    with opened(chrome, hub_page) as b:
        yield b


def test_a_hub_shaped_fleet_is_laid_out_across_the_screen(hub: Browser, hub_page: Path) -> None:
    """Before, dagre's layers of the one big part stood 43 times taller than wide: the whole
    page was one column at the minimum zoom (0.02), its nodes covering 0.5 % of the canvas."""
    shot = hub_page.with_name("hub-fleet.png")
    hub.page.screenshot(path=str(shot))
    print(f"\nscreenshot: {shot}")
    seen = hub.page.evaluate(
        """(() => { const cy = hephaestusGraph.cy, bb = cy.elements().boundingBox(), z = cy.zoom();
                    let area = 0;
                    cy.nodes().forEach(n => { area += n.outerWidth() * n.outerHeight(); });
                    const screen = cy.width() * cy.height();
                    return {connectors: cy.nodes('.source, .sink').length, zoom: z, w: bb.w, h: bb.h,
                            width: cy.width(), height: cy.height(), cover: area * z * z / screen}; })()"""
    )
    print(f"zoom at fit {seen['zoom']:.3f}, height/width {seen['h'] / seen['w']:.2f}, nodes cover {seen['cover']:.0%}")
    assert seen["connectors"] == 1448
    screen = seen["height"] / seen["width"]
    assert screen / 2 <= seen["h"] / seen["w"] <= screen * 2, ("the graph has the screen's shape", seen)
    # Fit to the screen: 0.1 is five times the floor the one column hit, and the nodes cover a
    # tenth of the canvas at least (0.3 is where they would fill it edge to edge, no gap at all).
    assert seen["zoom"] > 0.1 and seen["cover"] > 0.1, seen
    assert hub.problems == []


def test_no_two_nodes_of_the_hub_fleet_overlap(hub: Browser) -> None:
    overlaps = hub.page.evaluate(
        """(() => { const boxes = hephaestusGraph.cy.nodes().map(n => n.boundingBox({includeLabels: false}));
                    boxes.sort((a, b) => a.x1 - b.x1);
                    let found = 0;
                    for (let i = 0; i < boxes.length; i++) {
                      for (let j = i + 1; j < boxes.length && boxes[j].x1 < boxes[i].x2; j++) {
                        if (boxes[j].y1 < boxes[i].y2 && boxes[i].y1 < boxes[j].y2) { found++; }
                      }
                    }
                    return found; })()"""
    )
    assert overlaps == 0


def listed(b: Browser, text: str) -> list[str]:
    """The search's result list for `text`, as shown."""
    b.page.fill("#search", text)
    return [t.split("  \u2014 ")[0] for t in b.page.locator("#results li").all_text_contents()]


def test_table_search_finds_the_tables_sinks_write_first(hub: Browser) -> None:
    """A table is named as people name it (`auth.t07`, `auth.public.t07`); at 1,448 connectors
    the tables are listed before the hundreds of connectors whose names merely contain the text."""
    sinks = [f"{db}.public.t07" for db in HUB_SINKS]
    assert listed(hub, "auth.t07") == ["auth.public.t07"]
    assert listed(hub, "auth.public.t07") == ["auth.public.t07"]
    assert sorted(listed(hub, "t07")[:5]) == sorted(["bob.public.t07", *sinks])
    assert listed(hub, "eureka") == [f"eureka.public.t{i:02d}" for i in range(50)], "50 listed, tables first"
    hub.page.fill("#search", "fatima.t59")
    hub.page.press("#search", "Enter")
    assert hub.page.evaluate("hephaestusGraph.selected") == "table:fatima/public.t59"
    hub.page.fill("#search", "")
    hub.page.evaluate("hephaestusGraph.clear()")
    assert hub.problems == []


def in_view(b: Browser) -> dict[str, Any]:
    """Where the selected node's path is drawn, against the canvas and the panel beside it."""
    found: dict[str, Any] = b.page.evaluate(
        """(() => { const cy = hephaestusGraph.cy, path = cy.nodes('.highlighted, .selected');
                    const box = path.renderedBoundingBox({includeLabels: false});
                    const canvas = document.getElementById('cy').getBoundingClientRect();
                    const panel = document.getElementById('panel').getBoundingClientRect();
                    return {nodes: path.length, x1: box.x1, x2: box.x2, y1: box.y1, y2: box.y2,
                            width: cy.width(), height: cy.height(), zoom: cy.zoom(),
                            canvas_right: canvas.right, panel_left: panel.left,
                            panel: !document.getElementById('panel').hidden}; })()"""
    )
    return found


def test_a_selected_nodes_path_is_fitted_into_the_room_the_panel_leaves(hub: Browser) -> None:
    """Picked from the search's list, then clicked on the canvas: each time the whole path is
    drawn beside the panel, as large as it fits."""
    sink, table = "connector:platforms/local_manabie_bob_to_auth_t07_sink", "table:bob/public.t07"
    hub.page.fill("#search", "local_manabie_bob_to_auth_t07_sink")
    hub.page.locator("#results li button").click()
    assert hub.page.evaluate("hephaestusGraph.selected") == sink
    assert_fitted(in_view(hub))
    at = hub.page.evaluate(
        """id => { const p = hephaestusGraph.cy.getElementById(id).renderedPosition();
                   const r = document.getElementById('cy').getBoundingClientRect();
                   return {x: r.left + p.x, y: r.top + p.y}; }""",
        table,
    )
    hub.page.mouse.click(at["x"], at["y"])
    assert hub.page.evaluate("hephaestusGraph.selected") == table
    assert_fitted(in_view(hub))
    hub.page.evaluate("hephaestusGraph.clear()")
    assert hub.problems == []


def assert_fitted(seen: dict[str, Any]) -> None:
    print(f"\npath of {seen['nodes']} nodes fitted at zoom {seen['zoom']:.2f}")
    assert seen["panel"] and seen["canvas_right"] <= seen["panel_left"] + 1, ("the canvas stops at the panel", seen)
    assert seen["x1"] >= 0 and seen["y1"] >= 0, seen
    assert seen["x2"] <= seen["width"] and seen["y2"] <= seen["height"], ("all of it beside the panel", seen)
    fill = max((seen["x2"] - seen["x1"]) / seen["width"], (seen["y2"] - seen["y1"]) / seen["height"])
    assert fill > 0.6 or seen["zoom"] >= 1.2, ("fitted, not merely inside", seen)
