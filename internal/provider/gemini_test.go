package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/codec"
	"switchyard/internal/mock"
	"switchyard/internal/outcome"
)

func TestGeminiRequests(t *testing.T) {
	tests := []struct {
		name       string
		u          Upstream
		op, model  string
		clientHdr  http.Header
		wantURL    string
		wantHeader map[string]string // "" = absent
	}{
		{"default base", Upstream{APIKey: "g-key"}, codec.Gemini.Op(false), "gemini-2.5-flash", nil,
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
			map[string]string{"X-Goog-Api-Key": "g-key", "Content-Type": "application/json", "Authorization": ""}},
		{"stream on a private base", Upstream{BaseURL: "http://127.0.0.1:9000/v1beta/", APIKey: "g-key"}, codec.Gemini.Op(true), "gemini-2.0-flash", nil,
			"http://127.0.0.1:9000/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", map[string]string{"X-Goog-Api-Key": "g-key"}},
		{"model path-escaped", Upstream{BaseURL: "https://g.example/v1beta", APIKey: "g-key"}, "generateContent", "tuned/my model", nil,
			"https://g.example/v1beta/models/tuned%2Fmy%20model:generateContent", nil},
		{"the client's keys never go", Upstream{BaseURL: "https://g.example/v1beta", APIKey: "g-key", Headers: map[string]string{"X-Goog-User-Project": "p1"}},
			"generateContent", "m", http.Header{"X-Goog-Api-Key": {"client-key"}, "Authorization": {"Bearer client-key"}},
			"https://g.example/v1beta/models/m:generateContent",
			map[string]string{"X-Goog-Api-Key": "g-key", "Authorization": "", "X-Goog-User-Project": "p1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Builtin().Lookup(NameGemini)
			if !ok {
				t.Fatal("gemini is not registered")
			}
			ep := p.New(tc.u)
			h := tc.clientHdr.Clone()
			if h == nil {
				h = http.Header{}
			}
			req, err := ep.NewRequest(context.Background(), tc.op, tc.model, []byte(`{"contents":[]}`), h)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tc.wantURL {
				t.Errorf("%s %s, want POST %s", req.Method, req.URL, tc.wantURL)
			}
			for k, v := range tc.wantHeader {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if body, _ := io.ReadAll(req.Body); string(body) != `{"contents":[]}` {
				t.Errorf("body = %s", body)
			}
			if ep.Family("") != codec.FamilyGemini || ep.OpenStreamEnd() {
				t.Errorf("family %v open end %v", ep.Family(""), ep.OpenStreamEnd())
			}
		})
	}
}

func TestGeminiProbes(t *testing.T) {
	ep := Gemini{}.New(Upstream{BaseURL: "https://g.example/v1beta", APIKey: "g-key"})
	tests := []struct {
		kind, model, method, url string
	}{
		{"models", "gemini-2.5-flash", http.MethodGet, "https://g.example/v1beta/models/gemini-2.5-flash"},
		{"models", "", http.MethodGet, "https://g.example/v1beta/models"},
		{"chat", "gemini-2.5-flash", http.MethodPost, "https://g.example/v1beta/models/gemini-2.5-flash:generateContent"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+" "+tc.model, func(t *testing.T) {
			req, err := ep.ProbeRequest(context.Background(), tc.kind, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != tc.method || req.URL.String() != tc.url || req.Header.Get("X-Goog-Api-Key") != "g-key" {
				t.Errorf("%s %s %v", req.Method, req.URL, req.Header)
			}
			if tc.kind == "chat" {
				body, _ := io.ReadAll(req.Body)
				if gjson.GetBytes(body, "generationConfig.maxOutputTokens").Int() != 1 || gjson.GetBytes(body, "contents.0.role").String() != "user" {
					t.Errorf("probe body = %s", body)
				}
			}
		})
	}
}

func TestGeminiCheck(t *testing.T) {
	tests := []struct {
		name string
		u    Upstream
		want []Problem
	}{
		{"default base", Upstream{APIKey: "k"}, nil},
		{"private base", Upstream{APIKey: "k", BaseURL: "http://127.0.0.1:8080/v1beta"}, nil},
		{"no key", Upstream{BaseURL: DefaultGeminiBaseURL}, []Problem{{"api_key", "required for provider gemini"}}},
		{"relative base", Upstream{APIKey: "k", BaseURL: "generativelanguage.googleapis.com/v1beta"},
			[]Problem{{"base_url", `must be an absolute http(s) URL with a host, such as https://generativelanguage.googleapis.com/v1beta, got "generativelanguage.googleapis.com/v1beta"`}}},
		{"scheme", Upstream{APIKey: "k", BaseURL: "ftp://g.example/v1beta"}, []Problem{{"base_url", `scheme must be http or https, got "ftp"`}}},
		{"query", Upstream{APIKey: "k", BaseURL: "https://g.example/v1beta?key=x"},
			[]Problem{{"base_url", `must not have a query or fragment (the gateway appends paths to it), got "https://g.example/v1beta?key=x"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Gemini{}).Check(tc.u); !slices.Equal(got, tc.want) {
				t.Errorf("Check = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGeminiClassify(t *testing.T) {
	retryInfo := func(delay string) string {
		return `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[` +
			`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},` +
			`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + delay + `"}]}}`
	}
	keyInvalid := `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",` +
		`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`
	tests := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		class      outcome.Class
		cooldown   time.Duration
	}{
		{"success", 200, "", `{}`, outcome.Success, 0},
		{"retry info", 429, "", retryInfo("30s"), outcome.RateLimited, 30 * time.Second},
		{"fractional retry info", 429, "", retryInfo("1.5s"), outcome.RateLimited, 1500 * time.Millisecond},
		{"retry info wins over Retry-After", 429, "9", retryInfo("2s"), outcome.RateLimited, 2 * time.Second},
		{"Retry-After without retry info", 429, "7", `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`, outcome.RateLimited, 7 * time.Second},
		{"bad retry info falls back", 429, "3", retryInfo("soon"), outcome.RateLimited, 3 * time.Second},
		{"a Go duration is not a proto Duration", 429, "", retryInfo("1m"), outcome.RateLimited, 0},
		{"zero retry info", 429, "", retryInfo("0s"), outcome.RateLimited, 0},
		{"no wait at all", 429, "", `not json`, outcome.RateLimited, 0},
		{"key invalid", 400, "", keyInvalid, outcome.AuthError, 0},
		{"other 400", 400, "", `{"error":{"code":400,"message":"Please use a valid role: user, model.","status":"INVALID_ARGUMENT"}}`, outcome.ClientError, 0},
		{"unauthenticated", 401, "", `{}`, outcome.AuthError, 0},
		{"permission denied", 403, "", `{"error":{"code":403,"status":"PERMISSION_DENIED"}}`, outcome.AuthError, 0},
		{"not found", 404, "", `{}`, outcome.ClientError, 0},
		{"too large", 413, "", `{}`, outcome.ClientError, 0},
		{"unprocessable", 422, "", `{}`, outcome.ClientError, 0},
		{"internal", 500, "", `{}`, outcome.ServerError, 0},
		{"unavailable", 503, "", `{"error":{"code":503,"status":"UNAVAILABLE"}}`, outcome.ServerError, 0},
		{"deadline", 504, "", `{}`, outcome.ServerError, 0},
	}
	ep := Gemini{}.New(Upstream{APIKey: "k"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			o := ep.Classify(tc.status, h, []byte(tc.body))
			if o.Class != tc.class || o.Cooldown != tc.cooldown || o.Status != tc.status {
				t.Errorf("Classify = %v cooldown %v status %d, want %v %v", o.Class, o.Cooldown, o.Status, tc.class, tc.cooldown)
			}
		})
	}
}

// TestGeminiAgainstMock sends the adapter's requests to the mock upstream
// and classifies its answers.
func TestGeminiAgainstMock(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		behavior mock.Behavior
		class    outcome.Class
		cooldown time.Duration
	}{
		{"served", "g-key", mock.Behavior{}, outcome.Success, 0},
		{"wrong key", "other-key", mock.Behavior{}, outcome.AuthError, 0},
		{"throttled", "g-key", mock.Behavior{ForceStatus: 429}, outcome.RateLimited, time.Second},
		{"overloaded", "g-key", mock.Behavior{ForceStatus: 503}, outcome.ServerError, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mock.New(mock.Options{APIKey: "g-key", Behavior: tc.behavior})
			srv := httptest.NewServer(m)
			t.Cleanup(srv.Close)
			ep := Gemini{}.New(Upstream{BaseURL: srv.URL + "/v1beta", APIKey: tc.key})
			for _, stream := range []bool{false, true} {
				req, err := ep.NewRequest(context.Background(), codec.Gemini.Op(stream), "gemini-2.5-flash",
					[]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`), http.Header{})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if o := ep.Classify(resp.StatusCode, resp.Header, body); o.Class != tc.class || o.Cooldown != tc.cooldown {
					t.Errorf("stream %v: %d %s: class %v cooldown %v, want %v %v", stream, resp.StatusCode, body, o.Class, o.Cooldown, tc.class, tc.cooldown)
				}
			}
			for _, kind := range []string{"models", "chat"} {
				req, err := ep.ProbeRequest(context.Background(), kind, "gemini-2.5-flash")
				if err != nil {
					t.Fatal(err)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if want := tc.class == outcome.Success; (resp.StatusCode == http.StatusOK) != want {
					t.Errorf("%s probe answered %d", kind, resp.StatusCode)
				}
			}
		})
	}
}
