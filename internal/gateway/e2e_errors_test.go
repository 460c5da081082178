package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// Client keys of the bad-input gateway.
const (
	gptOnlyKey    = "sk-e2e-gpt-only"   // allowed_models: gpt-4o*
	restrictedKey = "sk-e2e-restricted" // allowed_upstreams: oa-b; allowed_models: gpt-4o*
)

// errShape is the error body a row expects.
type errShape int

const (
	noError errShape = iota
	openAIError
	anthropicError
)

// TestBadInputThroughServer drives every error of docs/reference.md#errors
// through the real server and checks status and the caller's protocol error
// shape.
func TestBadInputThroughServer(t *testing.T) {
	_, aURL := startMock(t, "oa-a", mock.Behavior{})
	oaB, bURL := startMock(t, "oa-b", mock.Behavior{})
	_, antURL := startMock(t, "ant", mock.Behavior{})
	broken, brokenURL := startMock(t, "broken", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	limited1, l1URL := startMock(t, "limited-1", mock.Behavior{ForceStatus: http.StatusTooManyRequests})
	limited2, l2URL := startMock(t, "limited-2", mock.Behavior{ForceStatus: http.StatusTooManyRequests})

	key := func(name, secret string, models, upstreams []string) config.Key {
		k := config.DefaultKey()
		k.Name, k.Key, k.AllowedModels, k.AllowedUpstreams = name, secret, models, upstreams
		return k
	}
	const maxBody = 2048
	e := startGateway(t, spec{
		keys: []config.Key{
			key("e2e", testKey, nil, nil),
			key("gpt-only", gptOnlyKey, []string{"gpt-4o*"}, nil),
			key("restricted", restrictedKey, []string{"gpt-4o*"}, []string{"oa-b"}),
		},
		upstreams: []config.Upstream{
			upstreamAt("oa-a", config.ProviderOpenAI, aURL, 0, "gpt-4o", "gpt-4o-mini", "gpt-4o-only-a"),
			upstreamAt("oa-b", config.ProviderOpenAI, bURL, 0, "gpt-4o", "gpt-4o-mini", "o3-mini"),
			upstreamAt("ant", config.ProviderAnthropic, antURL, 0, "claude-3-5-haiku"),
			upstreamAt("broken-500", config.ProviderOpenAI, brokenURL, 0, "broken-model"),
			upstreamAt("broken-dead", config.ProviderOpenAI, deadURL(t), 0, "broken-model"),
			upstreamAt("limited-1", config.ProviderOpenAI, l1URL, 0, "limited-model"),
			upstreamAt("limited-2", config.ProviderOpenAI, l2URL, 0, "limited-model"),
		},
		edit: func(c *config.Config) { c.Defaults.MaxBodyBytes = maxBody },
	})

	const (
		chat     = "/v1/chat/completions"
		messages = "/v1/messages"
	)
	big := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 2*maxBody) + `"}]}`
	bigAnthropic := `{"model":"claude-3-5-haiku","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2*maxBody) + `"}]}`
	ids := func(r gjson.Result, field string) []string {
		var out []string
		for _, m := range r.Get("data").Array() {
			out = append(out, m.Get(field).String())
		}
		return out
	}
	allModels := []string{"broken-model", "claude-3-5-haiku", "gpt-4o", "gpt-4o-mini", "gpt-4o-only-a", "limited-model", "o3-mini"}

	tests := []struct {
		name    string
		method  string // default POST
		path    string
		auth    []string // header name/value pairs; default Bearer testKey
		body    string
		chunked bool // send the body without Content-Length
		status  int
		shape   errShape
		code    string            // OpenAI error.code, or Anthropic error.type
		header  map[string]string // response headers that must be set
		check   func(t *testing.T, body gjson.Result)
	}{
		// Bodies.
		{name: "malformed JSON", path: chat, body: `{model: gpt-4o}`, status: 400, shape: openAIError, code: "invalid_json"},
		{name: "truncated JSON", path: chat, body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"`, status: 400, shape: openAIError, code: "invalid_json"},
		{name: "empty body", path: chat, body: ``, status: 400, shape: openAIError, code: "invalid_json"},
		{name: "body not an object", path: chat, body: `["gpt-4o"]`, status: 400, shape: openAIError, code: "invalid_request"},
		{name: "missing model", path: chat, body: `{"messages":[]}`, status: 400, shape: openAIError, code: "missing_model"},
		{name: "null model", path: chat, body: `{"model":null}`, status: 400, shape: openAIError, code: "missing_model"},
		{name: "model of wrong type", path: chat, body: `{"model":42}`, status: 400, shape: openAIError, code: "invalid_request"},
		{name: "empty model", path: chat, body: `{"model":""}`, status: 400, shape: openAIError, code: "invalid_request"},
		{name: "stream of wrong type", path: chat, body: `{"model":"gpt-4o","stream":"yes"}`, status: 400, shape: openAIError, code: "invalid_request"},
		{name: "anthropic malformed JSON", path: messages, body: `{"model":`, status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "anthropic missing model", path: messages, body: `{"max_tokens":5}`, status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "anthropic stream of wrong type", path: messages, body: `{"model":"claude-3-5-haiku","stream":1}`, status: 400, shape: anthropicError, code: "invalid_request_error"},

		// Keys.
		{name: "no key", path: chat, auth: []string{}, body: `{"model":"gpt-4o"}`, status: 401, shape: openAIError, code: "invalid_api_key"},
		{name: "unknown Bearer key", path: chat, auth: []string{"Authorization", "Bearer sk-nobody"}, body: `{"model":"gpt-4o"}`, status: 401, shape: openAIError, code: "invalid_api_key"},
		{name: "unknown x-api-key", path: chat, auth: []string{"x-api-key", "sk-nobody"}, body: `{"model":"gpt-4o"}`, status: 401, shape: openAIError, code: "invalid_api_key"},
		{name: "anthropic no key", path: messages, auth: []string{}, body: `{"model":"claude-3-5-haiku"}`, status: 401, shape: anthropicError, code: "authentication_error"},
		{name: "anthropic unknown x-api-key", path: messages, auth: []string{"x-api-key", "sk-nobody"}, body: `{"model":"claude-3-5-haiku"}`, status: 401, shape: anthropicError, code: "authentication_error"},
		{name: "anthropic unknown Bearer key", path: messages, auth: []string{"Authorization", "Bearer sk-nobody"}, body: `{"model":"claude-3-5-haiku"}`, status: 401, shape: anthropicError, code: "authentication_error"},
		{name: "model not allowed for the key", path: chat, auth: []string{"Authorization", "Bearer " + gptOnlyKey}, body: `{"model":"o3-mini"}`, status: 403, shape: openAIError, code: "model_not_allowed"},
		{name: "anthropic model not allowed for the key", path: messages, auth: []string{"x-api-key", gptOnlyKey}, body: `{"model":"claude-3-5-haiku","max_tokens":5}`, status: 403, shape: anthropicError, code: "permission_error"},

		// Models and upstreams.
		{name: "model nobody serves", path: chat, body: `{"model":"gpt-nope"}`, status: 404, shape: openAIError, code: "model_not_found"},
		{name: "anthropic model nobody serves", path: messages, body: `{"model":"claude-nope","max_tokens":5}`, status: 404, shape: anthropicError, code: "not_found_error"},
		// An Anthropic client may ask for a model only OpenAI upstreams serve:
		// its request is translated, so it must be a valid Messages request.
		{name: "model of the other protocol, malformed for translation", path: messages, body: `{"model":"gpt-4o","max_tokens":5}`,
			status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "model of the other protocol is translated", path: messages,
			body: `{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, status: 200,
			header: map[string]string{"X-Switchyard-Translated": "anthropic->openai-chat"}},
		{name: "restricted key cannot reach an upstream outside its set", path: chat, auth: []string{"Authorization", "Bearer " + restrictedKey},
			body: `{"model":"gpt-4o-only-a"}`, status: 404, shape: openAIError, code: "model_not_found"},
		{name: "the same model for an unrestricted key", path: chat, body: `{"model":"gpt-4o-only-a"}`, status: 200,
			header: map[string]string{"X-Switchyard-Upstream": "oa-a"}},
		{name: "every candidate failed", path: chat, body: `{"model":"broken-model"}`, status: 502, shape: openAIError, code: "no_upstream_available",
			header: map[string]string{"X-Switchyard-Attempts": "2"},
			check: func(t *testing.T, body gjson.Result) {
				if strings.Contains(body.Raw, "sk-upstream-") {
					t.Errorf("the error leaks an upstream key: %s", body.Raw)
				}
				if broken.Stats().ByStatus[500] != 1 {
					t.Errorf("broken upstream answered %v, want one 500", broken.Stats().ByStatus)
				}
			}},
		{name: "every candidate rate limited", path: chat, body: `{"model":"limited-model"}`, status: 503, shape: openAIError, code: "no_upstream_available",
			header: map[string]string{"Retry-After": "1", "X-Switchyard-Attempts": "2"},
			check: func(t *testing.T, body gjson.Result) {
				for _, m := range []*mock.Server{limited1, limited2} {
					if m.Stats().ByStatus[429] != 1 {
						t.Errorf("%s answered %v, want one 429", m.Name(), m.Stats().ByStatus)
					}
				}
			}},

		// Sizes.
		{name: "body over max_body_bytes", path: chat, body: big, status: 413, shape: openAIError, code: "request_too_large"},
		{name: "chunked body over max_body_bytes", path: chat, body: big, chunked: true, status: 413, shape: openAIError, code: "request_too_large"},
		{name: "anthropic body over max_body_bytes", path: messages, body: bigAnthropic, status: 413, shape: anthropicError, code: "request_too_large"},
		{name: "anthropic chunked body over max_body_bytes", path: messages, body: bigAnthropic, chunked: true, status: 413, shape: anthropicError, code: "request_too_large"},
		{name: "chunked body within max_body_bytes", path: chat, body: `{"model":"gpt-4o"}`, chunked: true, status: 200},

		// Paths and methods.
		{name: "unknown endpoint", method: http.MethodGet, path: "/v1/nope", status: 404, shape: openAIError, code: "not_found"},
		{name: "unknown endpoint POST", path: "/v2/chat/completions", body: `{"model":"gpt-4o"}`, status: 404, shape: openAIError, code: "not_found"},
		{name: "wrong method", method: http.MethodGet, path: chat, status: 405, shape: openAIError, code: "method_not_allowed",
			header: map[string]string{"Allow": "POST"}},
		{name: "anthropic wrong method", method: http.MethodGet, path: messages, status: 405, shape: anthropicError, code: "invalid_request_error",
			header: map[string]string{"Allow": "POST"}},
		{name: "wrong method on models", path: "/v1/models", body: `{}`, status: 405, shape: openAIError, code: "method_not_allowed",
			header: map[string]string{"Allow": "GET"}},

		// Model lists.
		{name: "models OpenAI shape", method: http.MethodGet, path: "/v1/models", status: 200,
			check: func(t *testing.T, body gjson.Result) {
				if body.Get("object").String() != "list" || !slices.Equal(ids(body, "id"), allModels) ||
					!slices.Equal(ids(body, "object"), slices.Repeat([]string{"model"}, len(allModels))) {
					t.Errorf("models %s, want an OpenAI list of %v", body.Raw, allModels)
				}
			}},
		{name: "models Anthropic shape", method: http.MethodGet, path: "/v1/models", auth: []string{"x-api-key", testKey, "anthropic-version", "2023-06-01"}, status: 200,
			check: func(t *testing.T, body gjson.Result) {
				if !slices.Equal(ids(body, "id"), allModels) || !slices.Equal(ids(body, "type"), slices.Repeat([]string{"model"}, len(allModels))) ||
					body.Get("has_more").Type != gjson.False || body.Get("first_id").String() != allModels[0] ||
					body.Get("last_id").String() != allModels[len(allModels)-1] || body.Get("object").Exists() {
					t.Errorf("models %s, want an Anthropic page of %v", body.Raw, allModels)
				}
			}},
		{name: "models of a restricted key", method: http.MethodGet, path: "/v1/models", auth: []string{"Authorization", "Bearer " + restrictedKey}, status: 200,
			check: func(t *testing.T, body gjson.Result) {
				// oa-b serves gpt-4o, gpt-4o-mini, o3-mini; allowed_models keeps gpt-4o*.
				if got, want := ids(body, "id"), []string{"gpt-4o", "gpt-4o-mini"}; !slices.Equal(got, want) {
					t.Errorf("restricted key lists %v, want %v", got, want)
				}
			}},
		{name: "models of a model-limited key", method: http.MethodGet, path: "/v1/models", auth: []string{"Authorization", "Bearer " + gptOnlyKey}, status: 200,
			check: func(t *testing.T, body gjson.Result) {
				if got, want := ids(body, "id"), []string{"gpt-4o", "gpt-4o-mini", "gpt-4o-only-a"}; !slices.Equal(got, want) {
					t.Errorf("gpt-only key lists %v, want %v", got, want)
				}
			}},
		{name: "models without a key", method: http.MethodGet, path: "/v1/models", auth: []string{}, status: 401, shape: openAIError, code: "invalid_api_key"},
		{name: "models without a key, Anthropic", method: http.MethodGet, path: "/v1/models", auth: []string{"anthropic-version", "2023-06-01"}, status: 401, shape: anthropicError, code: "authentication_error"},

		// Probes.
		{name: "healthz", method: http.MethodGet, path: "/healthz", auth: []string{}, status: 200,
			check: func(t *testing.T, body gjson.Result) {
				if body.Get("status").String() != "ok" {
					t.Errorf("healthz %s", body.Raw)
				}
			}},
		{name: "readyz", method: http.MethodGet, path: "/readyz", auth: []string{}, status: 200,
			check: func(t *testing.T, body gjson.Result) {
				if body.Get("status").String() != "ready" {
					t.Errorf("readyz %s", body.Raw)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tableRequest(t, tc.method, e.URL+tc.path, tc.body, tc.chunked)
			if req.Method == http.MethodPost {
				req.Header.Set("Content-Type", "application/json")
			}
			auth := tc.auth
			if auth == nil {
				auth = []string{"Authorization", "Bearer " + testKey}
			}
			for i := 0; i+1 < len(auth); i += 2 {
				req.Header.Set(auth[i], auth[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			if !gjson.ValidBytes(raw) {
				t.Fatalf("body is not JSON: %q", raw)
			}
			got := gjson.ParseBytes(raw)
			switch tc.shape {
			case openAIError:
				eo := got.Get("error")
				if !eo.IsObject() || eo.Get("message").String() == "" || eo.Get("type").String() == "" || got.Get("type").Exists() {
					t.Errorf("want OpenAI {\"error\":{\"message\",\"type\",\"code\"}}, got %s", raw)
				}
				if c := eo.Get("code").String(); c != tc.code {
					t.Errorf("error.code = %q, want %q (%s)", c, tc.code, raw)
				}
			case anthropicError:
				eo := got.Get("error")
				if got.Get("type").String() != "error" || !eo.IsObject() || eo.Get("message").String() == "" {
					t.Errorf("want Anthropic {\"type\":\"error\",\"error\":{\"type\",\"message\"}}, got %s", raw)
				}
				if typ := eo.Get("type").String(); typ != tc.code {
					t.Errorf("error.type = %q, want %q (%s)", typ, tc.code, raw)
				}
			case noError:
				if got.Get("error").Exists() {
					t.Errorf("unexpected error body %s", raw)
				}
			}
			if tc.shape != noError && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("error Content-Type %q", resp.Header.Get("Content-Type"))
			}
			if tc.status == 503 || tc.status == 502 {
				if resp.StatusCode == http.StatusTooManyRequests {
					t.Error("an upstream 429 reached the client")
				}
			}
			for name, want := range tc.header {
				if v := resp.Header.Get(name); v != want {
					t.Errorf("%s = %q, want %q", name, v, want)
				}
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}

	t.Run("restricted key reaches only its upstreams", func(t *testing.T) {
		before := oaB.Stats().Requests
		for i := range 30 {
			r := rawRequest(t, http.MethodPost, e.URL+chat, strings.NewReader(`{"model":"gpt-4o"}`), "x-api-key", restrictedKey)
			if r.status != 200 || r.header.Get("X-Switchyard-Upstream") != "oa-b" {
				t.Fatalf("request %d: status %d via %q, want 200 via oa-b", i, r.status, r.header.Get("X-Switchyard-Upstream"))
			}
		}
		if n := oaB.Stats().Requests - before; n != 30 {
			t.Errorf("oa-b answered %d of 30", n)
		}
	})

	t.Run("anthropic SDK sees the Anthropic error", func(t *testing.T) {
		client := e.anthropic(gptOnlyKey)
		_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: "claude-3-5-haiku", MaxTokens: 5,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
		})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
			t.Fatalf("error %v, want an *anthropic.Error with status 403", err)
		}
	})
}
