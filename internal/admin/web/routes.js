// Switchyard admin dashboard: traffic by route. Plain JavaScript, loaded
// before app.js, which calls switchyardRoutes with its helpers.
//
// For each client model of GET /admin/api/state's `routes`, a table of its
// upstreams by tier — weight, attempts in the window, requests per second,
// and the share of that model's attempts in the tier against the share its
// weight gives it — and a chart of each upstream's requests per second for
// that model over the last 5 minutes. The chart's history comes from the
// server once (state?history=2s, the window's attempts in 2 s steps), then
// grows by one point per poll, built from `requests_total`; a line starts
// where its data starts. Under the head, the route's rules in order, each
// as "when → action" (docs/routing.md#rules). Everything from the API is
// inserted as text.
'use strict';

// switchyardRoutes returns {historyQuery(), record(state), render(state),
// reset()} over the element #routes. h holds app.js's helpers: $, el.
// eslint-disable-next-line no-unused-vars
function switchyardRoutes(h) {
  const { $, el } = h;
  const STEP_S = 2; // the chart's resolution, the same as the poll interval
  const SPAN_MS = 5 * 60 * 1000; // the chart's width in time
  const MAX_POINTS = 400;
  const COLORS = ['#2557d6', '#d9480f', '#2b8a3e', '#ae3ec9', '#0c8599', '#e8590c', '#c2255c', '#5c7cfa', '#495057', '#94d82d'];

  const colors = new Map(); // upstream name → colour, the same in every route
  let history = []; // [{t: ms (this browser's clock), rates: Map(key → req/s)}], oldest first
  let previous = null; // {t: ms, totals: Map(key → requests_total)}
  let needHistory = true;

  // key names one upstream's series under one model.
  const key = (model, upstream) => JSON.stringify([model, upstream]);
  const pct = (x) => (x * 100).toFixed(0) + '%';
  const dash = '–';

  function colorOf(name) {
    if (!colors.has(name)) colors.set(name, COLORS[colors.size % COLORS.length]);
    return colors.get(name);
  }

  function* upstreamsOf(state) {
    for (const r of state.routes || []) {
      for (const t of r.tiers || []) {
        for (const u of t.upstreams || []) yield [r, t, u];
      }
    }
  }

  // historyQuery is the query string the next /state poll needs: the
  // server's history once after sign-in, nothing after.
  function historyQuery() {
    return needHistory ? '?history=' + STEP_S + 's' : '';
  }

  // loadHistory turns the server's steps into points on this browser's
  // clock: a step ending at server time s is drawn at s + (now − at).
  function loadHistory(state, now) {
    const stepMs = state.history_step_seconds * 1000;
    const end = Date.parse(state.history_end) + (now - Date.parse(state.at));
    const byTime = new Map();
    for (const [r, , u] of upstreamsOf(state)) {
      const steps = u.history || [];
      steps.forEach((n, i) => {
        const t = end - (steps.length - 1 - i) * stepMs;
        if (!byTime.has(t)) byTime.set(t, new Map());
        byTime.get(t).set(key(r.model, u.name), n / state.history_step_seconds);
      });
    }
    history = [...byTime.entries()].sort((a, b) => a[0] - b[0]).map(([t, rates]) => ({ t, rates }));
  }

  // record adds a poll's point: each series' rate since the previous poll.
  function record(state) {
    const now = Date.now();
    const totals = new Map();
    for (const [r, , u] of upstreamsOf(state)) {
      totals.set(key(r.model, u.name), u.requests_total);
      colorOf(u.name);
    }
    if (state.history_end) {
      loadHistory(state, now);
      needHistory = false;
    } else if (previous) {
      const dt = (now - previous.t) / 1000;
      if (dt <= 0.2) return; // an extra poll right after an edit: keep the earlier baseline
      const rates = new Map();
      for (const [k, total] of totals) {
        const before = previous.totals.has(k) ? previous.totals.get(k) : total;
        rates.set(k, Math.max(0, total - before) / dt);
      }
      history.push({ t: now, rates });
    }
    while (history.length && (history[0].t < now - SPAN_MS || history.length > MAX_POINTS)) history.shift();
    previous = { t: now, totals };
  }

  function reset() {
    history = [];
    previous = null;
    needHistory = true;
  }

  const lastRate = (k) => {
    for (let i = history.length - 1; i >= 0; i--) if (history[i].rates.has(k)) return history[i].rates.get(k);
    return null;
  };

  // ---- the table ----

  function shareCell(u, t, model) {
    // Two segments in the legend's colours (#route-legend): actual, configured.
    const actual = el('div', { class: 'fill actual' });
    const configured = el('div', { class: 'fill configured' });
    actual.style.width = (u.share * 100).toFixed(1) + '%'; // CSSOM: allowed by the CSP, unlike a style attribute
    configured.style.width = (u.configured_share * 100).toFixed(1) + '%';
    return el('td', {
      class: 'share-cell',
      title: u.requests_5m + ' of the tier\'s ' + t.requests_5m + ' attempts for ' + model + '; configured ' +
        (u.configured_share > 0 ? u.weight + ' of ' + t.weight : 'none (inactive or no longer serving it)'),
    }, el('div', { class: 'share' },
      el('div', { class: 'bar' }, actual, configured),
      el('span', { class: 'text' }, el('span', { class: 'share-actual', text: pct(u.share) }), ' / ',
        el('span', { class: 'share-configured', text: pct(u.configured_share) }))));
  }

  function table(r) {
    const rows = [];
    for (const t of r.tiers || []) {
      const n = (t.upstreams || []).length;
      rows.push(el('tr', { class: 'tier', 'data-tier': t.tier }, el('td', {
        colspan: 5, text: 'Tier ' + t.tier + ' · ' + n + ' upstream' + (n === 1 ? '' : 's') + ' · weight ' + t.weight +
          ' · ' + t.requests_5m + ' attempts in the window',
      })));
      for (const u of t.upstreams || []) {
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = colorOf(u.name);
        const rate = lastRate(key(r.model, u.name));
        rows.push(el('tr', { 'data-model': r.model, 'data-upstream': u.name, class: u.active ? '' : 'inactive' },
          el('td', { class: 'name' }, swatch, el('strong', { text: u.name })),
          el('td', { class: 'num', text: u.weight }),
          el('td', { class: 'num attempts', text: u.requests_5m }),
          el('td', { class: 'num rate', text: rate === null ? dash : rate.toFixed(1) + '/s' }),
          shareCell(u, t, r.model)));
      }
    }
    return el('table', { class: 'grid route-table' },
      el('thead', {}, el('tr', {}, el('th', { text: 'Upstream' }), el('th', { class: 'num', text: 'Weight' }),
        el('th', { class: 'num', text: 'Attempts' }), el('th', { class: 'num', text: 'Req/s' }),
        el('th', { class: 'share-col', text: 'Share' }))),
      el('tbody', {}, ...rows));
  }

  // ---- the rules ----

  // whenText says a rule's conditions in one line: "header x-team=research*
  // · tools" ("always" for none).
  function whenText(w) {
    const parts = [];
    for (const [name, glob] of Object.entries(w.header || {})) parts.push('header ' + name + '=' + glob);
    if (w.min_input_tokens) parts.push('input ≥ ' + w.min_input_tokens + ' tokens');
    if (w.max_input_tokens) parts.push('input ≤ ' + w.max_input_tokens + ' tokens');
    if (w.key && w.key.length) parts.push('key ' + w.key.join(' | '));
    if (w.tags && w.tags.length) parts.push('tags ' + w.tags.join(' | '));
    for (const b of ['stream', 'tools', 'images']) if (b in w) parts.push(w[b] ? b : 'no ' + b);
    if (w.metadata && w.metadata.user_id) parts.push('user_id ' + w.metadata.user_id);
    return parts.join(' · ') || 'always';
  }

  // actionText says a rule's actions in one line.
  function actionText(r) {
    const parts = [];
    if (r.upstreams && r.upstreams.length) parts.push('only ' + r.upstreams.join(', '));
    if (r.exclude && r.exclude.length) parts.push('exclude ' + r.exclude.join(', '));
    if (r.strategy) parts.push('strategy ' + r.strategy);
    if (r.model) parts.push('re-route to ' + r.model);
    const tiers = Object.entries(r.priority || {}).map(([n, t]) => n + ' tier ' + t);
    if (tiers.length) parts.push(tiers.join(', '));
    return parts.join(' · ');
  }

  function rulesList(r) {
    if (!r.rules || r.rules.length === 0) return null;
    return el('ol', { class: 'rules', start: 0, 'aria-label': 'Rules of route ' + r.route },
      ...r.rules.map((rule, i) => el('li', { 'data-rule': 'routes[' + r.route + '].rules[' + i + ']' },
        el('span', { class: 'when', text: whenText(rule.when || {}) }), ' → ',
        el('span', { class: 'action', text: actionText(rule) }))));
  }

  // ---- the chart ----

  function niceMax(x) {
    if (x <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }

  // drawChart draws series (one per upstream of the route) into svg. The
  // time axis is always the last 5 minutes; each line starts at its first
  // point, a lone point is a dot.
  function drawChart(svg, model, names) {
    const W = Math.max(300, svg.clientWidth || 700), H = 170;
    const L = 40, R = 10, T = 8, B = 22;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const keys = names.map((n) => key(model, n));
    let max = 0;
    for (const p of history) for (const k of keys) if (p.rates.has(k)) max = Math.max(max, p.rates.get(k));
    max = niceMax(max);
    const nodes = [];
    const y = (v) => T + (H - T - B) * (1 - v / max);
    for (let i = 0; i <= 4; i++) {
      const v = (max * i) / 4;
      nodes.push(el('line', { class: 'gridline', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      nodes.push(el('text', { class: 'axis', x: L - 6, y: y(v) + 4, 'text-anchor': 'end', text: +v.toFixed(2) }));
    }
    const now = Date.now();
    const x = (t) => L + (W - L - R) * (1 - (now - t) / SPAN_MS);
    for (const [label, ago] of [['−5 min', 1], ['−4', 0.8], ['−3', 0.6], ['−2', 0.4], ['−1', 0.2], ['now', 0]]) {
      nodes.push(el('text', { class: 'axis', x: x(now - ago * SPAN_MS), y: H - 6, 'text-anchor': ago === 1 ? 'start' : ago === 0 ? 'end' : 'middle', text: label }));
    }
    let drawn = 0;
    names.forEach((name, i) => {
      const pts = history.filter((p) => p.rates.has(keys[i]) && p.t >= now - SPAN_MS)
        .map((p) => [x(p.t), y(p.rates.get(keys[i]))]);
      if (pts.length === 0) return;
      drawn++;
      const title = el('title', { text: name });
      if (pts.length === 1) {
        nodes.push(el('circle', { class: 'dot', cx: pts[0][0].toFixed(1), cy: pts[0][1].toFixed(1), r: 2.5, fill: colorOf(name), 'data-upstream': name }, title));
        return;
      }
      nodes.push(el('polyline', {
        class: 'series', stroke: colorOf(name), 'data-upstream': name,
        points: pts.map(([px, py]) => px.toFixed(1) + ',' + py.toFixed(1)).join(' '),
      }, title));
    });
    if (drawn === 0) {
      nodes.push(el('text', { class: 'axis', x: W / 2, y: H / 2, 'text-anchor': 'middle', text: 'collecting… (one point per poll)' }));
    }
    svg.replaceChildren(...nodes);
  }

  // ---- rendering ----

  function render(state) {
    const box = $('routes');
    const routes = state.routes || [];
    if (routes.length === 0) {
      box.replaceChildren(el('p', { class: 'muted', text: 'No model is served yet.' }));
      return;
    }
    const charts = [];
    box.replaceChildren(...routes.map((r) => {
      const svg = el('svg', { class: 'chart', role: 'img', 'aria-label': 'Requests per second per upstream for ' + r.model + ' over time' });
      charts.push([svg, r]);
      const rules = rulesList(r);
      return el('div', { class: 'route', 'data-model': r.model },
        el('div', { class: 'route-head' }, el('h3', { text: r.model }),
          el('span', { class: 'muted', text: r.requests_5m + ' attempts in the window' })),
        ...(rules ? [rules] : []),
        el('div', { class: 'route-body' }, el('div', { class: 'scroll' }, table(r)), svg));
    }));
    for (const [svg, r] of charts) {
      drawChart(svg, r.model, [...upstreamsOf({ routes: [r] })].map(([, , u]) => u.name));
    }
  }

  return { historyQuery, record, render, reset };
}
