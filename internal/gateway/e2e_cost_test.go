package gateway_test

import (
	"bufio"
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/store"
)

// costPrice is the price of "gpt-4o" on the priced upstream of the cost
// tests: cache reads at a tenth of the input price.
var costPrice = config.Price{InputPerMTok: 2.5, OutputPerMTok: 10, CacheReadPerMTok: 0.25}

// wantCost is usage × costPrice per million tokens, written out by hand.
func wantCost(in, out, cacheRead int64) float64 {
	return (float64(in-cacheRead)*2.5 + float64(cacheRead)*0.25 + float64(out)*10) / 1e6
}

// closeCost reports whether got is want up to float rounding.
func closeCost(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Max(1, want) }

// longChat is a chat body whose prompt is long enough (≥ 1024 tokens) for
// the mock to report part of it read from the prompt cache.
func longChat(model string, stream bool, extra string) string {
	prompt := strings.Repeat("The quarterly report covers revenue, costs and outlook. ", 120)
	return `{"model":"` + model + `","stream":` + strconv.FormatBool(stream) + extra +
		`,"messages":[{"role":"system","content":"` + prompt + `"},{"role":"user","content":"Summarise."}]}`
}

// TestCostOfEachRequest: a non-streamed answer's X-Switchyard-Cost is its
// usage, cache reads included, at the model's price on the upstream, as
// the request log's cost_usd is; a stream's log has its cost too; a model
// the upstream has no price for logs unpriced and sends no header
// (docs/reference.md#request-cost).
func TestCostOfEachRequest(t *testing.T) {
	_, pricedURL := startMock(t, "mock-priced", mock.Behavior{})
	_, freeURL := startMock(t, "mock-unpriced", mock.Behavior{})
	priced := upstreamAt("priced", config.ProviderOpenAI, pricedURL, 0, "gpt-4o")
	priced.Price = costPrice
	e := startGateway(t, spec{
		upstreams: []config.Upstream{priced, upstreamAt("unpriced", config.ProviderOpenAI, freeURL, 0, "house-model-x")},
		edit:      func(c *config.Config) { c.Pricing.Catalogue = "none" },
	})

	whole := e.post(t, "/v1/chat/completions", longChat("gpt-4o", false, ""))
	if whole.status != 200 {
		t.Fatalf("status %d: %s", whole.status, whole.body)
	}
	u := gjson.GetBytes(whole.body, "usage")
	in, out, read := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int(), u.Get("prompt_tokens_details.cached_tokens").Int()
	if read == 0 || in <= read || out == 0 {
		t.Fatalf("the mock reported no cached tokens: %s", u.Raw)
	}
	header := whole.header.Get("X-Switchyard-Cost")
	cost, err := strconv.ParseFloat(header, 64)
	if err != nil || !closeCost(cost, wantCost(in, out, read)) || strings.ContainsAny(header, "eE") {
		t.Errorf("X-Switchyard-Cost %q, want %v (in %d, cached %d, out %d)", header, wantCost(in, out, read), in, read, out)
	}

	stream := e.post(t, "/v1/chat/completions", longChat("gpt-4o", true, `,"stream_options":{"include_usage":true}`))
	streamUsage := lastUsage(t, stream.body)
	if stream.header.Get("X-Switchyard-Cost") != "" {
		t.Errorf("a stream has X-Switchyard-Cost %q: its cost is known only at its end", stream.header.Get("X-Switchyard-Cost"))
	}

	unpriced := e.post(t, "/v1/chat/completions", longChat("house-model-x", false, ""))
	if unpriced.status != 200 || unpriced.header.Values("X-Switchyard-Cost") != nil {
		t.Errorf("unpriced: status %d, X-Switchyard-Cost %q", unpriced.status, unpriced.header.Values("X-Switchyard-Cost"))
	}

	logs := map[string]store.RequestLog{}
	for _, l := range e.RequestLogs() {
		logs[l.ID] = l
	}
	tests := []struct {
		name     string
		id       string
		in, read int64
		out      int64
		cost     float64
		unpriced bool
	}{
		{"whole", whole.header.Get("X-Request-Id"), in, read, out, cost, false},
		{"stream", stream.header.Get("X-Request-Id"), streamUsage.in, streamUsage.cacheRead, streamUsage.out,
			wantCost(streamUsage.in, streamUsage.out, streamUsage.cacheRead), false},
		{"unpriced", unpriced.header.Get("X-Request-Id"), gjson.GetBytes(unpriced.body, "usage.prompt_tokens").Int(),
			gjson.GetBytes(unpriced.body, "usage.prompt_tokens_details.cached_tokens").Int(),
			gjson.GetBytes(unpriced.body, "usage.completion_tokens").Int(), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := logs[tc.id]
			if !ok {
				t.Fatalf("no request log %q", tc.id)
			}
			if l.InputTokens != tc.in || l.OutputTokens != tc.out || l.CacheReadTokens != tc.read || l.CacheWriteTokens != 0 || tc.read == 0 {
				t.Errorf("log tokens in %d out %d cache %d/%d; want %d, %d, %d/0", l.InputTokens, l.OutputTokens,
					l.CacheReadTokens, l.CacheWriteTokens, tc.in, tc.out, tc.read)
			}
			if l.Unpriced != tc.unpriced || !closeCost(l.CostUSD, tc.cost) {
				t.Errorf("log cost_usd %v unpriced %v; want %v, %v", l.CostUSD, l.Unpriced, tc.cost, tc.unpriced)
			}
		})
	}
}

// TestStreamUsageAskedForTheClient: an OpenAI chat stream whose client did
// not ask for usage is asked for it upstream, so its request log has the
// real tokens, and the client's stream has no usage chunk; a client that
// asked gets it (docs/protocols.md#usage-and-cache-tokens).
func TestStreamUsageAskedForTheClient(t *testing.T) {
	m, url := startMock(t, "mock-openai", mock.Behavior{})
	up := upstreamAt("priced", config.ProviderOpenAI, url, 0, "gpt-4o")
	up.Price = costPrice
	e := startGateway(t, spec{upstreams: []config.Upstream{up}})

	tests := []struct {
		name      string
		extra     string
		wantUsage bool
	}{
		{"not asked", "", false},
		{"asked false", `,"stream_options":{"include_usage":false}`, false},
		{"asked", `,"stream_options":{"include_usage":true}`, true},
	}
	ids := make([]string, len(tests))
	for i, tc := range tests {
		r := e.post(t, "/v1/chat/completions", longChat("gpt-4o", true, tc.extra))
		if r.status != 200 || !bytes.Contains(r.body, []byte("data: [DONE]")) {
			t.Fatalf("%s: status %d, body %s", tc.name, r.status, r.body)
		}
		if got := gjson.Get(m.Stats().LastBody, "stream_options.include_usage").Bool(); !got {
			t.Errorf("%s: the upstream was not asked for usage: %s", tc.name, m.Stats().LastBody)
		}
		got := usageChunks(t, r.body)
		if (got == 1) != tc.wantUsage || got > 1 {
			t.Errorf("%s: the client got %d usage chunks, want one: %v", tc.name, got, tc.wantUsage)
		}
		ids[i] = r.header.Get("X-Request-Id")
	}
	logs := map[string]store.RequestLog{}
	for _, l := range e.RequestLogs() {
		logs[l.ID] = l
	}
	for i, tc := range tests {
		l := logs[ids[i]]
		if l.InputTokens < 1024 || l.OutputTokens != mock.DefaultCompletionTokens || l.CacheReadTokens == 0 ||
			!closeCost(l.CostUSD, wantCost(l.InputTokens, l.OutputTokens, l.CacheReadTokens)) || l.CostUSD == 0 {
			t.Errorf("%s: log in %d out %d cache read %d cost %v", tc.name, l.InputTokens, l.OutputTokens, l.CacheReadTokens, l.CostUSD)
		}
	}
}

// streamedUsage is a chat stream's last usage chunk.
type streamedUsage struct{ in, out, cacheRead int64 }

// lastUsage returns the usage of a chat stream's usage chunk.
func lastUsage(t *testing.T, body []byte) streamedUsage {
	t.Helper()
	var u streamedUsage
	eachData(body, func(d string) {
		if v := gjson.Get(d, "usage"); v.IsObject() {
			u = streamedUsage{v.Get("prompt_tokens").Int(), v.Get("completion_tokens").Int(), v.Get("prompt_tokens_details.cached_tokens").Int()}
		}
	})
	if u.in == 0 {
		t.Fatalf("no usage chunk in %s", body)
	}
	return u
}

// usageChunks counts a chat stream's chunks with a usage object.
func usageChunks(t *testing.T, body []byte) int {
	t.Helper()
	n := 0
	eachData(body, func(d string) {
		if gjson.Get(d, "usage").IsObject() {
			n++
		}
	})
	return n
}

// eachData calls f with each SSE data line's payload.
func eachData(body []byte, f func(string)) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			f(d)
		}
	}
}

// TestCostOfAnthropicPromptCache: an Anthropic prompt with a cache_control
// breakpoint is written to the prompt cache on its first request and read
// from it on the next; passed through, whole or streamed, each request's
// log and X-Switchyard-Cost price the cache's tokens at their own prices,
// and input counts them (docs/protocols.md#usage-and-cache-tokens).
func TestCostOfAnthropicPromptCache(t *testing.T) {
	_, url := startMock(t, "mock-anthropic", mock.Behavior{})
	up := upstreamAt("claude", config.ProviderAnthropic, url, 0, "claude-sonnet-4-5")
	up.Price = config.Price{InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}
	e := startGateway(t, spec{upstreams: []config.Upstream{up}})
	prompt := strings.Repeat("The contract covers delivery, payment and termination. ", 120)
	body := func(stream bool) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":` + strconv.FormatBool(stream) +
			`,"system":[{"type":"text","text":"` + prompt + `","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"When does it end?"}]}`
	}
	tests := []struct {
		name          string
		stream        bool
		write, header bool // a cache write expected; X-Switchyard-Cost expected
	}{
		{"first: written to the cache", false, true, true},
		{"second: read from the cache", false, false, true},
		{"streamed: read from the cache", true, false, false},
	}
	ids := make([]string, len(tests))
	headers := make([]string, len(tests))
	for i, tc := range tests {
		r := e.post(t, "/v1/messages", body(tc.stream), "anthropic-version", "2023-06-01")
		if r.status != 200 {
			t.Fatalf("%s: status %d: %s", tc.name, r.status, r.body)
		}
		ids[i], headers[i] = r.header.Get("X-Request-Id"), r.header.Get("X-Switchyard-Cost")
	}
	logs := map[string]store.RequestLog{}
	for _, l := range e.RequestLogs() {
		logs[l.ID] = l
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := logs[ids[i]]
			cached := l.CacheReadTokens + l.CacheWriteTokens
			if (l.CacheWriteTokens > 0) != tc.write || l.CacheReadTokens*l.CacheWriteTokens != 0 || cached == 0 ||
				l.InputTokens <= cached || l.OutputTokens == 0 {
				t.Fatalf("log tokens in %d out %d cache read %d write %d", l.InputTokens, l.OutputTokens, l.CacheReadTokens, l.CacheWriteTokens)
			}
			want := (float64(l.InputTokens-cached)*3 + float64(l.CacheReadTokens)*0.3 + float64(l.CacheWriteTokens)*3.75 +
				float64(l.OutputTokens)*15) / 1e6
			if l.Unpriced || !closeCost(l.CostUSD, want) {
				t.Errorf("cost_usd %v unpriced %v, want %v", l.CostUSD, l.Unpriced, want)
			}
			if got, err := strconv.ParseFloat(headers[i], 64); tc.header && (err != nil || got != l.CostUSD) {
				t.Errorf("X-Switchyard-Cost %q, want the logged %v", headers[i], l.CostUSD)
			}
			if !tc.header && headers[i] != "" {
				t.Errorf("a stream has X-Switchyard-Cost %q", headers[i])
			}
		})
	}
}
