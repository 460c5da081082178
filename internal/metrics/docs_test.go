package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// recordAll records through every method so that every family has a series.
func recordAll(m *Metrics) {
	m.Request("openai-main", "gpt-4o", 200, true, time.Second)
	m.Attempt("openai-main", OutcomeSuccess)
	m.Retry("gpt-4o")
	m.Hedge("gpt-4o", HedgeWon)
	m.ClientDisconnect()
	m.UpstreamError("openai-main", ErrorTimeout)
	m.RateLimited("openai-main", LimitRequests)
	m.TTFT("openai-main", time.Second)
	m.Tokens("openai-main", "gpt-4o", 1, 1, 0, 0)
	m.Cost("openai-main", "gpt-4o", "k", 1)
	m.Spend("openai-main", "k", 1)
	m.Selection("gpt-4o", "openai-main")
	m.Affinity(AffinityHit)
	m.SetStateSource(fakeSource{{Name: "openai-main"}})
	m.Shared().Enable()
	m.Shared().RedisUp(false)
	m.Shared().Fallback("admit")
	m.Shared().RoundTrip("admit")
}

// families returns the switchyard_ families the registry holds after recordAll.
func families(t *testing.T) map[string]string {
	t.Helper()
	m := newTest(t)
	recordAll(m)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "switchyard_") {
			out[f.GetName()] = strings.ToLower(f.GetType().String())
		}
	}
	if len(out) != 22 {
		t.Fatalf("got %d switchyard_ families, want 22: %v", len(out), out)
	}
	return out
}

// TestDocsListEveryMetric checks that docs/metrics.md has a row for every
// family, with its type.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range families(t) {
		row := "| `" + name + "` | " + typ + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/metrics.md lacks the row %q", row)
		}
	}
}

// TestDashboard checks that docs/grafana-dashboard.json is valid JSON with a
// Prometheus data source variable, and that every metric it queries exists.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		SchemaVersion int `json:"schemaVersion"`
		Templating    struct {
			List []struct{ Name, Type, Query any } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	if dash.SchemaVersion < 36 {
		t.Errorf("schemaVersion = %d", dash.SchemaVersion)
	}
	hasDS := false
	for _, v := range dash.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error("no Prometheus data source variable")
	}

	fams := families(t)
	metricRe := regexp.MustCompile(`switchyard_[a-z_]+`)
	used, ids := map[string]bool{}, map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeated", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metricRe.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
				if _, ok := fams[base]; !ok {
					t.Errorf("panel %q queries unknown metric %s", p.Title, name)
				}
				used[base] = true
			}
		}
	}
	for _, name := range []string{
		"switchyard_requests_total", "switchyard_request_duration_seconds", "switchyard_ttft_seconds",
		"switchyard_upstream_errors_total", "switchyard_rate_limited_total", "switchyard_upstream_breaker_state",
		"switchyard_upstream_in_flight", "switchyard_upstream_queue_depth", "switchyard_tokens_total",
		"switchyard_spend_usd_total",
	} {
		if !used[name] {
			t.Errorf("dashboard does not chart %s", name)
		}
	}
}
