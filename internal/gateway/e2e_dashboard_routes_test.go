package gateway_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// routeShareTolerance is how far, in percentage points, a share the page
// shows may be from the share the weights configure. Smooth weighted round
// robin makes the split exact up to one request per route (0.4 points of
// 250); the rest is the page's rounding to whole percents.
const routeShareTolerance = 5

// routeRow is one upstream row of a route table on the page.
type routeRow struct {
	Model, Upstream         string
	Tier                    int
	Actual, Configured, Att int
}

// TestDashboardRoutesInBrowser: two models in one tier share an upstream.
// gpt-4o runs on x (weight 3) and y (2), gpt-4o-mini on x and z (1), both
// with smooth-wrr; w, in tier 1, serves gpt-4o and takes nothing. Over the
// tier as a whole x would be configured 50%, y 33% and z 17%, and x would
// have taken 55% of the attempts. After 500 requests, 250 per model, the
// page shows each route's tier-0 shares summing to 100% (±1 for rounding)
// and each within routeShareTolerance of its weight over that model's
// weights: 60/40 for gpt-4o, 75/25 for gpt-4o-mini; w under gpt-4o only, at
// 0% of an idle tier configured 100%. Each route's chart starts where its
// data starts (seconds ago), not at the −5 min edge.
func TestDashboardRoutesInBrowser(t *testing.T) {
	b := newBrowser(t, 90*time.Second)
	const modelA, modelB = "gpt-4o", "gpt-4o-mini"
	var ups []config.Upstream
	for _, u := range []struct {
		name   string
		tier   int
		weight int
		models []string
	}{
		{"x", 0, 3, []string{modelA, modelB}},
		{"y", 0, 2, []string{modelA}},
		{"z", 0, 1, []string{modelB}},
		{"w", 1, 1, []string{modelA}},
	} {
		_, url := startMock(t, u.name, mock.Behavior{Latency: 5 * time.Millisecond})
		up := upstreamAt(u.name, config.ProviderOpenAI, url, u.tier, u.models...)
		up.Weight = u.weight
		ups = append(ups, up)
	}
	e := startGateway(t, spec{upstreams: ups, edit: func(c *config.Config) {
		withAdmin(c)
		for _, m := range []string{modelA, modelB} {
			r := config.Route{Model: m, RouteSettings: c.Defaults}
			r.Strategy = config.StrategySmoothWRR
			c.Routes = append(c.Routes, r)
		}
	}})

	// 500 requests, alternating the models, four at a time.
	served := map[string]map[string]int{modelA: {}, modelB: {}} // model → upstream → answers
	var mu sync.Mutex
	var failed []string
	work := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for model := range work {
				r := <-e.goPost(`{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`)
				mu.Lock()
				if r.status != http.StatusOK {
					failed = append(failed, fmt.Sprintf("%d %s", r.status, r.body))
				}
				served[model][r.header.Get("X-Switchyard-Upstream")]++
				mu.Unlock()
			}
		}()
	}
	for i := range 500 {
		work <- []string{modelA, modelB}[i%2]
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of 500 requests failed, first: %s", len(failed), failed[0])
	}
	t.Logf("served: %v", served)

	b.signIn(e.URL)
	b.wait("both routes count their 250 attempts", `(() => {
		const sum = (m) => Array.from(document.querySelectorAll('#routes tr[data-model="' + m + '"] .attempts')).reduce((s, td) => s + Number(td.textContent), 0);
		return sum('`+modelA+`') === 250 && sum('`+modelB+`') === 250;
	})()`)
	var rows []routeRow
	raw := b.eval(`JSON.stringify(Array.from(document.querySelectorAll('#routes .route')).flatMap((r) => {
		let tier = -1;
		return Array.from(r.querySelectorAll('tbody tr')).flatMap((tr) => {
			if (tr.classList.contains('tier')) { tier = Number(tr.dataset.tier); return []; }
			const pct = (sel) => parseInt(tr.querySelector(sel).textContent, 10);
			return [{Model: r.dataset.model, Upstream: tr.dataset.upstream, Tier: tier,
				Actual: pct('.share-actual'), Configured: pct('.share-configured'), Att: Number(tr.querySelector('.attempts').textContent)}];
		});
	}))`)
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		t.Fatalf("reading the route tables %s: %v", raw, err)
	}
	var layout []string
	for _, r := range rows {
		layout = append(layout, r.Model+"/"+strconv.Itoa(r.Tier)+"/"+r.Upstream)
	}
	if got, want := strings.Join(layout, " "), "gpt-4o/0/x gpt-4o/0/y gpt-4o/1/w gpt-4o-mini/0/x gpt-4o-mini/0/z"; got != want {
		t.Fatalf("route rows %q, want %q (each model's upstreams by tier, then name)", got, want)
	}
	// What each model's weights configure, in percent of its tier.
	configured := map[string]float64{
		"gpt-4o/0/x": 60, "gpt-4o/0/y": 40, "gpt-4o/1/w": 100,
		"gpt-4o-mini/0/x": 75, "gpt-4o-mini/0/z": 25,
	}
	sums := map[string]int{}
	for i, r := range rows {
		want := configured[layout[i]]
		if math.Abs(float64(r.Configured)-want) > 0.5 {
			t.Errorf("%s: configured %d%%, want %.0f%% (its weight over that model's tier)", layout[i], r.Configured, want)
		}
		if r.Tier == 1 {
			if r.Att != 0 || r.Actual != 0 {
				t.Errorf("%s: %d attempts, %d%%; want 0 and 0%% in the idle tier", layout[i], r.Att, r.Actual)
			}
			continue
		}
		if d := math.Abs(float64(r.Actual) - want); d > routeShareTolerance {
			t.Errorf("%s: actual %d%%, configured %.0f%%: %.0f points apart, more than %d", layout[i], r.Actual, want, d, routeShareTolerance)
		}
		if r.Att != served[r.Model][r.Upstream] {
			t.Errorf("%s: %d attempts shown, %d answers counted by the client", layout[i], r.Att, served[r.Model][r.Upstream])
		}
		sums[r.Model] += r.Actual
	}
	for _, m := range []string{modelA, modelB} {
		if s := sums[m]; s < 99 || s > 101 {
			t.Errorf("%s: tier 0's shares add up to %d%%, want 100 ± 1", m, s)
		}
	}

	// Each route's chart: its lines start where its data starts, seconds
	// ago at the right end of the 5-minute axis, not at its left edge.
	b.wait("each route's chart has lines", `Array.from(document.querySelectorAll('#routes .route')).every((r) => r.querySelector('svg polyline'))`)
	var starts map[string][]string
	raw = b.eval(`JSON.stringify(Object.fromEntries(Array.from(document.querySelectorAll('#routes .route')).map((r) => {
		const svg = r.querySelector('svg');
		const w = svg.viewBox.baseVal.width;
		return [r.dataset.model, Array.from(svg.querySelectorAll('polyline, circle')).map((l) =>
			l.dataset.upstream + ':' + ((l.points ? l.points[0].x : l.cx.baseVal.value) / w).toFixed(2))];
	})))`)
	if err := json.Unmarshal([]byte(raw), &starts); err != nil {
		t.Fatalf("reading the charts %s: %v", raw, err)
	}
	for _, m := range []string{modelA, modelB} {
		var drawn []string
		for _, s := range starts[m] {
			name, x, _ := strings.Cut(s, ":")
			drawn = append(drawn, name)
			if f, err := strconv.ParseFloat(x, 64); err != nil || f < 0.5 {
				t.Errorf("%s's chart: %s's line starts at %s of the width, want the right half (its data is seconds old)", m, name, x)
			}
		}
		sort.Strings(drawn)
		if want := map[string]string{modelA: "x y", modelB: "x z"}[m]; !strings.Contains(strings.Join(drawn, " "), want) {
			t.Errorf("%s's chart draws %v, want at least %s", m, drawn, want)
		}
	}
	b.noProblems()
}

// TestAdminStateRoutes: through the real server, /state groups attempts by
// the client model requested: a `claude-*` upstream shows under each model
// asked for (never under the pattern), beside a concrete one under the
// model they share; ?history= steps add up to the window's attempts once
// their seconds are over.
func TestAdminStateRoutes(t *testing.T) {
	clk := &shiftClock{}
	_, globURL := startMock(t, "glob", mock.Behavior{})
	_, haikuURL := startMock(t, "haiku", mock.Behavior{})
	glob := upstreamAt("glob", config.ProviderOpenAI, globURL, 0, "claude-*")
	haiku := upstreamAt("haiku", config.ProviderOpenAI, haikuURL, 0, "claude-3-5-haiku")
	glob.Weight, haiku.Weight = 1, 3
	e := startGateway(t, spec{upstreams: []config.Upstream{glob, haiku}, clock: clk, edit: withAdmin})
	for i := range 12 {
		model := "claude-3-5-haiku"
		if i%3 == 0 {
			model = "claude-3-opus"
		}
		if r := e.post(t, chatPath, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`); r.status != http.StatusOK {
			t.Fatalf("%s: status %d %s", model, r.status, r.body)
		}
	}
	clk.Skip(2 * time.Second) // the seconds of the requests are over: in the history

	var st struct {
		Upstreams []struct {
			Name   string `json:"name"`
			Models []struct {
				Model      string `json:"model"`
				Requests5m int64  `json:"requests_5m"`
			} `json:"models"`
		} `json:"upstreams"`
		Routes []struct {
			Model      string `json:"model"`
			Requests5m int64  `json:"requests_5m"`
			Tiers      []struct {
				Tier      int `json:"tier"`
				Weight    int `json:"weight"`
				Upstreams []struct {
					Name            string  `json:"name"`
					Requests5m      int64   `json:"requests_5m"`
					Share           float64 `json:"share"`
					ConfiguredShare float64 `json:"configured_share"`
					History         []int64 `json:"history"`
				} `json:"upstreams"`
			} `json:"tiers"`
		} `json:"routes"`
		HistoryStepSeconds int `json:"history_step_seconds"`
	}
	r := e.mustAdmin(t, "GET", "/state?history=1s", "", http.StatusOK)
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, route := range st.Routes {
		var shares float64
		for _, tier := range route.Tiers {
			for _, u := range tier.Upstreams {
				var inHistory int64
				for _, n := range u.History {
					inHistory += n
				}
				if inHistory != u.Requests5m {
					t.Errorf("%s/%s: history %v adds up to %d, want its %d attempts", route.Model, u.Name, u.History, inHistory, u.Requests5m)
				}
				shares += u.Share
				got = append(got, fmt.Sprintf("%s/%d/%s %.2f", route.Model, tier.Tier, u.Name, u.ConfiguredShare))
			}
		}
		if math.Abs(shares-1) > 1e-9 {
			t.Errorf("%s: shares add up to %v", route.Model, shares)
		}
	}
	if want := "claude-3-5-haiku/0/glob 0.25 claude-3-5-haiku/0/haiku 0.75 claude-3-opus/0/glob 1.00"; strings.Join(got, " ") != want {
		t.Fatalf("routes %q, want %q\n%s", strings.Join(got, " "), want, r.body)
	}
	if st.Routes[0].Requests5m != 8 || st.Routes[1].Requests5m != 4 || st.HistoryStepSeconds != 1 {
		t.Fatalf("attempts haiku %d opus %d, step %d; want 8, 4, 1", st.Routes[0].Requests5m, st.Routes[1].Requests5m, st.HistoryStepSeconds)
	}
	for _, u := range st.Upstreams {
		// (glob's claude-3-5-haiku attempts are weighted-random, maybe 0.)
		if n := len(u.Models); u.Name == "glob" && (n == 0 || u.Models[n-1].Model != "claude-3-opus" || u.Models[n-1].Requests5m != 4) {
			t.Fatalf("glob's models %+v, want claude-3-opus (4) last", u.Models)
		}
	}
}
