package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"switchyard/internal/config"
)

// TestExhaustedErrorNamesEveryCandidate: when no upstream serves a
// request, the error, in the caller's protocol, names each upstream the
// key may reach with why it did not serve — failed (status), rate limited,
// left out by the plan (inactive, cooling down after a 429) — and a key
// restricted to some upstreams never learns the others' names.
func TestExhaustedErrorNamesEveryCandidate(t *testing.T) {
	protocols := []struct {
		name, provider, path, body string
		message                    func(t *testing.T, body []byte) string // the error message, checking the shape
	}{
		{"openai", config.ProviderOpenAI, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			func(t *testing.T, body []byte) string {
				var e struct {
					Error struct{ Message, Type, Code string }
				}
				if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Code == "" {
					t.Fatalf("not an OpenAI error: %s", body)
				}
				return e.Error.Message
			}},
		{"anthropic", config.ProviderAnthropic, "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			func(t *testing.T, body []byte) string {
				var e struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Message == "" {
					t.Fatalf("not an Anthropic error: %s", body)
				}
				return e.Error.Message
			}},
	}
	steps := []struct {
		name       string
		key        string
		wantStatus int
		want       []string // in the message, the first at its start
		notWant    []string
	}{
		{"every upstream tried or left out", "all", http.StatusBadGateway, []string{
			"all 2 upstream attempts failed: ",
			"broken: status 500", "limited: rate limited (429)", "off: skipped, inactive",
		}, nil},
		{"the 429 cools it down: left out with the reason", "all", http.StatusBadGateway, []string{
			"all 1 upstream attempts failed: ",
			"broken: status 500", "limited: skipped, rate limited (cooling down after 429)", "off: skipped, inactive",
		}, nil},
		{"a restricted key sees only its own upstreams", "team", http.StatusBadGateway, []string{
			"all 1 upstream attempts failed: ", "broken: status 500", "off: skipped, inactive",
		}, []string{"limited"}},
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			off := upstreamCfg("off", p.provider, deadURL(t), "m")
			off.Active = false
			keys := []config.Key{{Name: "all", Key: testKey}, {Name: "team", Key: "sk-team", AllowedUpstreams: []string{"broken", "off"}}}
			f := newFixture(t, []config.Upstream{
				upstreamCfg("broken", p.provider, upstreamServer(t, status(500)), "m"),
				upstreamCfg("limited", p.provider, upstreamServer(t, status(429)), "m"),
				off,
			}, fixtureOpts{keys: keys})
			for _, s := range steps {
				t.Run(s.name, func(t *testing.T) {
					key := testKey
					if s.key == "team" {
						key = "sk-team"
					}
					resp := f.post(p.path, p.body, "Authorization", "Bearer "+key, "X-Api-Key", key)
					body := readAll(t, resp)
					if resp.StatusCode != s.wantStatus {
						t.Fatalf("status %d, want %d: %s", resp.StatusCode, s.wantStatus, body)
					}
					msg := p.message(t, []byte(body))
					if !strings.HasPrefix(msg, s.want[0]) {
						t.Errorf("message %q does not start with %q", msg, s.want[0])
					}
					for _, w := range s.want[1:] {
						if !strings.Contains(msg, w) {
							t.Errorf("message %q lacks %q", msg, w)
						}
					}
					for _, w := range s.notWant {
						if strings.Contains(msg, w) {
							t.Errorf("message %q names %q, which the key may not reach", msg, w)
						}
					}
				})
			}
		})
	}
}
