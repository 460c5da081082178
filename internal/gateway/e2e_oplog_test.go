package gateway_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
)

// logBuffer collects a gateway's JSON log lines.
type logBuffer struct{ syncBuffer }

// lines returns the lines logged so far, decoded.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// matching returns the lines with message msg whose attributes include want.
func matching(lines []map[string]any, msg string, want map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// waitLine polls the log (the summary is written by a background loop)
// until a line with msg and want appears, at most 5 s.
func waitLine(t *testing.T, b *logBuffer, msg string, want map[string]any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m := matching(b.lines(t), msg, want); len(m) > 0 {
			return m[len(m)-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q line with %v in the log:\n%s", msg, want, b.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the log, not timing an assertion
	}
}

// TestOperatorLog: a breaker opens and closes again, an upstream cools
// down after a 429 and recovers, requests fail over and, in a 429 storm,
// are refused: each writes the line an operator acts on, no line carries
// a secret, and the refused requests are one line per route and interval
// however many there were.
func TestOperatorLog(t *testing.T) {
	fc := clock.NewFake(limitsEpoch)
	logs := &logBuffer{}
	flaky, flakyURL := startMock(t, "flaky", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	limited, limitedURL := startMock(t, "limited", mock.Behavior{ForceStatus: http.StatusTooManyRequests})
	good, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 2})
	e := startGateway(t, spec{
		clock:  fc,
		logger: slog.New(slog.NewJSONHandler(logs, nil)),
		upstreams: []config.Upstream{
			upstreamAt("flaky", config.ProviderOpenAI, flakyURL, 0, "gpt-4o"),
			upstreamAt("limited", config.ProviderOpenAI, limitedURL, 0, "gpt-4o"),
			upstreamAt("good", config.ProviderOpenAI, goodURL, 1, "gpt-4o"),
		},
		edit: func(c *config.Config) {
			withAdmin(c)
			c.Circuit = config.Circuit{FailureThreshold: 2, Window: time.Minute, OpenDuration: 30 * time.Second,
				ProbeInterval: time.Second, SuccessThreshold: 1}
		},
	})
	send := func(wantStatus int) {
		t.Helper()
		if r := e.post(t, chatPath, limitsChatBody); r.status != wantStatus {
			t.Fatalf("status %d, want %d: %s", r.status, wantStatus, r.body)
		}
	}

	// Two requests fail over from tier 0: flaky's two 500s open its
	// breaker; limited's 429 starts a cooldown (Retry-After: 1).
	send(http.StatusOK)
	send(http.StatusOK)
	waitLine(t, logs, "breaker open", map[string]any{"upstream": "flaky", "to": "open", "level": "WARN"})
	cool := waitLine(t, logs, "upstream cooling down", map[string]any{"upstream": "limited", "level": "WARN"})
	if cool["duration"] != "1s" || cool["source"] != "retry-after" {
		t.Errorf("cooldown line %v, want 1s from retry-after", cool)
	}
	fc.Advance(gateway.RequestSummaryInterval)
	waitLine(t, logs, "requests failed over", map[string]any{"route": "gpt-4o", "count": float64(2)})
	waitLine(t, logs, "upstream cooldown over", map[string]any{"upstream": "limited", "lasted": "1s"})

	// Both recover: flaky's breaker half-opens after open_duration and a
	// success closes it.
	flaky.SetBehavior(mock.Behavior{CompletionTokens: 2})
	limited.SetBehavior(mock.Behavior{CompletionTokens: 2})
	fc.Advance(30 * time.Second)
	for i := 0; len(matching(logs.lines(t), "breaker closed", map[string]any{"upstream": "flaky"})) == 0; i++ {
		if i == 50 {
			t.Fatalf("flaky's breaker did not close after 50 requests:\n%s", logs.String())
		}
		send(http.StatusOK)
		fc.Advance(time.Second)
	}
	waitLine(t, logs, "breaker half_open", map[string]any{"upstream": "flaky", "from": "open"})

	// A 429 storm: every upstream answers 429, the requests are refused;
	// one summary line per route and interval holds them all.
	for _, m := range []*mock.Server{flaky, limited, good} {
		m.SetBehavior(mock.Behavior{ForceStatus: http.StatusTooManyRequests})
	}
	// One refused request, then the interval ends: its line shows that the
	// summary has been flushed (on the log's own goroutine) before the
	// storm starts, so the storm's requests all count in the next interval.
	send(http.StatusServiceUnavailable)
	fc.Advance(gateway.RequestSummaryInterval)
	waitLine(t, logs, "requests refused", map[string]any{"route": "gpt-4o", "count": float64(1)})
	before := len(matching(logs.lines(t), "requests refused", nil))
	const storm = 60
	for range storm {
		send(http.StatusServiceUnavailable)
	}
	fc.Advance(gateway.RequestSummaryInterval)
	refused := waitLine(t, logs, "requests refused", map[string]any{"route": "gpt-4o", "count": float64(storm)})
	if n := len(matching(logs.lines(t), "requests refused", nil)) - before; n != 1 {
		t.Errorf("%d refused-request lines for one interval of a storm, want 1", n)
	}
	if causes, _ := refused["causes"].(map[string]any); causes["no_upstream_available"] != float64(storm) {
		t.Errorf("refused causes %v, want %d × no_upstream_available", refused["causes"], storm)
	}
	if msg, _ := refused["last_error"].(string); !strings.Contains(msg, "good:") || !strings.Contains(msg, "limited:") {
		t.Errorf("last_error %q does not name the upstreams and why", msg)
	}

	// No secret in any line: not the upstreams' keys, not the client's,
	// not the admin token.
	text := logs.String()
	for _, secret := range []string{"sk-upstream-", testKey, adminToken} {
		if strings.Contains(text, secret) {
			t.Errorf("the log contains a secret (%q…)", secret[:6])
		}
	}
}

// TestAccessLog: with log.access each request is one line with its id,
// key, model, upstream, status, attempts, timings and tokens; without it,
// none.
func TestAccessLog(t *testing.T) {
	for _, access := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[access], func(t *testing.T) {
			logs := &logBuffer{}
			_, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 3})
			e := startGateway(t, spec{
				logger:    slog.New(slog.NewJSONHandler(logs, nil)),
				upstreams: []config.Upstream{upstreamAt("good", config.ProviderOpenAI, goodURL, 0, "gpt-4o")},
				edit:      func(c *config.Config) { c.Log.Access = access },
			})
			var ids []string
			for range 3 {
				r := e.post(t, chatPath, limitsChatBody)
				if r.status != http.StatusOK {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				ids = append(ids, r.header.Get("X-Request-Id"))
			}
			if access { // written once each answer is out: wait for the last
				waitLine(t, logs, "request", map[string]any{"id": ids[2]})
			}
			lines := matching(logs.lines(t), "request", nil)
			if !access {
				if len(lines) != 0 {
					t.Fatalf("%d access lines with log.access off", len(lines))
				}
				return
			}
			if len(lines) != 3 {
				t.Fatalf("%d access lines for 3 requests:\n%s", len(lines), logs.String())
			}
			for i, l := range lines {
				want := map[string]any{"id": ids[i], "key": "e2e", "model": "gpt-4o", "upstream": "good", "status": float64(200),
					"attempts": float64(1), "output_tokens": float64(3)}
				for k, v := range want {
					if l[k] != v {
						t.Errorf("line %d: %s = %v, want %v", i, k, l[k], v)
					}
				}
				if _, ok := l["latency_ms"].(float64); !ok {
					t.Errorf("line %d has no latency_ms: %v", i, l)
				}
				if _, ok := l["cost_usd"].(float64); !ok {
					t.Errorf("line %d has no cost_usd: %v", i, l)
				}
			}
			if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), "sk-upstream-") {
				t.Error("an access line carries a key")
			}
		})
	}
}
