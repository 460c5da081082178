package proxy

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// TestParsePreferences checks every field and that a malformed one is
// named.
func TestParsePreferences(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		raw     string
		want    balancer.Preferences
		wantErr string // substring of the message
	}{
		{raw: `{}`},
		{raw: `{"order":["a","bedrock"],"only":["x"],"ignore":["y"],"allow_fallbacks":false,"sort":"latency","max_price":{"prompt":1,"completion":4.5}}`,
			want: balancer.Preferences{Order: []string{"a", "bedrock"}, Only: []string{"x"}, Ignore: []string{"y"}, NoFallbacks: true,
				Sort: "latency", MaxPrice: true, MaxPrompt: 1, MaxCompletion: 4.5}},
		{raw: `{"allow_fallbacks":true,"sort":null}`},
		{raw: `{"max_price":{"completion":2}}`, want: balancer.Preferences{MaxPrice: true, MaxPrompt: inf, MaxCompletion: 2}},
		{raw: `[]`, wantErr: "provider must be a JSON object"},
		{raw: `{"sort":"fastest"}`, wantErr: `provider.sort must be one of price, latency, throughput, not "fastest"`},
		{raw: `{"sort":3}`, wantErr: "provider.sort must be one of"},
		{raw: `{"order":"a"}`, wantErr: "provider.order must be a list"},
		{raw: `{"only":["a",2]}`, wantErr: "provider.only[1] must be a non-empty string"},
		{raw: `{"ignore":[""]}`, wantErr: "provider.ignore[0] must be a non-empty string"},
		{raw: `{"allow_fallbacks":"no"}`, wantErr: "provider.allow_fallbacks must be a boolean"},
		{raw: `{"max_price":{"prompt":-1}}`, wantErr: "provider.max_price.prompt must be a number ≥ 0"},
		{raw: `{"max_price":{"completion":"1"}}`, wantErr: "provider.max_price.completion must be a number ≥ 0"},
		{raw: `{"max_price":{"request":1}}`, wantErr: "provider.max_price.request is not known"},
		{raw: `{"max_price":5}`, wantErr: "provider.max_price must be an object"},
		{raw: `{"quantizations":["fp8"]}`, wantErr: "provider.quantizations is not a known preference"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := parsePreferences(gjson.Parse(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if e, ok := err.(*apiError); !ok || e.status != 400 {
					t.Fatalf("err %T %v, want a 400 apiError", err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !slices.Equal(got.Order, tt.want.Order) || !slices.Equal(got.Only, tt.want.Only) || !slices.Equal(got.Ignore, tt.want.Ignore) ||
				got.NoFallbacks != tt.want.NoFallbacks || got.Sort != tt.want.Sort || got.MaxPrice != tt.want.MaxPrice ||
				got.MaxPrice && (got.MaxPrompt != tt.want.MaxPrompt || got.MaxCompletion != tt.want.MaxCompletion) {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// bodyRecorder is an upstream answering chat completions that records the
// bodies it receives.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies []string
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, string(raw))
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":30,"total_tokens":37}}`)
}

func (b *bodyRecorder) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.bodies) == 0 {
		return ""
	}
	return b.bodies[len(b.bodies)-1]
}

// TestPreferencesThroughProxy sends preferences through the proxy: the
// chosen upstream, the provider field stripped before it goes upstream, the
// errors and their codes.
func TestPreferencesThroughProxy(t *testing.T) {
	cheap, dear := &bodyRecorder{}, &bodyRecorder{}
	cu := upstreamCfg("cheap", config.ProviderOpenAI, upstreamServer(t, cheap), "gpt-4o")
	cu.Price = config.Price{InputPerMTok: 0.5, OutputPerMTok: 1}
	du := upstreamCfg("dear", config.ProviderOpenAI, upstreamServer(t, dear), "gpt-4o")
	du.Price = config.Price{InputPerMTok: 5, OutputPerMTok: 15}
	allowed, denied := config.DefaultKey(), config.DefaultKey()
	allowed.Name, allowed.Key = "test", testKey
	denied.Name, denied.Key, denied.Preferences = "strict", "sk-strict-key-0123456789", false
	f := newFixture(t, []config.Upstream{cu, du}, fixtureOpts{keys: []config.Key{allowed, denied}})

	withProvider := func(p string) string {
		return `{"model":"gpt-4o","provider":` + p + `,"messages":[{"role":"user","content":"hello"}]}`
	}
	tests := []struct {
		name     string
		body     string
		hdr      []string
		want     int
		upstream string // the X-Switchyard-Upstream that answered
		code     string // error code
		msg      string // substring of the error message
	}{
		{name: "sort price", body: withProvider(`{"sort":"price"}`), want: 200, upstream: "cheap"},
		{name: "order", body: withProvider(`{"order":["dear"]}`), want: 200, upstream: "dear"},
		{name: "only by provider name", body: withProvider(`{"only":["openai"],"ignore":["cheap"]}`), want: 200, upstream: "dear"},
		{name: "header form", body: chatBody, hdr: []string{"X-Switchyard-Provider", `{"ignore":["dear"]}`}, want: 200, upstream: "cheap"},
		{name: "max_price leaves nothing", body: withProvider(`{"max_price":{"prompt":0.1}}`), want: 400, code: "no_upstream_matches_preferences",
			msg: "cheap (preferences: over max_price), dear (preferences: over max_price)"},
		{name: "malformed", body: withProvider(`{"sort":"cheapest"}`), want: 400, code: "invalid_request", msg: "provider.sort"},
		{name: "malformed header", body: chatBody, hdr: []string{"X-Switchyard-Provider", `{"order":`}, want: 400, code: "invalid_request",
			msg: "X-Switchyard-Provider: provider is not valid JSON"},
		{name: "both forms", body: withProvider(`{}`), hdr: []string{"X-Switchyard-Provider", `{}`}, want: 400, code: "invalid_request", msg: "given twice"},
		{name: "key without preferences", body: withProvider(`{"sort":"price"}`), hdr: []string{"Authorization", "Bearer sk-strict-key-0123456789"},
			want: 403, code: "preferences_not_allowed"},
		{name: "key without preferences, none sent", body: chatBody, hdr: []string{"Authorization", "Bearer sk-strict-key-0123456789"}, want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post("/v1/chat/completions", tt.body, tt.hdr...)
			body := readAll(t, resp)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.upstream != "" && resp.Header.Get("X-Switchyard-Upstream") != tt.upstream {
				t.Errorf("served by %q, want %q", resp.Header.Get("X-Switchyard-Upstream"), tt.upstream)
			}
			if tt.code != "" {
				var e struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tt.code || !strings.Contains(e.Error.Message, tt.msg) {
					t.Errorf("error %s, want code %s with %q", body, tt.code, tt.msg)
				}
			}
		})
	}
	for _, r := range []*bodyRecorder{cheap, dear} {
		if b := r.last(); b == "" || gjson.Get(b, "provider").Exists() || !gjson.Get(b, "messages").Exists() {
			t.Errorf("upstream received %s, want the body without provider", b)
		}
	}
}

// TestOutputEWMA checks the route's output moving average.
func TestOutputEWMA(t *testing.T) {
	var e outputEWMA
	for _, tt := range []struct {
		out  int64
		want float64
	}{{0, 0}, {100, 100}, {-5, 100}, {200, 130}, {130, 130}} {
		e.observe(tt.out)
		if got := e.value(); math.Abs(got-tt.want) > 1e-9 {
			t.Fatalf("after %d: %v, want %v", tt.out, got, tt.want)
		}
	}
	var nilEWMA *outputEWMA
	nilEWMA.observe(5)
	if nilEWMA.value() != 0 {
		t.Error("nil EWMA has a value")
	}
}

// TestNoFallbacksSkipsFallbackModels: allow_fallbacks false keeps the
// request on the first candidate of its own model: a failure is the answer,
// neither another upstream nor the route's fallback model is tried.
func TestNoFallbacksSkipsFallbackModels(t *testing.T) {
	var mainHits, otherHits, fbHits atomic.Int64
	main := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mainHits.Add(1)
		status(503)(w, r)
	})
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		status(503)(w, r)
	})
	key := config.DefaultKey()
	key.Name, key.Key = "test", testKey
	routes := []config.Route{{Model: "gpt-4o", FallbackModels: []string{"gpt-4o-mini"}}}
	big := upstreamCfg("big", config.ProviderOpenAI, upstreamServer(t, main), "gpt-4o")
	big.Priority = 0
	other2 := upstreamCfg("other", config.ProviderOpenAI, upstreamServer(t, other), "gpt-4o")
	other2.Priority = 1
	f := newFixture(t, []config.Upstream{big, other2,
		upstreamCfg("small", config.ProviderOpenAI, upstreamServer(t, chatOK(&fbHits)), "gpt-4o-mini"),
	}, fixtureOpts{routes: routes, keys: []config.Key{key}})
	for _, tt := range []struct {
		prefs                  string
		status                 int
		main, other, fallbacks int64
	}{
		{`{"allow_fallbacks":false}`, 502, 1, 0, 0},
		{`{"allow_fallbacks":true}`, 200, 1, 1, 1},
	} {
		mainHits.Store(0)
		otherHits.Store(0)
		fbHits.Store(0)
		resp := f.post("/v1/chat/completions", `{"model":"gpt-4o","provider":`+tt.prefs+`,"messages":[{"role":"user","content":"hello"}]}`)
		if body := readAll(t, resp); resp.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d: %s", tt.prefs, resp.StatusCode, tt.status, body)
		}
		if mainHits.Load() != tt.main || otherHits.Load() != tt.other || fbHits.Load() != tt.fallbacks {
			t.Errorf("%s: hits big %d other %d fallback %d, want %d %d %d", tt.prefs, mainHits.Load(), otherHits.Load(), fbHits.Load(),
				tt.main, tt.other, tt.fallbacks)
		}
	}
}

// BenchmarkPreferences measures what preferences cost a request: absent
// (one header lookup), in the body (parse, and the field cut from the
// body) and in the header (parse).
func BenchmarkPreferences(b *testing.B) {
	key := &clientKey{cfg: config.DefaultKey()}
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hello, how are you today?"}],"max_tokens":64}`)
	withField := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hello, how are you today?"}],"max_tokens":64,"provider":{"sort":"price","ignore":["u0"]}}`)
	hdr := http.Header{"Authorization": {"Bearer k"}, "Content-Type": {"application/json"}, "User-Agent": {"bench"}}
	withHdr := hdr.Clone()
	withHdr.Set(headerProvider, `{"sort":"price","ignore":["u0"]}`)
	for _, bc := range []struct {
		name string
		body []byte
		hdr  http.Header
		raw  string
	}{
		{"absent", body, hdr, ""},
		{"body", withField, hdr, `{"sort":"price","ignore":["u0"]}`},
		{"header", body, withHdr, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := &http.Request{Header: bc.hdr}
			b.ReportAllocs()
			for b.Loop() {
				q := request{r: r, key: key, body: bc.body, prefsRaw: bc.raw}
				if err := q.preferences(); err != nil || (q.prefs == nil) != (bc.name == "absent") {
					b.Fatalf("prefs %v, err %v", q.prefs, err)
				}
			}
		})
	}
}
