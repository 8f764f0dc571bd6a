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
    n.haystack = [n.label, n.cluster, n.database].join(' ').toLowerCase();
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

  function layoutOptions() {
    return { name: 'dagre', rankDir: 'LR', nodeSep: 10, rankSep: 50, edgeSep: 4,
             ranker: big ? 'longest-path' : 'network-simplex', fit: false, animate: false };
  }

  /* dagre lays each connected component out in layers, left to right; the components are
     then set side by side in rows, largest first (as ELK's separateConnectedComponents
     does), so that a fleet of hundreds of pipelines fills the screen rather than one column. */
  function arrange(eles) {
    cy.resize();
    var boxes = eles.components().map(function (c) {
      c.layout(layoutOptions()).run();
      return { c: c, bb: c.boundingBox() };
    }).sort(function (a, b) { return b.bb.h - a.bb.h || b.bb.w - a.bb.w; });
    var gap = 40, area = 0, widest = 0;
    boxes.forEach(function (b) { area += (b.bb.w + gap) * (b.bb.h + gap); widest = Math.max(widest, b.bb.w); });
    var row = Math.max(widest, Math.sqrt(area * Math.max(cy.width(), 1) / Math.max(cy.height(), 1)));
    var x = 0, y = 0, height = 0;
    cy.batch(function () {
      boxes.forEach(function (b) {
        if (x > 0 && x + b.bb.w > row) { x = 0; y += height + gap; height = 0; }
        var dx = x - b.bb.x1, dy = y - b.bb.y1;
        b.c.nodes().forEach(function (n) { var p = n.position(); n.position({ x: p.x + dx, y: p.y + dy }); });
        x += b.bb.w + gap;
        height = Math.max(height, b.bb.h);
      });
    });
    cy.fit(eles, 20);
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
    cy.center(node);
    if (cy.zoom() < 0.8) { cy.zoom({ level: 0.8, position: node.position() }); }
  }
  api.focus = focus;

  /* Search: names, clusters and databases that contain the text; the matches are marked and
     brought into view, and listed to pick one. */
  function search(text) {
    var q = text.trim().toLowerCase(), list = $('results');
    cy.nodes().removeClass('match');
    list.replaceChildren();
    if (!q) { list.hidden = true; return cy.collection(); }
    var found = cy.nodes().filter(function (n) { return !n.hasClass('hidden') && byId[n.id()].haystack.indexOf(q) >= 0; });
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
    if (found.nonempty()) {
      cy.fit(found, 60);
      if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(found); }
    }
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
