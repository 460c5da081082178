package sim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"switchyard/internal/health"
	"switchyard/internal/outcome"
)

// testReport is a small hand-filled report: two upstreams, four buckets.
func testReport() *Report {
	sc := &Scenario{Name: "test <&> chart", Duration: 4 * time.Minute, Bucket: time.Minute}
	ups := []*upstreamSim{{idx: 0}, {idx: 1}}
	rec := newRecorder(sc, ups)
	for b := range 4 {
		at := time.Duration(b) * time.Minute
		for range 3 {
			rec.attempt(0, at, outcome.Success)
		}
		rec.attempt(1, at, outcome.RateLimited)
		rec.attempt(1, at, outcome.ServerError)
		rec.lat[b] = []float32{800, 1200, 3000}
		rec.ttft[b] = []float32{300}
	}
	rec.breaker(1, 90*time.Second, health.Open)
	rec.breaker(1, 150*time.Second, health.HalfOpen)
	rec.breaker(1, 151*time.Second, health.Closed)
	return &Report{
		sc: sc, rec: rec, names: []string{"alpha", "beta"},
		Summary: Summary{Scenario: sc.Name, Upstreams: []UpstreamSummary{
			{Name: "alpha", Weight: 3, ConfiguredShare: 0.6}, {Name: "beta", Weight: 2, ConfiguredShare: 0.4},
		}},
	}
}

// wellFormed parses doc as XML to the end and returns its text content.
func wellFormed(t *testing.T, doc []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var text strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = v.Name.Local
			}
		case xml.CharData:
			text.Write(v)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return text.String()
}

func TestCharts(t *testing.T) {
	rp := testReport()
	tests := []struct {
		name  string
		chart func() []byte
		want  []string // text the chart must show: title, axis titles, ticks, legend
	}{
		{"share", rp.shareChart, []string{"test <&> chart: traffic share per upstream", "time (minutes)", "share of upstream attempts (%)", "100", "alpha (w 3)", "beta (w 2)", "configured split"}},
		{"latency", rp.latencyChart, []string{"latency percentiles", "time (minutes)", "latency (seconds)", "latency p50", "latency p95", "latency p99", "TTFT p95 (streams)"}},
		{"errors", rp.errorsChart, []string{"429s and errors", "time (minutes)", "per minute", "alpha", "beta", "429s (solid)", "5xx/timeouts (dashed)", "client-visible errors"}},
		{"breakers", rp.breakerChart, []string{"circuit breaker state", "time (minutes)", "alpha", "beta", "closed", "open", "half-open"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.chart()
			text := wellFormed(t, doc)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("chart text lacks %q:\n%s", w, text)
				}
			}
			for _, tick := range []string{"0", "1", "2", "3", "4"} { // minutes
				if !strings.Contains(text, "\n"+tick+"\n") {
					t.Errorf("no x tick %q", tick)
				}
			}
			if !bytes.Equal(doc, tc.chart()) {
				t.Error("two renderings differ")
			}
		})
	}
	t.Run("breaker timeline colours the open period", func(t *testing.T) {
		doc := string(rp.breakerChart())
		if strings.Count(doc, colourOpen) != 2 || !strings.Contains(doc, colourHalfOpen) {
			t.Errorf("want one open segment (and its legend swatch) and a half-open one:\n%s", doc)
		}
	})
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		max  float64
		n    int
		step float64
		top  float64
	}{
		{60, 10, 10, 60},
		{100, 5, 20, 100},
		{23.4, 5, 5, 25},
		{0.37, 5, 0.1, 0.4},
		{1, 5, 0.2, 1},
		{7, 5, 2, 8},
		{0, 5, 1, 1},
	}
	for _, tc := range tests {
		if got := niceStep(tc.max, tc.n); got != tc.step {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tc.max, tc.n, got, tc.step)
		}
		if got := niceMax(tc.max, tc.n); got != tc.top {
			t.Errorf("niceMax(%v, %d) = %v, want %v", tc.max, tc.n, got, tc.top)
		}
	}
}
