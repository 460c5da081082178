package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/proxy"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDecisionsAreLoggedKeptAndExplained(t *testing.T) {
	_, urlA := startMock(t, "a", mock.Behavior{})
	_, urlB := startMock(t, "b", mock.Behavior{})
	var logs syncBuffer
	e := startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("up-a", config.ProviderOpenAI, urlA, 0, "gpt-4o"),
			upstreamAt("up-b", config.ProviderOpenAI, urlB, 1, "gpt-4o"),
		},
		logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	var ids []string
	for i := 0; i < 3; i++ {
		r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`)
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		ids = append(ids, r.header.Get("X-Request-Id"))
	}

	// log.level debug: one JSON line per decision.
	var logged []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Msg      string `json:"msg"`
			Decision struct {
				RequestID string   `json:"request_id"`
				Order     []string `json:"order"`
				Chosen    string   `json:"chosen"`
			} `json:"decision"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if rec.Msg != "routing decision" {
			continue
		}
		if rec.Decision.Chosen != "up-a" || strings.Join(rec.Decision.Order, ",") != "up-a,up-b" {
			t.Fatalf("logged decision %+v", rec.Decision)
		}
		logged = append(logged, rec.Decision.RequestID)
	}
	if strings.Join(logged, ",") != strings.Join(ids, ",") {
		t.Fatalf("logged decisions for %v, want %v", logged, ids)
	}

	// The ring keeps them, newest first.
	recent := e.G.RecentDecisions(2)
	if len(recent) != 2 || recent[0].RequestID != ids[2] || recent[1].RequestID != ids[1] {
		t.Fatalf("recent decisions %d, first %q", len(recent), recent[0].RequestID)
	}

	// A dry run sends nothing.
	d, err := e.G.Explain(context.Background(), proxy.ExplainRequest{Model: "gpt-4o", Session: "s"})
	if err != nil || d.Chosen != "up-a" || d.Session != "s" {
		t.Fatalf("explain %+v %v", d, err)
	}
	if n := len(e.G.RecentDecisions(0)); n != 3 {
		t.Fatalf("explain was recorded as traffic: %d decisions", n)
	}
}
