package gateway_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// spendPrice is a thousand times gpt-4o's list price, so that the spend
// test's long prompts cost dollars: cache reads at a tenth.
var spendPrice = config.Price{InputPerMTok: 2500, OutputPerMTok: 10000, CacheReadPerMTok: 250}

// dollars is the dashboard's text for a cost (app.js usd): cents from $1
// up, three significant digits below, at most eight decimals.
func dollars(usd float64) string {
	switch {
	case usd == 0:
		return "$0"
	case usd >= 1:
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.*f", min(8, 2-int(math.Floor(math.Log10(usd)))), usd)
}

// TestDashboardSpendInBrowser sends priced requests through the real
// server — long prompts the mock partly serves from its prompt cache, on
// the cheaper of two gpt-4o upstreams (lowest-cost), short gpt-4o-mini
// ones, one for a model without a price, from two keys — then opens the
// dashboard in headless Chromium: the Spend card shows the total of the
// answers' X-Switchyard-Cost, the spend per route, key and upstream, the
// unpriced request, and each upstream's cache-hit share (cache-read ÷ input
// tokens of the answers' usage); the decisions table and the request view
// show each candidate's estimated cost, and the request view the request's
// cost and prompt cache tokens, or "unpriced".
func TestDashboardSpendInBrowser(t *testing.T) {
	b := newBrowser(t, 90*time.Second)
	_, cheapURL := startMock(t, "mock-cheap", mock.Behavior{})
	_, dearURL := startMock(t, "mock-dear", mock.Behavior{})
	_, miniURL := startMock(t, "mock-mini", mock.Behavior{})
	_, houseURL := startMock(t, "mock-house", mock.Behavior{})
	cheap := upstreamAt("cheap", config.ProviderOpenAI, cheapURL, 0, "gpt-4o")
	cheap.Price = spendPrice
	dear := upstreamAt("dear", config.ProviderOpenAI, dearURL, 0, "gpt-4o")
	dear.Price = config.Price{InputPerMTok: 2 * spendPrice.InputPerMTok, OutputPerMTok: 2 * spendPrice.OutputPerMTok,
		CacheReadPerMTok: 2 * spendPrice.CacheReadPerMTok}
	mini := upstreamAt("mini", config.ProviderOpenAI, miniURL, 0, "gpt-4o-mini")
	mini.Price = spendPrice
	house := upstreamAt("house", config.ProviderOpenAI, houseURL, 0, "house-model-x")
	const teamB = "sk-e2e-team-b-key"
	e := startGateway(t, spec{
		upstreams: []config.Upstream{cheap, dear, mini, house},
		keys:      []config.Key{clientKey("e2e", testKey), clientKey("team-b", teamB)},
		edit: func(c *config.Config) {
			withAdmin(c)
			c.Pricing.Catalogue = "none"
			c.Defaults.Strategy = "lowest-cost"
		},
	})

	type sent struct {
		model, key, upstream string
		body                 string
	}
	short := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]}`
	}
	requests := []sent{
		{"gpt-4o", "e2e", "cheap", longChat("gpt-4o", false, "")},
		{"gpt-4o", "e2e", "cheap", longChat("gpt-4o", false, "")},
		{"gpt-4o", "e2e", "cheap", longChat("gpt-4o", false, "")},
		{"gpt-4o", "team-b", "cheap", longChat("gpt-4o", false, "")},
		{"gpt-4o-mini", "team-b", "mini", short("gpt-4o-mini")},
		{"gpt-4o-mini", "team-b", "mini", short("gpt-4o-mini")},
		{"house-model-x", "e2e", "house", short("house-model-x")},
	}
	type sums struct {
		usd           float64
		in, cacheRead int64
	}
	var (
		total                 float64
		byModel, byKey, byUps = map[string]*sums{}, map[string]*sums{}, map[string]*sums{}
		ids                   []string
	)
	add := func(m map[string]*sums, name string, usd float64, in, read int64) {
		if m[name] == nil {
			m[name] = &sums{}
		}
		m[name].usd += usd
		m[name].in += in
		m[name].cacheRead += read
	}
	for i, s := range requests {
		secret := testKey
		if s.key == "team-b" {
			secret = teamB
		}
		r := e.postAs(t, secret, chatPath, s.body)
		if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != s.upstream {
			t.Fatalf("request %d: status %d from %q, want 200 from %s: %s", i, r.status, r.header.Get("X-Switchyard-Upstream"), s.upstream, r.body)
		}
		var usd float64
		if h := r.header.Get("X-Switchyard-Cost"); h != "" {
			var err error
			if usd, err = strconv.ParseFloat(h, 64); err != nil {
				t.Fatalf("request %d: X-Switchyard-Cost %q", i, h)
			}
		} else if s.upstream != "house" {
			t.Fatalf("request %d to %s has no X-Switchyard-Cost", i, s.upstream)
		}
		u := gjson.GetBytes(r.body, "usage")
		in, read := u.Get("prompt_tokens").Int(), u.Get("prompt_tokens_details.cached_tokens").Int()
		if s.upstream == "cheap" && (read == 0 || read >= in) {
			t.Fatalf("request %d: the mock reported %d of %d input tokens cached: want a part", i, read, in)
		}
		total += usd
		add(byModel, s.model, usd, in, read)
		add(byKey, s.key, usd, in, read)
		add(byUps, s.upstream, usd, in, read)
		ids = append(ids, r.header.Get("X-Request-Id"))
	}

	// The request logs are written about every second: wait until the
	// usage counts them all, so the dashboard's first refresh has them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rows []struct {
			Requests int `json:"requests"`
		}
		if err := json.Unmarshal(e.mustAdmin(t, "GET", "/usage?by=model", "", http.StatusOK).body, &rows); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			n += r.Requests
		}
		if n == len(requests) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the usage counts %d requests, want %d", n, len(requests))
		}
		time.Sleep(100 * time.Millisecond)
	}

	b.signIn(e.URL)
	b.wait("the Spend card shows the total", fmt.Sprintf(`(document.querySelector('#spend-total .usd') || {}).textContent === %q`, dollars(total)))
	if got := b.eval(`document.getElementById('spend-total').textContent`); !strings.Contains(got, "over 7 requests") || !strings.Contains(got, "1 unpriced") {
		t.Errorf("the total line %q lacks the 7 requests or the unpriced one", got)
	}
	cell := func(table, name, class string) string {
		return b.eval(fmt.Sprintf(`(document.querySelector('#%s tr[data-name="%s"] td.%s') || {textContent: 'missing'}).textContent`, table, name, class))
	}
	for _, c := range []struct {
		table string
		sums  map[string]*sums
		names []string
	}{
		{"spend-model", byModel, []string{"gpt-4o", "gpt-4o-mini"}},
		{"spend-key", byKey, []string{"e2e", "team-b"}},
		{"spend-upstream", byUps, []string{"cheap", "mini"}},
	} {
		for _, name := range c.names {
			if got, want := cell(c.table, name, "usd"), dollars(c.sums[name].usd); got != want {
				t.Errorf("%s: %s spent %s, want %s", c.table, name, got, want)
			}
		}
	}
	if got := cell("spend-upstream", "house", "usd"); got != "$0" {
		t.Errorf("the unpriced upstream spent %s, want $0", got)
	}
	for _, name := range []string{"cheap", "mini", "house"} {
		s := byUps[name]
		want := fmt.Sprintf("%.1f%%", 100*float64(s.cacheRead)/float64(s.in))
		if got := cell("spend-upstream", name, "cache-hit"); got != want {
			t.Errorf("cache hit of %s: %s, want %s (%d of %d input tokens)", name, got, want, s.cacheRead, s.in)
		}
	}
	if got := b.eval(`document.querySelectorAll('#spend-upstream tbody tr[data-name]').length + ' ' + ` +
		`document.querySelectorAll('#spend-model tbody tr[data-name]').length`); got != "3 3" {
		t.Errorf("rows by upstream and by model %q, want 3 3 (dear served nothing)", got)
	}

	// Another period asks again, and the same requests are in it.
	b.eval(`(() => { const s = document.getElementById('spend-period'); s.value = '720h'; s.dispatchEvent(new Event('change')); return 'ok'; })()`)
	b.wait("the 30-day spend", fmt.Sprintf(`document.querySelector('#spend-total .usd').textContent === %q && document.getElementById('spend-error').textContent === ''`, dollars(total)))

	// The decisions table and the request view show lowest-cost's estimates;
	// the view, the request's cost and prompt cache tokens.
	first := e.mustAdmin(t, "GET", "/requests/"+ids[0], "", http.StatusOK).body
	var est []string
	for _, up := range []string{"cheap", "dear"} {
		v := gjson.GetBytes(first, `decisions.0.tiers.0.candidates.#(name=="`+up+`").scores.estimated_cost_usd`)
		if !v.Exists() {
			t.Fatalf("the decision has no estimated cost for %s: %s", up, first)
		}
		est = append(est, up+" "+dollars(v.Float()))
	}
	row := fmt.Sprintf(`#decisions tr[data-request-id="%s"]`, ids[0])
	b.wait("the first request has a row", fmt.Sprintf(`!!document.querySelector('%s')`, row))
	if got, want := b.eval(`document.querySelector('`+row+` td.order').textContent`),
		"cheap ("+strings.TrimPrefix(est[0], "cheap ")+") → dear ("+strings.TrimPrefix(est[1], "dear ")+")"; got != want {
		t.Errorf("the decision's order %q, want %q", got, want)
	}
	b.do("opening the request", chromedp.Click(chromedp.CSS(row)))
	log := gjson.GetBytes(first, "log")
	wantFacts := []string{
		"Cost" + dollars(log.Get("cost_usd").Float()),
		fmt.Sprintf("Prompt cache%d read · 0 written", log.Get("cache_read_tokens").Int()),
		"Estimated cost" + strings.Join(est, " · "),
	}
	b.wait("the view shows the request's cost", `document.getElementById('rv-facts').textContent.includes('Cost$')`)
	facts := b.eval(`document.getElementById('rv-facts').textContent`)
	for _, w := range wantFacts {
		if !strings.Contains(facts, w) {
			t.Errorf("the view's facts %q lack %q", facts, w)
		}
	}
	b.eval(`document.querySelector('#decisions tr[data-request-id="` + ids[len(ids)-1] + `"]').click(), 'ok'`)
	b.wait("the unpriced request's view", `document.getElementById('rv-id').textContent === '`+ids[len(ids)-1]+`' && `+
		`document.getElementById('rv-facts').textContent.includes('Costunpriced')`)
	for _, w := range layoutWidths {
		b.checkLayout(w)
		if got := b.eval(spendOverflow); got != "" {
			t.Errorf("at %d px the Spend card overflows: %s", w, got)
		}
	}
	b.noProblems()
}

// spendOverflow is the JavaScript that lists, joined by "; ", the Spend
// card's tables wider than their box ("" when none is).
const spendOverflow = `Array.from(document.querySelectorAll('.spend-tables table')).filter((t) => t.scrollWidth > t.parentElement.clientWidth)
  .map((t) => t.id + ' ' + t.scrollWidth + 'px in ' + t.parentElement.clientWidth + 'px').join('; ')`
