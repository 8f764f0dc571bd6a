/* hephaestus graph: the page's script. Reads the lineage from #lineage-data (JSON), draws it
   with Cytoscape.js and dagre (left to right), and answers clicks, search and filters.
   Text goes into the page with textContent only: names are hostile input. */
(function () {
  'use strict';

  var data = JSON.parse(document.getElementById('lineage-data').textContent);
  var COLOURS = { table: '#4e79a7', source: '#59a14f', topic: '#f28e2b', stream: '#b07aa1', sink: '#17a2b8' };
  var NAMES = { table: 'table', source: 'source connector', topic: 'topic', stream: 'ksqlDB stream/table', sink: 'sink connector' };
  var SEP = '\u001f';
  var WRAP = 180;  // px of label a line: long names wrap
  var big = data.nodes.length > 1500;
  var byId = {};
  var $ = function (id) { return document.getElementById(id); };

  function shownState(n) {
    if (n.kind !== 'source' && n.kind !== 'sink') { return ''; }
    if (n.health) { return n.health.state; }
    return n.state || (data.meta.live ? 'not read' : 'unmanaged');
  }

  function liveClass(n) {
    if (!n.health) { return ''; }
    if (n.health.state === 'UNREADABLE') { return 'unreadable'; }
    if (n.health.state === 'ABSENT') { return 'absent'; }
    return n.health.healthy ? 'healthy' : 'unhealthy';
  }

  function element(n) {
    byId[n.id] = n;
    n.shown = shownState(n);
    // A table is also found as people name it: `auth.users` for auth.public.users.
    n.names = [n.label.toLowerCase()];
    if (n.kind === 'table' && n.label.indexOf(n.database + '.public.') === 0) {
      n.names.push((n.database + '.' + n.label.slice(n.database.length + 8)).toLowerCase());
    }
    n.haystack = n.names.concat([n.cluster, n.database]).join(' ').toLowerCase();
    var text = n.label.length * 7, lines = Math.ceil(text / WRAP);
    var classes = [n.kind, liveClass(n)].join(' ').trim();
    var size = { w: Math.max(60, Math.min(WRAP, text) + 20), h: 12 + 15 * lines };
    return { group: 'nodes', data: { id: n.id, label: n.label, kind: n.kind, w: size.w, h: size.h }, classes: classes };
  }

  var elements = data.nodes.map(element).concat(data.edges.map(function (e) {
    return { group: 'edges', data: { id: e.id, source: e.source, target: e.target, via: e.via } };
  }));

  var style = [
    { selector: 'node', style: {
      'shape': 'round-rectangle', 'width': 'data(w)', 'height': 'data(h)', 'label': 'data(label)',
      'font-size': 12, 'text-valign': 'center', 'text-halign': 'center', 'color': '#fff',
      'text-wrap': 'wrap', 'text-overflow-wrap': 'anywhere', 'text-max-width': WRAP + 'px',
      'min-zoomed-font-size': 5,
      'border-width': 2, 'border-color': '#fff' } },
    { selector: 'edge', style: {
      'width': 1.2, 'line-color': '#9aa4ae', 'target-arrow-color': '#9aa4ae',
      'target-arrow-shape': 'triangle', 'arrow-scale': 0.7, 'curve-style': big ? 'straight' : 'bezier' } }
  ];
  Object.keys(COLOURS).forEach(function (kind) {
    style.push({ selector: 'node.' + kind, style: { 'background-color': COLOURS[kind] } });
  });
  style.push(
    { selector: 'node.topic', style: { 'shape': 'round-tag', 'color': '#1f2328' } },
    { selector: 'node.healthy', style: { 'border-color': '#1a7f37', 'border-width': 3 } },
    { selector: 'node.unhealthy', style: { 'border-color': '#cf222e', 'border-width': 4 } },
    { selector: 'node.unreadable', style: { 'border-color': '#6e7781', 'border-style': 'dashed', 'border-width': 3, 'background-opacity': 0.55 } },
    { selector: 'node.absent', style: { 'border-color': '#bf8700', 'border-style': 'dotted', 'border-width': 3 } },
    { selector: 'node.match', style: { 'overlay-color': '#0969da', 'overlay-opacity': 0.25, 'overlay-padding': 4 } },
    { selector: '.faded', style: { 'opacity': 0.15 } },
    { selector: 'edge.highlighted', style: { 'width': 2.5, 'line-color': '#0969da', 'target-arrow-color': '#0969da' } },
    { selector: 'node.selected', style: { 'border-color': '#0550ae', 'border-width': 5, 'border-style': 'double' } },
    { selector: '.hidden', style: { 'display': 'none' } }
  );

  var cy = cytoscape({
    container: $('cy'), elements: elements, style: style, layout: { name: 'preset' },
    minZoom: 0.02, maxZoom: 3, autounselectify: true, boxSelectionEnabled: false,
    textureOnViewport: big, hideEdgesOnViewport: big, pixelRatio: big ? 1 : 'auto'
  });

  var NODE_SEP = 10, RANK_SEP = 50;

  function layoutOptions() {
    return { name: 'dagre', rankDir: 'LR', nodeSep: NODE_SEP, rankSep: RANK_SEP, edgeSep: 4,
             ranker: big ? 'longest-path' : 'network-simplex', fit: false, animate: false };
  }

  /* The layout. dagre lays each connected part out in layers, left to right; the parts are then
     set side by side in rows, largest first (as ELK's separateConnectedComponents does), so that
     a fleet of hundreds of pipelines fills the screen rather than one column.

     A part whose layers stand much taller than the screen is hub-shaped: a source of hundreds
     of tables, a topic read by hundreds of sinks. Its layers cannot be reshaped, so the part is
     split at its hubs (its nodes of highest degree, as few as leave no piece larger than the
     square root of the part); each piece is laid out by dagre and the pieces are set in rows
     as the parts are, the hubs in the middle. A piece keeps what a hub connector carries
     through it: the table a source reads and the topic it writes it to stay one piece. */
  var GAP = 40;
  var HUB_PART = 40;  // nodes: a smaller part is left as dagre lays it out

  function arrange(eles) {
    cy.resize();
    var started = Date.now(), aspect = Math.max(cy.height(), 1) / Math.max(cy.width(), 1);
    cy.batch(function () {
      pack(eles.components().map(function (c) { return laidOut(c, aspect); }), aspect, null);
    });
    api.layoutMs = Date.now() - started;
    cy.fit(eles, 20);
  }

  function laidOut(c, aspect) {
    var large = c.nodes().length >= HUB_PART, spread = null;
    if (large && layers(c) > 3 * aspect) { spread = spreadAtHubs(c, aspect); }  // dagre's run spared
    if (spread) { return spread; }
    c.layout(layoutOptions()).run();
    var bb = c.boundingBox();
    if (large && bb.h > 2 * aspect * bb.w) { spread = spreadAtHubs(c, aspect); }
    return spread || { c: c, bb: bb };
  }

  /* How tall dagre's layers of `c` would be for their width (height / width), roughly: each
     node in the layer of its longest path from a node nothing feeds. */
  function layers(c) {
    var into = {}, layer = {}, queue = [], tall = [], wide = [];
    c.nodes().forEach(function (n) { into[n.id()] = 0; layer[n.id()] = 0; });
    c.edges().forEach(function (e) { into[e.target().id()] += 1; });
    c.nodes().forEach(function (n) { if (!into[n.id()]) { queue.push(n); } });
    for (var i = 0; i < queue.length; i++) {
      queue[i].outgoers('edge').intersection(c).forEach(function (e) {
        var t = e.target().id();
        layer[t] = Math.max(layer[t], layer[queue[i].id()] + 1);
        if (--into[t] === 0) { queue.push(e.target()); }
      });
    }
    c.nodes().forEach(function (n) {
      var l = layer[n.id()];
      tall[l] = (tall[l] || 0) + n.data('h') + NODE_SEP;
      wide[l] = Math.max(wide[l] || 0, n.data('w') + RANK_SEP);
    });
    var h = Math.max.apply(null, tall.filter(Boolean)), w = wide.reduce(function (s, x) { return s + (x || 0); }, 0);
    return h / Math.max(w, 1);
  }

  /* Sets the boxes in rows about as wide as the screen's shape asks, tallest first; `middle`
     (a box or null) goes in the middle of the middle row, and the rows are then centred. */
  function pack(boxes, aspect, middle) {
    boxes.sort(function (a, b) { return b.bb.h - a.bb.h || b.bb.w - a.bb.w; });
    var area = 0, widest = 0;
    boxes.concat(middle ? [middle] : []).forEach(function (b) {
      area += (b.bb.w + GAP) * (b.bb.h + GAP);
      widest = Math.max(widest, b.bb.w);
    });
    var limit = Math.max(widest, Math.sqrt(area / aspect)), rows = [[]], x = 0;
    boxes.forEach(function (b) {
      if (x > 0 && x + b.bb.w > limit) { rows.push([]); x = 0; }
      rows[rows.length - 1].push(b);
      x += b.bb.w + GAP;
    });
    if (middle) {
      var row = rows[Math.floor((rows.length - 1) / 2)];
      row.splice(Math.ceil(row.length / 2), 0, middle);
    }
    var sizes = rows.map(function (r) {
      return { w: r.reduce(function (s, b) { return s + b.bb.w + GAP; }, -GAP),
               h: r.reduce(function (s, b) { return Math.max(s, b.bb.h); }, 0) };
    });
    var full = Math.max.apply(null, sizes.map(function (z) { return z.w; })), y = 0;
    rows.forEach(function (r, i) {
      var at = middle ? (full - sizes[i].w) / 2 : 0;
      r.forEach(function (b) {
        var top = b === middle ? y + (sizes[i].h - b.bb.h) / 2 : y;
        shift(b.c.nodes(), at - b.bb.x1, top - b.bb.y1);
        at += b.bb.w + GAP;
      });
      y += sizes[i].h + GAP;
    });
  }

  function shift(nodes, dx, dy) {
    nodes.forEach(function (n) { var p = n.position(); n.position({ x: p.x + dx, y: p.y + dy }); });
  }

  function spreadAtHubs(c, aspect) {
    var found = hubsOf(c);
    if (!found) { return null; }
    var joins = cy.add(found.joins.map(function (j, i) {
      return { group: 'edges', data: { id: '\u001fjoin' + i, source: j[0], target: j[1] }, classes: 'join' };
    }));
    var edges = c.edges().union(joins), boxes = found.pieces.map(function (ids) {
      var inside = {};
      ids.forEach(function (id) { inside[id] = true; });
      var piece = cy.collection(ids.map(function (id) { return cy.getElementById(id); })).union(
        edges.filter(function (e) { return inside[e.source().id()] && inside[e.target().id()]; }));
      return boxOf(piece);
    });
    var hubs = c.nodes().filter(function (n) { return found.hubs[n.id()]; });
    var middle = boxOf(hubs.union(c.edges().filter(function (e) { return found.hubs[e.source().id()] && found.hubs[e.target().id()]; })));
    cy.remove(joins);
    pack(boxes, aspect, middle);
    return { c: c, bb: c.boundingBox() };
  }

  function boxOf(eles) {
    if (eles.length === 1) { eles.position({ x: 0, y: 0 }); } else { eles.layout(layoutOptions()).run(); }
    return { c: eles, bb: eles.boundingBox() };
  }

  /* The hubs of a part: its nodes of highest degree (3 or more), degree by degree, until no
     piece left is larger than the square root of the part (12 nodes at least), taking at most
     a quarter of its nodes. Null when that leaves it whole. */
  function hubsOf(c) {
    var degree = {}, n = c.nodes().length, limit = Math.max(12, Math.ceil(Math.sqrt(n)));
    c.edges().forEach(function (e) {
      [e.source().id(), e.target().id()].forEach(function (id) { degree[id] = (degree[id] || 0) + 1; });
    });
    var ids = Object.keys(degree).filter(function (id) { return degree[id] >= 3; });
    ids.sort(function (a, b) { return degree[b] - degree[a]; });
    var hubs = {}, split = null, i = 0;
    while (i < ids.length && i < n / 4) {
      var d = degree[ids[i]];
      for (; i < ids.length && degree[ids[i]] === d; i++) { hubs[ids[i]] = true; }
      split = piecesOf(c, hubs);
      if (split.largest <= limit) { break; }
    }
    return split && split.pieces.length > 1 ? { hubs: hubs, pieces: split.pieces, joins: split.joins } : null;
  }

  /* The pieces of part `c` without its hubs (each a list of node ids), and the joins that hold
     together what a hub connector carries: an edge out of it names (`via`) the node its
     records come from. */
  function piecesOf(c, hubs) {
    var parent = {}, joins = [];
    var find = function (x) { while (parent[x] !== x) { parent[x] = parent[parent[x]]; x = parent[x]; } return x; };
    var union = function (a, b) { a = find(a); b = find(b); if (a !== b) { parent[a] = b; } };
    c.nodes().forEach(function (node) { if (!hubs[node.id()]) { parent[node.id()] = node.id(); } });
    c.edges().forEach(function (e) {
      var s = e.source().id(), t = e.target().id(), via = e.data('via');
      if (!hubs[s] && !hubs[t]) { union(s, t); }
      else if (hubs[s] && !hubs[t] && via && via !== t && parent[via] !== undefined) { union(via, t); joins.push([via, t]); }
    });
    var groups = {}, pieces = [], largest = 0;
    Object.keys(parent).forEach(function (id) {
      var root = find(id);
      if (!groups[root]) { groups[root] = []; pieces.push(groups[root]); }
      groups[root].push(id);
    });
    pieces.forEach(function (p) { largest = Math.max(largest, p.length); });
    return { pieces: pieces, joins: joins, largest: largest };
  }

  var initial = {};
  var api = { cy: cy, ready: false, selected: null };
  window.hephaestusGraph = api;

  /* The paths through a node, as model.upstream/downstream compute them: through a connector
     only along the edge's `via` (the one table or topic it carries). */
  function walk(start, up) {
    var nodes = {}, edges = {}, seen = {};
    var queue = [[start, '']];
    nodes[start] = true;
    seen[start + SEP] = true;
    for (var i = 0; i < queue.length; i++) {
      var at = queue[i][0], key = queue[i][1];
      var node = cy.getElementById(at);
      (up ? node.incomers('edge') : node.outgoers('edge')).forEach(function (e) {
        var via = e.data('via'), next;
        if (up) {
          if (key && e.source().id() !== key) { return; }
          next = [e.source().id(), via];
        } else {
          if (key && via && via !== key) { return; }
          next = [e.target().id(), at];
        }
        edges[e.id()] = true;
        nodes[next[0]] = true;
        if (!seen[next[0] + SEP + next[1]]) { seen[next[0] + SEP + next[1]] = true; queue.push(next); }
      });
    }
    return { nodes: nodes, edges: edges };
  }
  api.walk = walk;

  function merged(a, b) {
    var out = { nodes: {}, edges: {} };
    [a, b].forEach(function (p) {
      Object.keys(p.nodes).forEach(function (k) { out.nodes[k] = true; });
      Object.keys(p.edges).forEach(function (k) { out.edges[k] = true; });
    });
    return out;
  }

  function select(id) {
    var node = cy.getElementById(id);
    if (node.empty()) { return; }
    var up = walk(id, true), down = walk(id, false), path = merged(up, down);
    cy.batch(function () {
      cy.elements().removeClass('highlighted selected').addClass('faded');
      cy.elements().forEach(function (el) {
        if ((el.isNode() && path.nodes[el.id()]) || (el.isEdge() && path.edges[el.id()])) {
          el.removeClass('faded').addClass('highlighted');
        }
      });
      node.addClass('selected');
    });
    api.selected = id;
    panel(byId[id], up, down);
    cy.resize();  // the panel took its share of the width
    bringIntoView(cy.nodes().filter(function (n) { return path.nodes[n.id()]; }), 40);
  }

  /* Fits the view to `eles` in the canvas's room (beside the panel when it is open), no closer
     than a zoom of 1.2. */
  function bringIntoView(eles, padding) {
    cy.fit(eles, padding);
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(eles); }
  }
  api.select = select;

  function clear() {
    cy.elements().removeClass('highlighted selected faded');
    api.selected = null;
    $('panel').hidden = true;
    cy.resize();
  }
  api.clear = clear;

  function facts(dl, pairs) {
    dl.replaceChildren();
    pairs.forEach(function (p) {
      if (p[1] === '' || p[1] === null || p[1] === undefined) { return; }
      var dt = document.createElement('dt'), dd = document.createElement('dd');
      dt.textContent = p[0];
      if (p[1] instanceof Node) { dd.appendChild(p[1]); } else { dd.textContent = String(p[1]); }
      dl.append(dt, dd);
    });
  }

  function links(ids) {
    var span = document.createElement('span');
    ids.forEach(function (id, i) {
      var b = document.createElement('button');
      b.type = 'button';
      b.textContent = byId[id].label;
      b.addEventListener('click', function () { focus(id); });
      if (i) { span.append(', '); }
      span.append(b);
    });
    return ids.length ? span : '';
  }

  function ofKind(p, kind, self) {
    return Object.keys(p.nodes).filter(function (k) { return k !== self && byId[k] && byId[k].kind === kind; }).sort();
  }

  function panel(n, up, down) {
    $('panel').hidden = false;
    $('panel-title').textContent = n.label;
    $('panel-kind').textContent = NAMES[n.kind] + (n.detail ? ' \u00b7 ' + n.detail : '');
    facts($('panel-facts'), [['cluster', n.cluster], ['database', n.database],
      ['git state', n.kind === 'source' || n.kind === 'sink' ? (n.state || 'unmanaged') : ''], ['declared in', n.origin]]);
    facts($('panel-lineage-facts'), [['tables read', links(ofKind(up, 'table', n.id))],
      ['sources', links(ofKind(up, 'source', n.id))], ['sinks', links(ofKind(down, 'sink', n.id))],
      ['tables written', links(ofKind(down, 'table', n.id))]]);
    var h = n.health;
    $('panel-health').hidden = !h;
    if (h) {
      var tasks = h.tasks.map(function (t) { return t[0] + ': ' + t[1]; }).join(', ');
      facts($('panel-health-facts'), [['state', h.state], ['healthy', h.healthy ? 'yes' : 'no'], ['tasks', tasks]].concat(h.facts));
      $('panel-problems').replaceChildren.apply($('panel-problems'), h.problems.map(function (p) {
        var li = document.createElement('li'); li.textContent = p; return li;
      }));
    }
    var c = n.change;
    $('panel-change').hidden = !c;
    if (c) { facts($('panel-change-facts'), [['when', c.ts], ['action', c.action], ['outcome', c.outcome], ['run', c.run_id], ['detail', c.detail]]); }
    $('panel-config').hidden = !n.config.length;
    $('panel-config-table').replaceChildren.apply($('panel-config-table'), n.config.map(function (kv) {
      var tr = document.createElement('tr'), k = document.createElement('td'), v = document.createElement('td');
      k.textContent = kv[0]; v.textContent = kv[1]; tr.append(k, v); return tr;
    }));
  }

  function focus(id) {
    var node = cy.getElementById(id);
    if (node.empty()) { return; }
    if (node.hasClass('hidden')) { resetFilters(); }
    select(id);
  }
  api.focus = focus;

  /* How well a node's names match the text: 0 a name is the text, 1 a name starts or ends
     (after a separator) with it, 2 a name holds it, 3 only its cluster or database does. */
  function rank(n, q) {
    return Math.min.apply(null, n.names.map(function (name) {
      if (name === q) { return 0; }
      var before = name.length - q.length - 1;
      if (name.indexOf(q) === 0 || (before >= 0 && name.slice(before + 1) === q && /[._\/ -]/.test(name[before]))) { return 1; }
      return name.indexOf(q) >= 0 ? 2 : 3;
    }));
  }

  /* Search: names, clusters and databases that contain the text; the matches are marked and
     brought into view, and listed to pick one, best matches first (so that a table is listed
     before the hundreds of connectors whose names merely hold its name). */
  function search(text) {
    var q = text.trim().toLowerCase(), list = $('results');
    cy.nodes().removeClass('match');
    list.replaceChildren();
    if (!q) { list.hidden = true; return cy.collection(); }
    var ranked = [];
    cy.nodes().forEach(function (n, i) {
      var d = byId[n.id()];
      if (!n.hasClass('hidden') && d.haystack.indexOf(q) >= 0) { ranked.push({ n: n, r: rank(d, q), i: i }); }
    });
    ranked.sort(function (a, b) { return a.r - b.r || a.i - b.i; });
    var found = cy.collection(ranked.map(function (m) { return m.n; }));
    found.addClass('match');
    found.slice(0, 50).forEach(function (n) {
      var d = byId[n.id()], li = document.createElement('li'), b = document.createElement('button');
      b.type = 'button';
      b.textContent = d.label + '  \u2014 ' + NAMES[d.kind] + (d.cluster ? ' \u00b7 ' + d.cluster : '');
      b.addEventListener('click', function () { list.hidden = true; focus(n.id()); });
      li.append(b);
      list.append(li);
    });
    list.hidden = found.empty();
    if (found.nonempty()) { bringIntoView(found, 60); }
    return found;
  }
  api.search = search;

  function options(selectId, values) {
    var sel = $(selectId);
    values.forEach(function (v) {
      var o = document.createElement('option'); o.value = v; o.textContent = v; sel.append(o);
    });
  }

  function distinct(field) {
    var seen = {};
    data.nodes.forEach(function (n) { if (n[field]) { seen[n[field]] = true; } });
    return Object.keys(seen).sort();
  }

  function filters() {
    return { cluster: $('filter-cluster').value, database: $('filter-database').value, shown: $('filter-state').value };
  }

  /* Filters keep the nodes that match every filter set, and everything on their paths. */
  function applyFilters() {
    var f = filters(), active = Object.keys(f).filter(function (k) { return f[k]; });
    clear();
    if (!active.length) { showAll(); return; }
    var keep = { nodes: {}, edges: {} };
    data.nodes.forEach(function (n) {
      if (active.every(function (k) { return n[k] === f[k]; })) {
        keep = merged(keep, merged(walk(n.id, true), walk(n.id, false)));
      }
    });
    cy.batch(function () {
      cy.elements().forEach(function (el) {
        var kept = el.isNode() ? keep.nodes[el.id()] : keep.edges[el.id()];
        if (kept) { el.removeClass('hidden'); } else { el.addClass('hidden'); }
      });
    });
    var visible = cy.elements().not('.hidden');
    if (visible.nonempty()) { arrange(visible); }
  }

  function showAll() {
    cy.batch(function () {
      cy.elements().removeClass('hidden');
      cy.nodes().forEach(function (n) { if (initial[n.id()]) { n.position(initial[n.id()]); } });
    });
    cy.fit(undefined, 20);
  }

  function resetFilters() {
    ['filter-cluster', 'filter-database', 'filter-state'].forEach(function (id) { $(id).value = ''; });
    applyFilters();
  }

  function notes() {
    var items = [], errors = false;
    Object.keys(data.unreadable).sort().forEach(function (c) { items.push('cluster ' + c + ' could not be read: ' + data.unreadable[c]); errors = true; });
    data.errors.forEach(function (e) { items.push(e); errors = true; });
    data.warnings.forEach(function (w) { items.push(w); });
    if (!items.length) { return; }
    var box = $('notes');
    box.hidden = false;
    box.open = errors;
    box.classList.toggle('errors', errors);
    $('notes-summary').textContent = items.length + (errors ? ' problem(s) reading the fleet' : ' note(s) on the lineage');
    $('notes-list').replaceChildren.apply($('notes-list'), items.map(function (t) {
      var li = document.createElement('li'); li.textContent = t; return li;
    }));
  }

  function legend() {
    var parts = Object.keys(COLOURS).map(function (k) { return [COLOURS[k], NAMES[k], '']; });
    if (data.meta.live) {
      parts.push(['#fff', 'healthy', '#1a7f37'], ['#fff', 'unhealthy', '#cf222e'],
                 ['#fff', 'cluster unreadable', '#6e7781'], ['#fff', 'in git, not live', '#bf8700']);
    }
    $('legend').replaceChildren.apply($('legend'), parts.map(function (p) {
      var span = document.createElement('span'), sw = document.createElement('span');
      sw.className = 'swatch'; sw.style.background = p[0];
      if (p[2]) { sw.style.borderColor = p[2]; }
      span.append(sw, p[1]);
      return span;
    }));
  }

  function summary() {
    var count = function (k) { return data.nodes.filter(function (n) { return n.kind === k; }).length; };
    var parts = [count('source') + count('sink') + ' connectors', count('topic') + ' topics',
                 count('table') + ' tables', count('stream') + ' ksqlDB objects'];
    $('summary').textContent = parts.join(' \u00b7 ') + ' \u00b7 ' + (data.meta.live ? 'live, read ' : 'git, ') + data.meta.generated;
  }

  options('filter-cluster', distinct('cluster'));
  options('filter-database', distinct('database'));
  options('filter-state', distinct('shown'));
  ['filter-cluster', 'filter-database', 'filter-state'].forEach(function (id) { $(id).addEventListener('change', applyFilters); });
  $('search').addEventListener('input', function (e) { search(e.target.value); });
  $('search').addEventListener('keydown', function (e) {
    if (e.key === 'Enter') { var found = search(e.target.value); if (found.nonempty()) { $('results').hidden = true; focus(found[0].id()); } }
    if (e.key === 'Escape') { e.target.value = ''; search(''); }
  });
  $('reset').addEventListener('click', function () { $('search').value = ''; search(''); resetFilters(); });
  $('panel-close').addEventListener('click', clear);
  cy.on('tap', 'node', function (e) { $('results').hidden = true; select(e.target.id()); });
  cy.on('tap', function (e) { if (e.target === cy) { $('results').hidden = true; clear(); } });
  notes();
  legend();
  summary();

  arrange(cy.elements());
  cy.nodes().forEach(function (n) { initial[n.id()] = { x: n.position('x'), y: n.position('y') }; });
  api.ready = true;
  document.body.dataset.ready = 'true';
}());
