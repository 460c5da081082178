// Switchyard admin dashboard: what the traffic cost. Plain JavaScript,
// loaded before app.js, which calls switchyardSpend with its helpers.
//
// The Spend card adds up GET /admin/api/usage over a period the select
// chooses (24 hours, 7 days, 30 days) three ways: by route (the client's
// model, by=model), by key and by upstream, with USD, requests, tokens,
// cache-read tokens and unpriced requests; the upstream table adds the
// prompt cache's hit share (cache-read ÷ input tokens). The costs are the
// request logs', each priced when it was served. Everything from the API is
// inserted as text.
'use strict';

// switchyardSpend returns {refresh(), reset()} over the section
// #spend-card. h holds app.js's helpers: $, el, api, count, usd, pct.
// eslint-disable-next-line no-unused-vars
function switchyardSpend(h) {
  const { $, el, api, count, usd, pct } = h;
  const dash = '–';
  // The tables, each over one grouping of /usage; cacheHit adds the share.
  const TABLES = [
    { by: 'model', id: 'spend-model', cacheHit: false },
    { by: 'key', id: 'spend-key', cacheHit: false },
    { by: 'upstream', id: 'spend-upstream', cacheHit: true },
  ];
  let generation = 0; // a refresh's answers are shown only if no later one started

  // cacheHit is the share of input tokens read from the prompt cache.
  const cacheHit = (r) => (r.input_tokens > 0 ? pct(r.cache_read_tokens / r.input_tokens, 1) : dash);

  function row(r, withCacheHit) {
    return el('tr', { 'data-name': r.name },
      el('td', { class: 'name' }, el('strong', { text: r.name })),
      el('td', { class: 'num usd', text: usd(r.usd), title: '$' + r.usd }),
      el('td', { class: 'num', text: count(r.requests) }),
      el('td', { class: 'num', text: count(r.input_tokens) + ' / ' + count(r.output_tokens) }),
      el('td', { class: 'num', text: count(r.cache_read_tokens), title: count(r.cache_write_tokens) + ' written to the cache' }),
      withCacheHit ? el('td', { class: 'num cache-hit', text: cacheHit(r) }) : null,
      el('td', { class: 'num' + (r.unpriced ? ' warn' : ''), text: r.unpriced ? count(r.unpriced) : dash }));
  }

  function renderTable(t, rows) {
    const body = $(t.id).tBodies[0];
    const nodes = rows.map((r) => row(r, t.cacheHit));
    if (nodes.length === 0) nodes.push(el('tr', {}, el('td', { colspan: t.cacheHit ? 7 : 6, class: 'muted', text: 'No requests in the period.' })));
    body.replaceChildren(...nodes);
  }

  // renderTotal sums one grouping's rows (every request is in exactly one).
  function renderTotal(rows) {
    const t = { usd: 0, requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, unpriced: 0 };
    for (const r of rows) for (const k of Object.keys(t)) t[k] += r[k];
    $('spend-total').replaceChildren(
      el('strong', { class: 'usd', text: usd(t.usd), title: '$' + t.usd }),
      ' over ' + count(t.requests) + ' request' + (t.requests === 1 ? '' : 's') + ' · ' +
      count(t.input_tokens) + ' in / ' + count(t.output_tokens) + ' out tokens · ' +
      count(t.cache_read_tokens) + ' read from prompt caches',
      t.unpriced ? el('span', { class: 'warn', text: ' · ' + count(t.unpriced) + ' unpriced (counted as $0, not free)' }) : null);
  }

  async function refresh() {
    const g = ++generation;
    const since = $('spend-period').value;
    let answers;
    try {
      answers = await Promise.all(TABLES.map((t) => api('GET', 'usage?since=' + encodeURIComponent(since) + '&by=' + t.by)));
    } catch (e) {
      if (g !== generation || e.message === 'unauthorized') return;
      $('spend-error').textContent = 'usage: ' + e.message;
      return;
    }
    if (g !== generation) return;
    $('spend-error').textContent = '';
    TABLES.forEach((t, i) => renderTable(t, answers[i] || []));
    renderTotal(answers[TABLES.length - 1] || []);
  }

  function reset() {
    generation++;
    $('spend-total').replaceChildren();
    $('spend-error').textContent = '';
    for (const t of TABLES) $(t.id).tBodies[0].replaceChildren();
  }

  $('spend-period').addEventListener('change', refresh);
  return { refresh, reset };
}
