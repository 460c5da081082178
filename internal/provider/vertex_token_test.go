package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/mock"
	"switchyard/internal/outcome"
)

// testAccount is the service account of every Vertex test: a 2048-bit key
// takes a while to make.
var testAccount = sync.OnceValue(func() *mock.ServiceAccount {
	sa, err := mock.NewServiceAccount("gateway@p1.iam.gserviceaccount.com")
	if err != nil {
		panic(err)
	}
	return sa
})

// vertexMock serves a mock that trusts testAccount and returns it with a
// vertex upstream whose base_url and token_uri point at it.
func vertexMock(t testing.TB, opts mock.Options) (*mock.Server, *httptest.Server, Upstream) {
	t.Helper()
	if opts.ServiceAccount == nil {
		opts.ServiceAccount = testAccount()
	}
	m := mock.New(opts)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv, Upstream{Name: "vx", BaseURL: srv.URL + "/v1", Vertex: &VertexSettings{
		Project: "p1", Location: "us-east5", CredentialsJSON: string(testAccount().JSON("p1", mock.TokenURI(srv.URL))),
	}}
}

const claudeBody = `{"model":"claude-sonnet-4@20250514","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

// TestVertexTokenCache: one exchange serves many concurrent requests; a
// token is replaced from five minutes before it expires, not ten seconds.
func TestVertexTokenCache(t *testing.T) {
	tests := []struct {
		name      string
		lifetime  time.Duration
		requests  int
		exchanges int64
	}{
		{"an hour's token serves every request", time.Hour, 50, 1},
		{"a token with six minutes left is kept", 6 * time.Minute, 50, 1},
		{"a token with five minutes left is replaced", 5 * time.Minute, 2, 2},
		{"a token with four minutes left is replaced", 4 * time.Minute, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, u := vertexMock(t, mock.Options{TokenLifetime: tc.lifetime})
			ep := Vertex{}.New(u)
			headers := make([]string, tc.requests)
			var wg sync.WaitGroup
			for i := range tc.requests {
				wg.Go(func() {
					req, err := ep.NewRequest(context.Background(), codec.Gemini.Op(false), "gemini-2.5-flash", []byte(geminiBody), http.Header{})
					if err != nil {
						t.Error(err)
						return
					}
					headers[i] = req.Header.Get("Authorization")
				})
			}
			wg.Wait()
			if got := m.Stats().TokensIssued; got != tc.exchanges {
				t.Errorf("%d exchanges for %d requests, want %d", got, tc.requests, tc.exchanges)
			}
			for _, h := range headers {
				if !strings.HasPrefix(h, "Bearer ya29.mock-") {
					t.Fatalf("Authorization = %q", h)
				}
			}
		})
	}
}

// TestVertexTokenExpiringUnderLoad: while requests run concurrently, a
// token about to expire is replaced once, every request is served, and the
// old token is refused by the upstream only after it has stopped being
// sent.
func TestVertexTokenExpiringUnderLoad(t *testing.T) {
	fc := clock.NewFake(time.Now())
	m, srv, u := vertexMock(t, mock.Options{TokenLifetime: 5 * time.Minute, Now: fc.Now})
	ep := Vertex{}.New(u)
	send := func(model, body string) (int, string) {
		op := codec.Gemini.Op(false)
		if strings.HasPrefix(model, "claude") {
			op = codec.Anthropic.Op(false)
		}
		req, err := ep.NewRequest(context.Background(), op, model, []byte(body), http.Header{})
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, req.Header.Get("Authorization")
	}
	_, first := send("gemini-2.5-flash", geminiBody) // a token inside the refresh window at once
	m.SetTokenLifetime(time.Hour)                    // its successor lives an hour
	const n = 40
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			model, body := "gemini-2.5-flash", geminiBody
			if i%2 == 1 {
				model, body = "claude-sonnet-4@20250514", claudeBody
			}
			statuses[i], _ = send(model, body)
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("request %d answered %d", i, s)
		}
	}
	if got := m.Stats().TokensIssued; got != 2 {
		t.Errorf("%d exchanges, want 2 (the first token and its one replacement)", got)
	}
	fc.Advance(5 * time.Minute) // the first token has expired at the upstream
	if s, h := send("gemini-2.5-flash", geminiBody); s != http.StatusOK || h == first {
		t.Errorf("after the first token expired: %d with the first token %v", s, h == first)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/publishers/google/models/gemini-2.5-flash", nil)
	req.Header.Set("Authorization", first)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the first token still works (%d): the test proves nothing", resp.StatusCode)
	}
}

// TestVertexTokenFailures: a failed exchange is ErrAuth, says why without
// the response body, and the next request tries again.
func TestVertexTokenFailures(t *testing.T) {
	stranger, err := mock.NewServiceAccount("stranger@p1.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    mock.Options
		tokenAt func(srvURL string) string
		want    string
	}{
		{"token endpoint 500", mock.Options{Behavior: mock.Behavior{TokenStatus: 500}}, nil, "token endpoint answered 500 server_error"},
		{"token endpoint 503", mock.Options{Behavior: mock.Behavior{TokenStatus: 503}}, nil, "token endpoint answered 503 server_error"},
		{"a key the endpoint does not trust", mock.Options{ServiceAccount: stranger}, nil, "token endpoint answered 400 invalid_grant"},
		{"token endpoint unreachable", mock.Options{}, func(string) string { return "http://127.0.0.1:1/token" }, "connection refused"},
		{"token endpoint not found", mock.Options{}, func(u string) string { return u + "/nowhere" }, "token endpoint answered 404"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, srv, u := vertexMock(t, tc.opts)
			if tc.tokenAt != nil {
				u.Vertex.CredentialsJSON = string(testAccount().JSON("p1", tc.tokenAt(srv.URL)))
			}
			ep := Vertex{}.New(u)
			for _, probe := range []bool{false, true} {
				var err error
				if probe {
					_, err = ep.ProbeRequest(context.Background(), "models", "gemini-2.5-flash")
				} else {
					_, err = ep.NewRequest(context.Background(), codec.Anthropic.Op(false), "claude-sonnet-4@20250514", []byte(claudeBody), http.Header{})
				}
				if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("probe %v: error = %v, want ErrAuth saying %q", probe, err, tc.want)
				}
				for _, secret := range []string{"ya29", "PRIVATE KEY", "assertion", "error_description", "mock token endpoint"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows %q", err, secret)
					}
				}
			}
			if tc.opts.Behavior.TokenStatus == 0 {
				return
			}
			m.SetBehavior(mock.Behavior{}) // the endpoint recovers: the next request exchanges again
			if _, err := ep.NewRequest(context.Background(), codec.Gemini.Op(false), "gemini-2.5-flash", []byte(geminiBody), http.Header{}); err != nil {
				t.Errorf("after recovery: %v", err)
			}
		})
	}
}

// TestVertexAgainstMock sends the adapter's requests to the mock upstream
// and classifies its answers, for both publishers, plain and streamed.
func TestVertexAgainstMock(t *testing.T) {
	tests := []struct {
		name     string
		behavior mock.Behavior
		class    outcome.Class
		cooldown time.Duration
	}{
		{"served", mock.Behavior{}, outcome.Success, 0},
		{"throttled", mock.Behavior{ForceStatus: 429}, outcome.RateLimited, time.Second},
		{"unavailable", mock.Behavior{ForceStatus: 503}, outcome.ServerError, 0},
		{"overloaded", mock.Behavior{ForceStatus: 529}, outcome.ServerError, 0},
		{"permission denied", mock.Behavior{ForceStatus: 403}, outcome.AuthError, 0},
		{"not found", mock.Behavior{ForceStatus: 404}, outcome.ClientError, 0},
	}
	calls := []struct{ model, body string }{{"gemini-2.5-flash", geminiBody}, {"claude-sonnet-4@20250514", claudeBody}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, srv, u := vertexMock(t, mock.Options{Behavior: tc.behavior})
			ep := Vertex{}.New(u)
			for _, c := range calls {
				for _, stream := range []bool{false, true} {
					op, body := codec.Gemini.Op(stream), c.body
					if ep.Family(c.model) == codec.FamilyAnthropic {
						op = codec.Anthropic.Op(stream)
						if stream {
							body = strings.Replace(body, `{`, `{"stream":true,`, 1)
						}
					}
					req, err := ep.NewRequest(context.Background(), op, c.model, []byte(body), http.Header{})
					if err != nil {
						t.Fatal(err)
					}
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if o := ep.Classify(resp.StatusCode, resp.Header, got); o.Class != tc.class || o.Cooldown != tc.cooldown {
						t.Errorf("%s stream %v: %d %s: class %v cooldown %v, want %v %v", c.model, stream, resp.StatusCode, got, o.Class, o.Cooldown, tc.class, tc.cooldown)
					}
				}
				for _, kind := range []string{"models", "chat"} {
					req, err := ep.ProbeRequest(context.Background(), kind, c.model)
					if err != nil {
						t.Fatal(err)
					}
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if want := tc.class == outcome.Success; (resp.StatusCode == http.StatusOK) != want {
						t.Errorf("%s %s probe answered %d %s", c.model, kind, resp.StatusCode, got)
					}
				}
			}
		})
	}
}
