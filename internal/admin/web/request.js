// Switchyard admin dashboard: the view of one request. Plain JavaScript,
// loaded before app.js, which calls switchyardRequestView with its helpers.
//
// It fetches GET /admin/api/requests/{id} and shows the request's attempts
// on a timeline (one bar per attempt from its start to its end, a mark at
// its first byte, hedge and won labels, a colour per outcome), the routing
// decision's skipped candidates with their reasons, and the request's
// status, tokens (the prompt cache's reads and writes apart), cost and
// translation, and each candidate's estimated cost when the decision has it. Everything from the API is inserted as
// text; bar positions are set through the CSSOM, which the page's
// Content-Security-Policy allows (a style attribute it would block).
'use strict';

// switchyardRequestView returns {open(id), close(), current()} over the
// section #request-view. h holds app.js's helpers: $, el, api, usd,
// estimates.
// eslint-disable-next-line no-unused-vars
function switchyardRequestView(h) {
  const { $, el, api, usd, estimates } = h;
  const RETRY_MS = 1000; // the request log is written within about a second
  const RETRIES = 10;
  const dash = '–';
  let current = '';
  let retryTimer = null;

  const msOf = (ns) => (ns / 1e6).toFixed(ns < 1e7 ? 1 : 0) + ' ms';
  // outcomeClass maps an outcome to its colour class: success green,
  // canceled (a lost hedge, a client gone) grey, rate_limited amber, any
  // other failure red.
  const outcomeClass = (o) => ({ success: 'ok', canceled: 'muted', rate_limited: 'warn' })[o] || 'bad';

  function close() {
    clearTimeout(retryTimer);
    current = '';
    $('request-view').hidden = true;
  }

  async function open(id, attempt) {
    clearTimeout(retryTimer);
    current = id;
    const section = $('request-view');
    section.hidden = false;
    $('rv-id').textContent = id;
    $('rv-error').textContent = '';
    if (!attempt) {
      section.scrollIntoView({ block: 'nearest' });
    }
    let v;
    try {
      v = await api('GET', 'requests/' + encodeURIComponent(id));
    } catch (e) {
      if (current !== id || e.message === 'unauthorized') return;
      $('rv-error').textContent = e.message;
      for (const part of ['rv-facts', 'rv-timeline', 'rv-skipped']) $(part).replaceChildren();
      return;
    }
    if (current !== id) return; // another request was opened meanwhile
    render(v);
    if (!v.log && (attempt || 0) < RETRIES) {
      retryTimer = setTimeout(() => open(id, (attempt || 0) + 1), RETRY_MS);
    }
  }

  function render(v) {
    const l = v.log;
    const d = (v.decisions || [])[0];
    const facts = [];
    if (l) {
      facts.push(['Status', String(l.status) + (l.error_class ? ' · ' + l.error_class : '')]);
      facts.push(['Model', l.model], ['Key', l.key || dash], ['Served by', l.upstream || dash]);
      facts.push(['Attempts', String(l.attempts)], ['Latency', msOf(l.latency_ns)], ['TTFT', l.ttft_ns ? msOf(l.ttft_ns) : dash]);
      facts.push(['Tokens', l.input_tokens + ' in · ' + l.output_tokens + ' out']);
      facts.push(['Prompt cache', (l.cache_read_tokens || 0) + ' read · ' + (l.cache_write_tokens || 0) + ' written']);
      facts.push(['Cost', l.unpriced ? 'unpriced' : usd(l.cost_usd || 0)]);
      facts.push(['Translation', l.translated || 'none (passed through)']);
      if (l.error) facts.push(['Error', l.error]);
    } else if (d) {
      facts.push(['Model', d.model], ['Key', d.key || dash]);
    }
    if (d) facts.push(['Strategy', d.strategy], ['Order', (d.order || []).join(' → ') || dash]);
    const est = d ? estimates(d) : new Map();
    if (est.size > 0) facts.push(['Estimated cost', Array.from(est, ([n, c]) => n + ' ' + c).join(' · ')]);
    facts.push(['Trace', v.trace_id || 'none (tracing not enabled)']);
    $('rv-facts').replaceChildren(...facts.map(([k, val]) => el('div', {}, el('dt', { text: k }), el('dd', { text: val }))));
    $('rv-timeline').replaceChildren(...(l ? timeline(l) : untimed(v.decisions || [])));
    $('rv-skipped').replaceChildren(...skipped(v.decisions || []));
  }

  // timeline draws one row per attempt of the log, on a scale from the
  // request's arrival to its end.
  function timeline(l) {
    const tried = l.tried || [];
    if (tried.length === 0) return [el('p', { class: 'muted', text: 'No upstream attempt was made.' })];
    let total = l.latency_ns || 0;
    for (const a of tried) total = Math.max(total, a.start_ns + a.end_ns);
    total = total || 1;
    const pc = (ns) => (Math.min(1, Math.max(0, ns / total)) * 100).toFixed(2) + '%';
    const rows = tried.map((a, i) => {
      const bar = el('div', { class: 'span ' + outcomeClass(a.outcome), title: a.outcome + (a.detail ? ': ' + a.detail : '') });
      bar.style.left = pc(a.start_ns);
      bar.style.width = 'max(2px, ' + pc(a.end_ns) + ')';
      const track = el('div', { class: 'track' }, bar);
      if (a.first_byte_ns) {
        const mark = el('div', { class: 'first-byte', title: 'first byte after ' + msOf(a.first_byte_ns) });
        mark.style.left = pc(a.start_ns + a.first_byte_ns);
        track.append(mark);
      }
      const label = el('div', { class: 'label' }, el('span', { class: 'n', text: '#' + (i + 1) }), el('strong', { text: a.upstream }),
        a.hedge ? el('span', { class: 'tag hedge', text: 'hedge' }) : null,
        a.won ? el('span', { class: 'tag won', text: 'won' }) : null);
      const times = 'at ' + msOf(a.start_ns) + ' · ' + (a.first_byte_ns ? 'first byte +' + msOf(a.first_byte_ns) + ' · ' : '') +
        'took ' + msOf(a.end_ns);
      const tokens = a.input_tokens || a.output_tokens ? ' · ' + (a.input_tokens || 0) + ' in / ' + (a.output_tokens || 0) + ' out' : '';
      const result = el('div', { class: 'result' },
        el('span', { class: 'outcome ' + outcomeClass(a.outcome), text: a.outcome + (a.status ? ' ' + a.status : '') }),
        ' ' + times + tokens, a.detail ? el('span', { class: 'detail', text: ' — ' + a.detail }) : null);
      return el('div', { class: 'attempt', 'data-upstream': a.upstream, 'data-outcome': a.outcome }, label, track, result);
    });
    const axis = el('div', { class: 'axis' }, el('span', { text: '0' }), el('span', { text: msOf(total) }));
    return [...rows, axis];
  }

  // untimed lists the decisions' attempts while the log is not written yet.
  function untimed(decisions) {
    const out = [el('p', { class: 'muted', text: 'The request log is not written yet (logs are flushed every second): attempts without timings, from the routing decision.' })];
    for (const d of decisions) {
      for (const a of d.tried || []) {
        out.push(el('div', { class: 'attempt untimed', 'data-upstream': a.upstream, 'data-outcome': a.outcome },
          el('div', { class: 'label' }, el('strong', { text: a.upstream }),
            a.hedge ? el('span', { class: 'tag hedge', text: 'hedge' }) : null,
            a.won ? el('span', { class: 'tag won', text: 'won' }) : null),
          el('div', { class: 'result' }, el('span', { class: 'outcome ' + outcomeClass(a.outcome), text: a.outcome }))));
      }
    }
    return out;
  }

  // skipped lists, per decision, the candidates a filter dropped, with why.
  function skipped(decisions) {
    if (decisions.length === 0) {
      return [el('li', { class: 'muted', text: 'The routing decision is no longer kept (the gateway keeps the last 1,000).' })];
    }
    const out = [];
    for (const d of decisions) {
      for (const tier of d.tiers || []) {
        for (const c of tier.candidates || []) {
          if (!c.filter && !c.reason) continue;
          out.push(el('li', {}, el('strong', { text: c.name }), ' (tier ' + tier.priority + (decisions.length > 1 ? ', ' + d.model : '') + '): ' + (c.reason || c.filter)));
        }
      }
    }
    if (out.length === 0) out.push(el('li', { class: 'muted', text: 'No candidate was skipped.' }));
    return out;
  }

  return { open: (id) => open(id, 0), close, current: () => current };
}
