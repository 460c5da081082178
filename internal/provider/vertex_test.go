package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/codec"
	"switchyard/internal/mock"
	"switchyard/internal/outcome"
)

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

func TestVertexCheck(t *testing.T) {
	key := string(testAccount().JSON("p1", "https://oauth2.googleapis.com/token"))
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	edit := func(path, value string) string {
		var b strings.Builder
		b.WriteString(key[:strings.Index(key, `"`+path+`"`)])
		rest := key[strings.Index(key, `"`+path+`"`):]
		b.WriteString(`"` + path + `": ` + value)
		b.WriteString(rest[strings.Index(rest, ",\n"):])
		return b.String()
	}
	settings := func(project, location, file, json string) *VertexSettings {
		return &VertexSettings{Project: project, Location: location, CredentialsFile: file, CredentialsJSON: json}
	}
	tests := []struct {
		name string
		u    Upstream
		want []Problem
	}{
		{"inline key", Upstream{Vertex: settings("p1", "us-east5", "", key)}, nil},
		{"key file", Upstream{Vertex: settings("p1", "global", file, "")}, nil},
		{"private base", Upstream{BaseURL: "http://127.0.0.1:9000/v1", Vertex: settings("p1", "europe-west1", file, "")}, nil},
		{"no block", Upstream{}, []Problem{{"vertex", "required for provider vertex: project and location (and credentials_file or credentials_json, else Application Default Credentials apply)"}}},
		{"no project or location", Upstream{Vertex: settings("", "", file, "")}, []Problem{
			{"vertex.project", "required: the Google Cloud project id"},
			{"vertex.location", "required: a region such as us-east5 or europe-west1, or global"}}},
		{"a project with a slash", Upstream{Vertex: settings("p1/x", "us-east5", file, "")}, []Problem{
			{"vertex.project", `must be a Google Cloud project id without '/', '?', '#', '%' or whitespace, got "p1/x"`}}},
		{"a location that is no host", Upstream{Vertex: settings("p1", "US East", file, "")}, []Problem{
			{"vertex.location", `must be a region such as us-east5 or europe-west1, or global (lowercase letters, digits and '-'), got "US East"`}}},
		{"both credentials", Upstream{Vertex: settings("p1", "us-east5", file, key)}, []Problem{
			{"vertex.credentials_json", "set either credentials_file or credentials_json, not both"}}},
		{"Application Default Credentials", Upstream{Vertex: settings("p1", "us-east5", "", "")}, nil},
		{"missing file", Upstream{Vertex: settings("p1", "us-east5", file+".gone", "")}, []Problem{
			{"vertex.credentials_file", "reading the service-account key: open " + file + ".gone: no such file or directory"}}},
		{"not JSON", Upstream{Vertex: settings("p1", "us-east5", "", "-----BEGIN PRIVATE KEY-----")}, []Problem{
			{"vertex.credentials_json", "is not a service-account JSON key: not a JSON object with string fields"}}},
		{"a user's credentials", Upstream{Vertex: settings("p1", "us-east5", "", `{"type":"authorized_user","client_id":"x","refresh_token":"y"}`)}, []Problem{
			{"vertex.credentials_json", `is not a service-account key: type must be "service_account", got "authorized_user"`}}},
		{"no client_email", Upstream{Vertex: settings("p1", "us-east5", "", edit("client_email", `""`))}, []Problem{
			{"vertex.credentials_json", "is not a service-account key: client_email is missing"}}},
		{"no private_key", Upstream{Vertex: settings("p1", "us-east5", "", edit("private_key", `""`))}, []Problem{
			{"vertex.credentials_json", "is not a service-account key: private_key is missing"}}},
		{"no token_uri", Upstream{Vertex: settings("p1", "us-east5", "", edit("token_uri", `""`))}, []Problem{
			{"vertex.credentials_json", "is not a service-account key: token_uri is missing"}}},
		{"a private key that is not one", Upstream{Vertex: settings("p1", "us-east5", "", edit("private_key", `"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"`))}, []Problem{
			{"vertex.credentials_json", "private_key is not a PEM-encoded RSA private key (PKCS #8 or PKCS #1)"}}},
		{"a relative token_uri", Upstream{Vertex: settings("p1", "us-east5", "", edit("token_uri", `"/token"`))}, []Problem{
			{"vertex.credentials_json", `token_uri must be an absolute http(s) URL, got "/token"`}}},
		{"an api key and version", Upstream{APIKey: "k", APIVersion: "2023-06-01", Vertex: settings("p1", "us-east5", file, "")}, []Problem{
			{"api_key", "not used by provider vertex: it authenticates with the service account of vertex.credentials_file or vertex.credentials_json"},
			{"api_version", "not used by provider vertex (Claude requests carry anthropic_version vertex-2023-10-16)"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Vertex{}.Check(tc.u)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check = %q\nwant %q", got, tc.want)
			}
			for _, p := range got {
				if strings.Contains(p.Message, "PRIVATE KEY") || strings.Contains(p.Message, "MII") {
					t.Errorf("%s echoes the key: %s", p.Field, p.Message)
				}
			}
		})
	}
}

func TestForeignSettings(t *testing.T) {
	v := &VertexSettings{Project: "p1"}
	tests := []struct {
		provider string
		u        Upstream
		want     []Problem
	}{
		{NameVertex, Upstream{Vertex: v}, nil},
		{NameOpenAI, Upstream{}, nil},
		{NameGemini, Upstream{Vertex: v}, []Problem{{"vertex", "only provider vertex reads a vertex block, not gemini"}}},
	}
	for _, tc := range tests {
		if got := ForeignSettings(tc.provider, tc.u); !slices.Equal(got, tc.want) {
			t.Errorf("ForeignSettings(%s) = %v, want %v", tc.provider, got, tc.want)
		}
	}
}

func TestVertexDefaultBaseURL(t *testing.T) {
	for loc, want := range map[string]string{
		"us-east5": "https://us-east5-aiplatform.googleapis.com/v1",
		"global":   "https://aiplatform.googleapis.com/v1",
		"eu":       "https://aiplatform.eu.rep.googleapis.com/v1",
		"":         "",
	} {
		if got := (Vertex{}).DefaultBaseURL(Upstream{Vertex: &VertexSettings{Location: loc}}); got != want {
			t.Errorf("DefaultBaseURL(%q) = %q, want %q", loc, got, want)
		}
	}
	if got := (Vertex{}).DefaultBaseURL(Upstream{}); got != "" {
		t.Errorf("without settings: %q", got)
	}
	if got := (Gemini{}).DefaultBaseURL(Upstream{}); got != DefaultGeminiBaseURL {
		t.Errorf("gemini: %q", got)
	}
}

func TestVertexRequests(t *testing.T) {
	_, _, mocked := vertexMock(t, mock.Options{})
	const pfx = "/projects/p1/locations/us-east5/publishers/"
	at := func(base, location string) Upstream {
		u := mocked
		v := *u.Vertex
		v.Location = location
		u.BaseURL, u.Vertex = base, &v
		return u
	}
	versioned := `{"anthropic_version":"vertex-2023-10-16","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name       string
		u          Upstream
		op, model  string
		body       string
		clientHdr  http.Header
		wantURL    string
		wantBody   string
		wantHeader map[string]string // "" = absent
	}{
		{"gemini on the regional default", at("", "us-east5"), codec.Gemini.Op(false), "gemini-2.5-flash", geminiBody, nil,
			"https://us-east5-aiplatform.googleapis.com/v1" + pfx + "google/models/gemini-2.5-flash:generateContent", geminiBody,
			map[string]string{"Content-Type": "application/json"}},
		{"gemini stream on the global default", at("", "global"), codec.Gemini.Op(true), "gemini-2.5-pro", geminiBody, nil,
			"https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody, nil},
		{"claude rawPredict", at("http://10.0.0.9:8080/v1/", "us-east5"), codec.Anthropic.Op(false), "claude-sonnet-4@20250514", claudeBody, nil,
			"http://10.0.0.9:8080/v1" + pfx + "anthropic/models/claude-sonnet-4@20250514:rawPredict",
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, nil},
		{"claude streamRawPredict", at("http://10.0.0.9:8080/v1", "us-east5"), codec.Anthropic.Op(true), "claude-opus-4-1@20250805",
			`{"stream":true,"model":"claude-opus-4-1","max_tokens":16,"messages":[]}`, nil,
			"http://10.0.0.9:8080/v1" + pfx + "anthropic/models/claude-opus-4-1@20250805:streamRawPredict",
			`{"anthropic_version":"vertex-2023-10-16","stream":true,"max_tokens":16,"messages":[]}`, nil},
		{"claude with its own version", at("http://v/v1", "us-east5"), codec.Anthropic.Op(false), "claude-x", versioned, nil,
			"http://v/v1" + pfx + "anthropic/models/claude-x:rawPredict", versioned, nil},
		{"claude with an empty body", at("http://v/v1", "us-east5"), codec.Anthropic.Op(false), "claude-x", ` { } `, nil,
			"http://v/v1" + pfx + "anthropic/models/claude-x:rawPredict", ` {"anthropic_version":"vertex-2023-10-16" } `, nil},
		{"claude count tokens keeps the model", at("http://v/v1", "us-east5"), codec.AnthropicCountTokens.Op(false), "claude-x", `{"model":"claude-x","messages":[]}`, nil,
			"http://v/v1" + pfx + "anthropic/models/count-tokens:rawPredict", `{"anthropic_version":"vertex-2023-10-16","model":"claude-x","messages":[]}`, nil},
		{"model path-escaped", at("http://v/v1", "us-east5"), codec.Gemini.Op(false), "tuned/my model", geminiBody, nil,
			"http://v/v1" + pfx + "google/models/tuned%2Fmy%20model:generateContent", geminiBody, nil},
		{"the client's credentials and version never go", func() Upstream {
			u := at("http://v/v1", "us-east5")
			u.Headers = map[string]string{"X-Goog-User-Project": "billing"}
			return u
		}(), codec.Anthropic.Op(false), "claude-x", versioned,
			http.Header{"Authorization": {"Bearer client"}, "X-Goog-Api-Key": {"client"}, "Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {"context-1m-2025-08-07"}},
			"http://v/v1" + pfx + "anthropic/models/claude-x:rawPredict", versioned,
			map[string]string{"X-Goog-Api-Key": "", "Anthropic-Version": "", "Anthropic-Beta": "context-1m-2025-08-07", "X-Goog-User-Project": "billing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep := Vertex{}.New(tc.u)
			h := tc.clientHdr.Clone()
			if h == nil {
				h = http.Header{}
			}
			body := []byte(tc.body)
			req, err := ep.NewRequest(context.Background(), tc.op, tc.model, body, h)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tc.wantURL {
				t.Errorf("%s %s, want POST %s", req.Method, req.URL, tc.wantURL)
			}
			if got, _ := io.ReadAll(req.Body); string(got) != tc.wantBody {
				t.Errorf("body = %s\nwant   %s", got, tc.wantBody)
			}
			if string(body) != tc.body {
				t.Errorf("the caller's body changed to %s", body)
			}
			if a := req.Header.Get("Authorization"); !strings.HasPrefix(a, "Bearer ya29.mock-") {
				t.Errorf("Authorization = %q", a)
			}
			for k, v := range tc.wantHeader {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
	ep := Vertex{}.New(mocked)
	if _, err := ep.NewRequest(context.Background(), "embeddings", "gemini-2.5-flash", []byte(`{}`), http.Header{}); err == nil || errors.Is(err, ErrAuth) {
		t.Errorf("an operation Vertex lacks: %v", err)
	}
	if _, err := ep.NewRequest(context.Background(), codec.Anthropic.Op(false), "claude-x", []byte(`["not an object"]`), http.Header{}); err == nil || errors.Is(err, ErrAuth) {
		t.Errorf("a body that is no object: %v", err)
	}
}

func TestVertexFamilyAndProbes(t *testing.T) {
	_, srv, u := vertexMock(t, mock.Options{})
	ep := Vertex{}.New(u)
	base := srv.URL + "/v1"
	tests := []struct {
		kind, model string
		family      codec.Family
		method, url string
		check       string // a gjson path of the probe body that must hold
	}{
		{"models", "gemini-2.5-flash", codec.FamilyGemini, http.MethodGet, base + "/publishers/google/models/gemini-2.5-flash", ""},
		{"models", "claude-sonnet-4@20250514", codec.FamilyAnthropic, http.MethodGet, base + "/publishers/anthropic/models/claude-sonnet-4@20250514", ""},
		{"chat", "gemini-2.5-flash", codec.FamilyGemini, http.MethodPost,
			base + "/projects/p1/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent",
			`generationConfig.maxOutputTokens==1` + "\x00" + `generationConfig.thinkingConfig.thinkingBudget==0`},
		{"chat", "gemini-2.5-pro", codec.FamilyGemini, http.MethodPost,
			base + "/projects/p1/locations/us-east5/publishers/google/models/gemini-2.5-pro:generateContent",
			`generationConfig.maxOutputTokens==1` + "\x00" + `!generationConfig.thinkingConfig`},
		{"chat", "claude-sonnet-4@20250514", codec.FamilyAnthropic, http.MethodPost,
			base + "/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict",
			`max_tokens==1` + "\x00" + `anthropic_version==vertex-2023-10-16` + "\x00" + `!model` + "\x00" + `!thinking`},
	}
	for _, tc := range tests {
		t.Run(tc.kind+" "+tc.model, func(t *testing.T) {
			if got := ep.Family(tc.model); got != tc.family {
				t.Errorf("Family = %v, want %v", got, tc.family)
			}
			req, err := ep.ProbeRequest(context.Background(), tc.kind, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != tc.method || req.URL.String() != tc.url || !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ya29.") {
				t.Errorf("%s %s %v", req.Method, req.URL, req.Header)
			}
			if tc.check == "" {
				return
			}
			body, _ := io.ReadAll(req.Body)
			for _, c := range strings.Split(tc.check, "\x00") {
				path, want, eq := strings.Cut(c, "==")
				switch {
				case eq && gjson.GetBytes(body, path).String() != want:
					t.Errorf("%s = %q, want %q in %s", path, gjson.GetBytes(body, path).String(), want, body)
				case !eq && gjson.GetBytes(body, strings.TrimPrefix(path, "!")).Exists():
					t.Errorf("%s in %s", path, body)
				}
			}
		})
	}
	if ep.OpenStreamEnd() {
		t.Error("OpenStreamEnd")
	}
}

func TestVertexClassify(t *testing.T) {
	resourceExhausted := `{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}`
	withRetry := `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`
	tests := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		class      outcome.Class
		cooldown   time.Duration
		detail     string
	}{
		{"success", 200, "", `{}`, outcome.Success, 0, ""},
		{"RESOURCE_EXHAUSTED with RetryInfo", 429, "", withRetry, outcome.RateLimited, 17 * time.Second, ""},
		{"RESOURCE_EXHAUSTED without headers or RetryInfo", 429, "", resourceExhausted, outcome.RateLimited, 0, ""},
		{"Claude's 429 with Retry-After", 429, "4", `{"type":"error","error":{"type":"rate_limit_error"}}`, outcome.RateLimited, 4 * time.Second, ""},
		{"unauthenticated", 401, "", `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`, outcome.AuthError, 0, "status 401 UNAUTHENTICATED"},
		{"permission denied", 403, "", `{"error":{"code":403,"status":"PERMISSION_DENIED","message":"Permission 'aiplatform.endpoints.predict' denied"}}`, outcome.AuthError, 0, "status 403 PERMISSION_DENIED"},
		{"a 403 in no known shape", 403, "", `<html>Forbidden</html>`, outcome.AuthError, 0, ""},
		{"a status that is not a code name", 403, "", `{"error":{"status":"denied: sk-123"}}`, outcome.AuthError, 0, ""},
		{"invalid argument", 400, "", `{"error":{"code":400,"status":"INVALID_ARGUMENT"}}`, outcome.ClientError, 0, ""},
		{"Claude's invalid request", 400, "", `{"type":"error","error":{"type":"invalid_request_error"}}`, outcome.ClientError, 0, ""},
		{"model not found", 404, "", `{"error":{"code":404,"status":"NOT_FOUND"}}`, outcome.ClientError, 0, ""},
		{"internal", 500, "", `{"error":{"code":500,"status":"INTERNAL"}}`, outcome.ServerError, 0, ""},
		{"unavailable", 503, "", `{"error":{"code":503,"status":"UNAVAILABLE"}}`, outcome.ServerError, 0, ""},
		{"Claude overloaded", 529, "", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, outcome.ServerError, 0, ""},
	}
	ep := Vertex{}.New(Upstream{Vertex: &VertexSettings{Project: "p", Location: "us-east5"}})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			o := ep.Classify(tc.status, h, []byte(tc.body))
			if o.Class != tc.class || o.Cooldown != tc.cooldown || o.Status != tc.status || o.Detail != tc.detail {
				t.Errorf("Classify = %v cooldown %v status %d detail %q, want %v %v %q", o.Class, o.Cooldown, o.Status, o.Detail, tc.class, tc.cooldown, tc.detail)
			}
		})
	}
}
