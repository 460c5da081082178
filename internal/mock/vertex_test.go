package mock

import (
	"context"
	"crypto/rsa"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2/google"
	"golang.org/x/oauth2/jws"

	"switchyard/internal/clock"
)

const (
	vertexPrefix     = "/v1/projects/p1/locations/us-east5/publishers/"
	vertexClaudeBody = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	vertexScope      = "https://www.googleapis.com/auth/cloud-platform"
)

// testAccount is one service account for all the tests of the package:
// a 2048-bit key takes a while to make.
var testAccount = sync.OnceValue(func() *ServiceAccount {
	sa, err := NewServiceAccount("gateway@p1.iam.gserviceaccount.com")
	if err != nil {
		panic(err)
	}
	return sa
})

// vertexServed serves a mock that trusts testAccount, on clock fc (nil:
// the wall clock) for its tokens.
func vertexServed(t *testing.T, opts Options, fc *clock.Fake) (*Server, string) {
	t.Helper()
	opts.ServiceAccount = testAccount()
	if fc != nil {
		opts.Now = fc.Now
	}
	return newServed(t, opts)
}

// vertexToken exchanges testAccount's assertion at the mock with Google's
// own JWT client, as the gateway does.
func vertexToken(t *testing.T, base string) string {
	t.Helper()
	cfg, err := google.JWTConfigFromJSON(testAccount().JSON("p1", TokenURI(base)), vertexScope)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatalf("exchanging the assertion: %v", err)
	}
	return tok.AccessToken
}

// assertion is a JWT assertion signed by key with the given claims.
func assertion(t testing.TB, key *rsa.PrivateKey, iss, aud, scope string, exp time.Time) string {
	t.Helper()
	a, err := jws.Encode(&jws.Header{Algorithm: "RS256", Typ: "JWT"},
		&jws.ClaimSet{Iss: iss, Aud: aud, Scope: scope, Iat: exp.Add(-time.Hour).Unix(), Exp: exp.Unix()}, key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// directToken has s issue testAccount a token without a network (the
// handler sees host example.com).
func directToken(t testing.TB, s *Server) string {
	t.Helper()
	const uri = "http://example.com" + tokenPath
	form := url.Values{"grant_type": {jwtBearerGrant}, "assertion": {assertion(t, testAccount().Key, testAccount().Email, uri, vertexScope, time.Now().Add(time.Hour))}}
	res := direct(s, http.MethodPost, tokenPath, form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if res.status != http.StatusOK {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	return res.get("access_token").String()
}

func TestVertexTokenEndpoint(t *testing.T) {
	fc := clock.NewFake(time.Now())
	other, err := NewServiceAccount("other@p1.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	sa := testAccount()
	form := func(grant, a string) string {
		return url.Values{"grant_type": {grant}, "assertion": {a}}.Encode()
	}
	later := fc.Now().Add(time.Hour)
	tests := []struct {
		name     string
		noSA     bool
		behavior Behavior
		method   string
		body     func(aud string) string
		status   int
		errCode  string // "" = a token
	}{
		{"valid", false, Behavior{}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, aud, vertexScope, later))
		}, 200, ""},
		{"wrong grant", false, Behavior{}, "POST", func(aud string) string { return form("client_credentials", "x") }, 400, "unsupported_grant_type"},
		{"not a JWT", false, Behavior{}, "POST", func(aud string) string { return form(jwtBearerGrant, "abc") }, 400, "invalid_request"},
		{"signed by another key", false, Behavior{}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, other.Key, sa.Email, aud, vertexScope, later))
		}, 400, "invalid_grant"},
		{"another issuer", false, Behavior{}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, other.Email, aud, vertexScope, later))
		}, 400, "invalid_grant"},
		{"wrong audience", false, Behavior{}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, "https://oauth2.googleapis.com/token", vertexScope, later))
		}, 400, "invalid_grant"},
		{"expired", false, Behavior{}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, aud, vertexScope, fc.Now().Add(-time.Second)))
		}, 400, "invalid_grant"},
		{"no scope", false, Behavior{}, "POST", func(aud string) string { return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, aud, "", later)) }, 400, "invalid_scope"},
		{"no service account", true, Behavior{}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, aud, vertexScope, later))
		}, 400, "invalid_grant"},
		{"GET", false, Behavior{}, "GET", func(string) string { return "" }, 405, "invalid_request"},
		{"forced invalid_grant", false, Behavior{TokenStatus: 400}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, aud, vertexScope, later))
		}, 400, "invalid_grant"},
		{"forced server error", false, Behavior{TokenStatus: 503}, "POST", func(aud string) string {
			return form(jwtBearerGrant, assertion(t, sa.Key, sa.Email, aud, vertexScope, later))
		}, 503, "server_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Behavior: tt.behavior, TokenLifetime: 30 * time.Minute, Now: fc.Now}
			if !tt.noSA {
				opts.ServiceAccount = sa
			}
			s, base := newServed(t, opts)
			res := do(t, tt.method, TokenURI(base), tt.body(TokenURI(base)), "Content-Type", "application/x-www-form-urlencoded")
			if res.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.status, res.body)
			}
			st := s.Stats()
			if tt.errCode != "" {
				if got := res.get("error").String(); got != tt.errCode || res.get("error_description").String() == "" || st.TokensRefused != 1 || st.TokensIssued != 0 {
					t.Errorf("answer %s, stats %d issued %d refused; want error %s", res.body, st.TokensIssued, st.TokensRefused, tt.errCode)
				}
				return
			}
			tok := res.get("access_token").String()
			if !strings.HasPrefix(tok, "ya29.") || res.get("expires_in").Int() != 1800 || res.get("token_type").String() != "Bearer" || st.TokensIssued != 1 {
				t.Errorf("answer %s, %d issued", res.body, st.TokensIssued)
			}
			if st.Requests != 0 {
				t.Errorf("the token endpoint counted as %d API requests", st.Requests)
			}
		})
	}
}

func TestVertexAuth(t *testing.T) {
	fc := clock.NewFake(time.Now())
	s, base := vertexServed(t, Options{TokenLifetime: 10 * time.Minute}, fc)
	tok := vertexToken(t, base)
	if got := s.Stats().TokensIssued; got != 1 {
		t.Fatalf("%d tokens issued, want 1", got)
	}
	gemini := vertexPrefix + "google/models/gemini-2.5-flash:generateContent"
	claude := vertexPrefix + "anthropic/models/claude-sonnet-4@20250514:rawPredict"
	tests := []struct {
		name    string
		advance time.Duration // the token clock moves before the request
		path    string
		body    string
		header  []string
		status  int
		reason  string // the ErrorInfo reason of a 401
	}{
		{"gemini with the token", 0, gemini, geminiBody, []string{"Authorization", "Bearer " + tok}, 200, ""},
		{"claude with the token", 0, claude, vertexClaudeBody, []string{"Authorization", "Bearer " + tok}, 200, ""},
		{"no token", 0, gemini, geminiBody, nil, 401, "CREDENTIALS_MISSING"},
		{"an API key is no token", 0, gemini, geminiBody, []string{"x-goog-api-key", "g-key"}, 401, "CREDENTIALS_MISSING"},
		{"a token the mock never issued", 0, claude, vertexClaudeBody, []string{"Authorization", "Bearer ya29.forged"}, 401, "ACCESS_TOKEN_TYPE_UNSUPPORTED"},
		{"a second before expiry", 10*time.Minute - time.Second, claude, vertexClaudeBody, []string{"Authorization", "Bearer " + tok}, 200, ""},
		{"at expiry", time.Second, gemini, geminiBody, []string{"Authorization", "Bearer " + tok}, 401, "ACCESS_TOKEN_EXPIRED"},
		{"expired, claude", 0, claude, vertexClaudeBody, []string{"Authorization", "Bearer " + tok}, 401, "ACCESS_TOKEN_EXPIRED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc.Advance(tt.advance)
			res := do(t, "POST", base+tt.path, tt.body, tt.header...)
			if res.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.status, res.body)
			}
			if tt.status == 401 && (res.get("error.status").String() != "UNAUTHENTICATED" || res.get("error.details.0.reason").String() != tt.reason) {
				t.Errorf("answer %s, want UNAUTHENTICATED %s in Google's shape", res.body, tt.reason)
			}
		})
	}
}
