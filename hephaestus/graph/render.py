"""The lineage as one self-contained HTML page (pure, but for reading the package's own files).

Everything the page needs is inside it: the vendored Cytoscape.js and its dagre layout
(graph/vendor, see its README), the page's script and style, and the lineage as JSON in a
`<script type="application/json">`. It fetches nothing and opens offline from `file://`.

Names come from connector files, migrations and clusters: hostile input. So:

- every string of the data passes the redactor, and configs are masked before (secrets.py);
- the JSON escapes `<`, `>` and `&` (`\\u003c` …): no `</script>` or `<!--` can end or bend
  the data block, and the script reads it with `JSON.parse`, never `eval`;
- the page's script puts text into the document with `textContent` only, never as HTML;
- a Content-Security-Policy allows only the page's own scripts and style, by their hashes:
  a script that got in some other way would not run, and nothing can be fetched.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import asdict
from functools import cache
from importlib import resources
from typing import Any

from hephaestus.errors import HephaestusError
from hephaestus.graph.model import Lineage, Node, Overlay
from hephaestus.secrets import REDACTOR

VENDORED = ("vendor/cytoscape.min.js", "vendor/cytoscape-dagre.min.js")
_SOURCE_MAP = re.compile(r"\n//# sourceMappingURL=\S+\s*$")
_BREAKS_OUT = re.compile(r"</script|<!--|<script", re.IGNORECASE)
# Cytoscape adds a <style> of its own unless an element of this id exists (the CSP would refuse
# it): the page's style is that element, and holds the rule it would add (app.css).
_CYTOSCAPE_SHEET = "__________cytoscape_stylesheet"
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


@cache
def asset(name: str) -> str:
    """One of the package's files for the page, checked to be safe inside a <script>/<style>."""
    text = resources.files("hephaestus.graph").joinpath(name).read_text(encoding="utf-8")
    text = _SOURCE_MAP.sub("\n", text)  # no map to fetch: the page is all there is
    if _BREAKS_OUT.search(text):
        raise HephaestusError(f"hephaestus/graph/{name} holds '</script', '<script' or '<!--': it cannot be inlined")
    return text


def data(lineage: Lineage, overlay: Overlay | None, title: str, generated: str) -> dict[str, Any]:
    """What the page's script reads: nodes, edges, notes and, with --live, each connector's health."""
    return {
        "meta": {"title": title, "generated": generated, "live": overlay is not None},
        "nodes": [_node(n, overlay) for n in lineage.nodes],
        "edges": [{"id": e.id, "source": e.source, "target": e.target, "via": e.via} for e in lineage.edges],
        "warnings": list(lineage.warnings),
        "unreadable": dict(overlay.unreadable) if overlay else {},
        "errors": list(overlay.errors) if overlay else [],
    }


def _node(n: Node, overlay: Overlay | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": n.id,
        "kind": n.kind,
        "label": n.label,
        "cluster": n.cluster,
        "database": n.database,
        "state": n.state,
        "detail": n.detail,
        "origin": n.origin,
        "config": [list(pair) for pair in n.config],
    }
    if overlay is not None:
        health = overlay.health.get(n.id)
        change = overlay.changes.get(n.id)
        out["health"] = None if health is None else {**asdict(health), "healthy": health.healthy}
        out["change"] = None if change is None else asdict(change)
    return out


def scrubbed(value: Any) -> Any:
    """Every string of `value` (keys too) through the redactor."""
    if isinstance(value, str):
        return REDACTOR(value)
    if isinstance(value, dict):
        return {scrubbed(k): scrubbed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrubbed(v) for v in value]
    return value


def embedded_json(value: Any) -> str:
    """JSON safe inside a <script> element: no character of it can close or open a tag."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group(0)], text)


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def page(lineage: Lineage, overlay: Overlay | None, *, title: str, generated: str) -> str:
    scripts = [asset(name) for name in (*VENDORED, "app.js")]
    style = asset("app.css")
    policy = "; ".join(
        (
            "default-src 'none'",
            "script-src " + " ".join(_sha(s) for s in scripts),
            "style-src " + _sha(style),
            "img-src data: blob:",
            "base-uri 'none'",
            "form-action 'none'",
        )
    )
    payload = embedded_json(scrubbed(data(lineage, overlay, title, generated)))
    body = asset("app.html").replace("{{title}}", html.escape(REDACTOR(title)))
    inline = "".join(f"<script>{s}</script>\n" for s in scripts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<title>{html.escape(REDACTOR(title))}</title>\n<style id="{_CYTOSCAPE_SHEET}">{style}</style>\n'
        f"</head>\n<body>\n{body}\n"
        f'<script type="application/json" id="lineage-data">{payload}</script>\n{inline}</body>\n</html>\n'
    )
