// Switchyard admin dashboard. Plain JavaScript, no dependencies.
//
// It polls GET /admin/api/state and /admin/api/decisions every 2 s without
// reloading the page, shows the traffic by route (routes.js: shares and a
// requests-per-second chart per model), the spend by route, key and
// upstream (spend.js: /admin/api/usage every 10 s), opens a request's view
// (request.js) from a row of recent decisions, and edits upstreams with
// PATCH (active toggle, inline weight). The admin token lives in sessionStorage only:
// never a cookie, never local storage. Everything taken from the API is
// inserted as text, never as HTML.
'use strict';

(() => {
  const TOKEN_KEY = 'switchyard.adminToken';
  const POLL_MS = 2000;

  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let timer = null;
  let layout = ''; // tier/upstream order the table was built for
  const rows = new Map(); // upstream name → row elements

  const $ = (id) => document.getElementById(id);

  // el builds an element: el('td', {class: 'num'}, 'text', childNode, …).
  function el(tag, attrs, ...children) {
    const svg = ['svg', 'g', 'line', 'polyline', 'circle', 'text', 'rect', 'title'].includes(tag);
    const e = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // ---- API ----

  class APIError extends Error {}

  async function api(method, path, body) {
    const init = { method, headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await fetch('api/' + path, init);
    if (res.status === 401) {
      signOut('The admin token was refused.');
      throw new APIError('unauthorized');
    }
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) {
      let msg = (data && data.error && data.error.message) || res.status + ' ' + res.statusText;
      const fields = (data && data.error && data.error.fields) || [];
      if (fields.length) msg += ': ' + fields.map((f) => (f.path ? f.path + ': ' : '') + f.message).join('; ');
      throw new APIError(msg);
    }
    return data;
  }

  // ---- formatting ----

  const dash = '–';
  const pct = (x, digits) => (x * 100).toFixed(digits || 0) + '%';
  const ms = (x) => (x > 0 ? Math.round(x) + ' ms' : dash);
  function count(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (n >= 1e4) return (n / 1e3).toFixed(1) + 'k';
    return String(n);
  }
  const usedOf = (used, limit) => count(used) + ' / ' + (limit > 0 ? count(limit) : dash);
  const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour12: false });
  // usd formats US dollars: cents from $1 up, three significant digits
  // below ($0.0123), at most eight decimals.
  function usd(x) {
    if (!x) return '$0';
    if (x >= 1) return '$' + x.toFixed(2);
    return '$' + x.toFixed(Math.min(8, 2 - Math.floor(Math.log10(x))));
  }
  // estimates maps each candidate of a decision that lowest-cost (or a
  // price preference) scored to its estimated cost: "$0.0012" or "unpriced".
  function estimates(d) {
    const out = new Map();
    for (const tier of d.tiers || []) {
      for (const c of tier.candidates || []) {
        const sc = c.scores || {};
        if (sc.estimated_cost_usd !== undefined) out.set(c.name, usd(sc.estimated_cost_usd));
        else if (sc.unpriced) out.set(c.name, 'unpriced');
      }
    }
    return out;
  }

  // The request view (request.js) opens from a row of recent decisions.
  const requestView = switchyardRequestView({ $, el, api, usd, estimates });
  // The traffic by route (routes.js).
  const routes = switchyardRoutes({ $, el });
  // The spend by route, key and upstream (spend.js), refreshed every
  // SPEND_EVERY polls: the store adds the request logs up for it.
  const spend = switchyardSpend({ $, el, api, count, usd, pct });
  const SPEND_EVERY = 5;
  let polls = 0;

  // ---- sign in / out ----

  function showApp(on) {
    $('login').hidden = on;
    $('app').hidden = !on;
    $('logout').hidden = !on;
  }

  function setStatus(text, bad) {
    const s = $('status');
    s.textContent = text;
    s.classList.toggle('error', !!bad);
  }

  function signOut(message) {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    clearTimeout(timer);
    timer = null;
    showApp(false);
    requestView.close();
    routes.reset();
    spend.reset();
    polls = 0;
    setStatus('signed out');
    $('login-error').textContent = message || '';
    $('token').value = '';
    $('token').focus();
  }

  async function signIn(candidate) {
    token = candidate;
    $('login-error').textContent = '';
    try {
      await api('GET', 'state');
    } catch (e) {
      if (!(e instanceof APIError) || e.message !== 'unauthorized') {
        token = '';
        $('login-error').textContent = 'Cannot reach the admin API: ' + e.message;
      }
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    showApp(true);
    poll();
  }

  // ---- upstream table ----

  function layoutOf(ups) {
    return ups.map((u) => u.tier + ':' + u.name).join(',');
  }

  function buildTable(ups) {
    const body = $('upstreams').tBodies[0];
    const nodes = [];
    const tiers = new Map();
    for (const u of ups) {
      if (!tiers.has(u.tier)) tiers.set(u.tier, []);
      tiers.get(u.tier).push(u);
    }
    rows.clear();
    for (const [tier, list] of tiers) {
      const header = el('td', { colspan: 15 });
      nodes.push(el('tr', { class: 'tier', 'data-tier': tier }, header));
      for (const u of list) {
        const r = newRow(u.name);
        r.tierHeader = header;
        rows.set(u.name, r);
        nodes.push(r.tr);
      }
    }
    body.replaceChildren(...nodes);
  }

  function newRow(name) {
    const r = {};
    r.toggle = el('button', { type: 'button', class: 'toggle', role: 'switch', 'data-upstream': name });
    r.toggle.addEventListener('click', () => setActive(name, r.toggle.getAttribute('aria-checked') !== 'true'));
    r.weight = el('input', { type: 'number', min: 1, max: 100, step: 1, class: 'weight', 'aria-label': 'weight of ' + name, 'data-upstream': name });
    r.weight.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') r.weight.blur(); if (ev.key === 'Escape') { r.weight.value = r.weight.dataset.saved; r.weight.blur(); } });
    r.weight.addEventListener('change', () => setWeight(name, r.weight));
    r.provider = el('span', { class: 'provider' });
    const cell = (cls) => el('td', { class: cls });
    r.cells = {
      eff: cell('num'), breaker: cell(''), inflight: cell('num'), queue: cell('num'), rpm: cell('num'),
      tpm: cell('num'), cooldown: cell('num'), latency: cell('num'), ttft: cell('num'), errors: cell('num'),
      r429: cell('num'), hedges: cell('num'),
    };
    const c = r.cells;
    r.tr = el('tr', { 'data-upstream': name },
      el('td', {}, r.toggle),
      el('td', { class: 'name' }, el('strong', { text: name }), r.provider),
      el('td', { class: 'num' }, r.weight),
      c.eff, c.breaker, c.inflight, c.queue, c.rpm, c.tpm, c.cooldown, c.latency, c.ttft, c.errors, c.r429, c.hedges);
    return r;
  }

  function renderState(state) {
    const ups = state.upstreams || [];
    const l = layoutOf(ups);
    if (l !== layout) {
      buildTable(ups);
      layout = l;
    }
    for (const id of ['window', 'route-window']) $(id).textContent = Math.round(state.window_seconds / 60) + ' min';
    const at = new Date(state.at).getTime();
    const tierInfo = new Map();
    for (const u of ups) {
      const t = tierInfo.get(u.tier) || { n: 0, requests: 0 };
      t.n++;
      t.requests += u.requests_5m;
      tierInfo.set(u.tier, t);
    }
    for (const u of ups) {
      const r = rows.get(u.name);
      if (!r) continue;
      const t = tierInfo.get(u.tier);
      r.tierHeader.textContent = 'Tier ' + u.tier + ' · ' + t.n + ' upstream' + (t.n === 1 ? '' : 's') +
        ' · ' + t.requests + ' attempts in the window, every model';
      r.tr.classList.toggle('inactive', !u.active);
      r.toggle.setAttribute('aria-checked', String(u.active));
      r.toggle.classList.toggle('off', !u.active);
      r.toggle.textContent = u.active ? 'on' : 'off';
      r.toggle.title = u.active ? 'Active: click to take it out of routing' : 'Inactive: click to route to it again';
      r.provider.textContent = u.provider;
      r.weight.dataset.saved = String(u.weight);
      if (document.activeElement !== r.weight) r.weight.value = String(u.weight);
      const c = r.cells;
      c.eff.textContent = u.effective_weight.toFixed(u.effective_weight % 1 ? 1 : 0);
      c.eff.title = 'weight ' + u.weight + ' × slow start ' + u.slow_start.toFixed(2);
      const b = u.breaker || {};
      c.breaker.replaceChildren(el('span', { class: 'badge ' + b.state, text: (b.state || '').replace('_', '-') }));
      c.breaker.title = b.reason || '';
      c.inflight.textContent = u.max_concurrency > 0 ? u.in_flight + ' / ' + u.max_concurrency : String(u.in_flight);
      c.queue.replaceChildren(u.queue_max > 0 ? u.queue_depth + ' / ' + u.queue_max : dash);
      c.queue.title = '';
      if (u.queue_by_class) {
        // This instance's waiters by class, then by key in the tooltip.
        const classes = ['critical', 'interactive', 'batch'].filter((k) => u.queue_by_class[k] > 0);
        const keys = Object.entries(u.queue_by_key || {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
        c.queue.append(el('small', { class: 'queue-split', text: classes.map((k) => k + ' ' + u.queue_by_class[k]).join(' · ') }),
          el('small', { class: 'queue-split', text: keys.slice(0, 3).map(([k, n]) => k + ' ' + n).join(' · ') + (keys.length > 3 ? ' · …' : '') }));
        // Each key's share in the fair queue: its team's weight split among the team's waiting keys.
        const shares = u.queue_share_by_key || {};
        const share = (k) => (k in shares ? ' (share ' + +shares[k].toFixed(2) + ')' : '');
        c.queue.title = 'waiting here, by key:\n' + keys.map(([k, n]) => k + ': ' + n + share(k)).join('\n');
      }
      c.rpm.textContent = usedOf(u.rpm_used, u.rpm_limit);
      c.tpm.textContent = usedOf(u.tpm_used, u.tpm_limit);
      const cool = u.cooldown_until ? Math.max(0, Math.ceil((new Date(u.cooldown_until).getTime() - at) / 1000)) : 0;
      c.cooldown.textContent = cool > 0 ? cool + ' s' : dash;
      c.cooldown.className = 'num' + (cool > 0 ? ' warn' : '');
      c.cooldown.title = u.rate_limit_reason || '';
      c.latency.textContent = ms(u.latency_ms);
      c.ttft.textContent = ms(u.ttft_ms);
      c.ttft.title = u.tps > 0 ? Math.round(u.tps) + ' tokens/s after the first' : '';
      c.latency.title = u.probe_latency_ms > 0 ? 'last probe ' + Math.round(u.probe_latency_ms) + ' ms' : '';
      c.errors.textContent = u.requests_5m ? pct(u.error_rate, 1) : dash;
      c.errors.className = 'num' + (u.error_rate >= 0.05 ? ' bad' : '');
      c.errors.title = u.errors_5m + ' of ' + u.requests_5m + ' attempts';
      c.r429.textContent = u.requests_5m ? pct(u.rate_limited_rate, 1) : dash;
      c.r429.className = 'num' + (u.rate_limited_rate >= 0.05 ? ' warn' : '');
      c.r429.title = u.rate_limited_5m + ' of ' + u.requests_5m + ' attempts';
      c.hedges.textContent = u.hedges_5m ? u.hedges_won_5m + ' / ' + u.hedges_5m : dash;
      c.hedges.title = u.hedges_5m ? u.hedges_won_5m + ' of ' + u.hedges_5m + ' hedged attempts won the race' : 'no hedged attempts';
    }
  }

  async function setActive(name, active) {
    $('edit-error').textContent = '';
    try {
      await api('PATCH', 'upstreams/' + encodeURIComponent(name), { active });
    } catch (e) {
      if (e.message !== 'unauthorized') $('edit-error').textContent = name + ': ' + e.message;
    }
    poll();
  }

  async function setWeight(name, input) {
    const weight = Number(input.value);
    if (String(weight) === input.dataset.saved) return;
    $('edit-error').textContent = '';
    try {
      await api('PATCH', 'upstreams/' + encodeURIComponent(name), { weight });
    } catch (e) {
      input.value = input.dataset.saved;
      if (e.message !== 'unauthorized') $('edit-error').textContent = name + ': ' + e.message;
    }
    poll();
  }

  // ---- decisions ----

  // tried lists a decision's attempts: upstream, hedge, outcome, the winner.
  function tried(d) {
    return (d.tried || []).map((t) => t.upstream + (t.hedge ? ' (hedge)' : '') + ' ' +
      (t.won ? '✓' : t.outcome)).join(', ') || dash;
  }

  // sessionOf says how session affinity placed a decision: the binding's
  // home, its stand-in, and which was used.
  function sessionOf(d) {
    const a = d.affinity;
    if (!a || !a.result) return dash;
    let s = a.result;
    if (a.bound) s += ' · home ' + a.bound;
    if (a.stand_in) s += ' · stand-in ' + a.stand_in;
    if (a.reason) s += ' (' + a.reason + ')';
    return s;
  }

  // orderOf lists a decision's order, each candidate with its estimated
  // cost when the decision has one.
  function orderOf(d) {
    const est = estimates(d);
    return (d.order || []).map((n) => (est.has(n) ? n + ' (' + est.get(n) + ')' : n)).join(' → ') || dash;
  }

  function renderDecisions(list) {
    const body = $('decisions').tBodies[0];
    const nodes = (list || []).map((d) => {
      const skipped = [];
      for (const tier of d.tiers || []) {
        for (const c of tier.candidates || []) {
          if (c.filter || c.reason) skipped.push(c.name + ': ' + (c.reason || c.filter));
        }
      }
      const tr = el('tr', { class: 'open-request' + (d.request_id === requestView.current() ? ' selected' : ''), 'data-request-id': d.request_id,
        tabindex: 0, title: 'Open request ' + d.request_id },
        el('td', { text: clock(d.at) }),
        el('td', { class: 'rid', text: d.request_id, title: d.request_id }),
        el('td', { text: d.model }),
        el('td', { text: d.key || dash }),
        el('td', { text: d.strategy }),
        el('td', { class: 'rule', text: (d.rule || dash) + (d.rerouted_by ? ' (re-routed by ' + d.rerouted_by + ')' : '') }),
        el('td', {}, d.chosen ? el('strong', { text: d.chosen }) : el('span', { class: 'bad', text: 'none' })),
        el('td', { class: 'order', text: orderOf(d) }),
        el('td', { class: 'tried', text: tried(d) }),
        el('td', { class: 'affinity', text: sessionOf(d) }),
        el('td', { class: 'reasons', text: skipped.join(' · ') || dash }));
      tr.addEventListener('click', () => openRequest(d.request_id));
      tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') openRequest(d.request_id); });
      return tr;
    });
    if (nodes.length === 0) nodes.push(el('tr', {}, el('td', { colspan: 11, class: 'muted', text: 'No requests routed yet.' })));
    body.replaceChildren(...nodes);
  }

  function openRequest(id) {
    for (const tr of $('decisions').querySelectorAll('tr.selected')) tr.classList.remove('selected');
    for (const tr of $('decisions').querySelectorAll('tr[data-request-id]')) {
      if (tr.dataset.requestId === id) tr.classList.add('selected');
    }
    requestView.open(id);
  }

  // ---- polling ----

  async function poll() {
    clearTimeout(timer);
    timer = null;
    if (!token) return;
    if (polls++ % SPEND_EVERY === 0) spend.refresh();
    try {
      const [state, decisions] = await Promise.all([api('GET', 'state' + routes.historyQuery()), api('GET', 'decisions?limit=12')]);
      routes.record(state);
      renderState(state);
      routes.render(state);
      renderDecisions(decisions);
      setStatus('live · state as of ' + clock(state.at));
    } catch (e) {
      if (!token) return;
      setStatus('update failed: ' + e.message, true);
    }
    if (token && timer === null) timer = setTimeout(poll, POLL_MS);
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      signIn($('token').value.trim());
    });
    $('logout').addEventListener('click', () => signOut(''));
    $('rv-close').addEventListener('click', () => requestView.close());
    if (token) {
      showApp(true);
      poll();
    } else {
      showApp(false);
      $('token').focus();
    }
  });
})();
