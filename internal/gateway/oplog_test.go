package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/store"
)

// TestSummaryBoundsRoutes: refused requests over many routes in one
// interval are at most maxSummaryRoutes lines for the busiest routes and
// one line summing up the rest; a request refused before its model was
// read, or for a model nothing serves, is summed under "(unknown model)"
// without its message (the name is the client's own string).
func TestSummaryBoundsRoutes(t *testing.T) {
	tests := []struct {
		name      string
		routes    int
		wantLines int
		wantOther string // the route of the summing line; "" for none
	}{
		{"a few routes", 3, 3, ""},
		{"exactly the bound", maxSummaryRoutes, maxSummaryRoutes, ""},
		{"many routes", 500, maxSummaryRoutes + 1, "(480 other routes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := newOpLog(slog.New(slog.NewJSONHandler(&buf, nil)), clock.NewFake(time.Unix(0, 0)), false)
			total := 0
			for i := range tt.routes {
				for range i + 1 { // route i gets i+1 refusals: the busiest are the last
					o.request(&store.RequestLog{Model: fmt.Sprintf("m%03d", i), Status: 404, ErrorClass: "model_not_found"})
					total++
				}
			}
			o.flush()
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != tt.wantLines {
				t.Fatalf("%d lines, want %d", len(lines), tt.wantLines)
			}
			sum := 0
			for _, l := range lines {
				var m struct {
					Route string
					Count int
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				sum += m.Count
				if tt.wantOther == "" && strings.Contains(m.Route, "other") {
					t.Errorf("a summing line %q under the bound", m.Route)
				}
			}
			if sum != total {
				t.Errorf("the lines count %d refusals, want %d", sum, total)
			}
			if tt.wantOther != "" && !strings.Contains(lines[len(lines)-1], `"route":"`+tt.wantOther+`"`) {
				t.Errorf("last line %s, want the route %q", lines[len(lines)-1], tt.wantOther)
			}
			if tt.routes == 500 && !strings.Contains(buf.String(), `"route":"m499"`) {
				t.Error("the busiest route has no line of its own")
			}
		})
	}
	t.Run("unknown model", func(t *testing.T) {
		var buf bytes.Buffer
		o := newOpLog(slog.New(slog.NewJSONHandler(&buf, nil)), clock.NewFake(time.Unix(0, 0)), false)
		o.serves = func(m string) bool { return m == "gpt-4o" }
		o.request(&store.RequestLog{Status: 401, ErrorClass: "invalid_api_key"})
		o.request(&store.RequestLog{Model: "SECRET-PROMPT", Status: 404, ErrorClass: "model_not_found", Error: `no upstream serves model "SECRET-PROMPT"`})
		o.request(&store.RequestLog{Model: "gpt-4o", Status: 200, Attempts: 1}) // served at once: not summed
		o.flush()
		s := buf.String()
		if strings.Count(s, "\n") != 1 || !strings.Contains(s, `"route":"(unknown model)","count":2`) || strings.Contains(s, "SECRET") {
			t.Errorf("log %s, want one line for (unknown model) counting 2, without the client's model name", s)
		}
	})
}
