package mock

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// tokenPath is the OAuth2 token endpoint's path.
const tokenPath = "/token"

// jwtBearerGrant is the grant_type of a service account's exchange
// (RFC 7523).
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// DefaultTokenLifetime is the lifetime of the access tokens a mock issues
// when Options.TokenLifetime is 0, as Google's.
const DefaultTokenLifetime = time.Hour

// tokens are the access tokens a mock has issued.
type tokens struct {
	now      func() time.Time
	account  *ServiceAccount
	lifetime atomic.Int64 // time.Duration of the next tokens
	issued   atomic.Int64
	refused  atomic.Int64

	mu      sync.Mutex // guards expires
	expires map[string]time.Time
}

func newTokens(now func() time.Time, account *ServiceAccount, lifetime time.Duration) *tokens {
	t := &tokens{now: now, account: account, expires: map[string]time.Time{}}
	if lifetime <= 0 {
		lifetime = DefaultTokenLifetime
	}
	t.lifetime.Store(int64(lifetime))
	return t
}

// SetTokenLifetime sets the lifetime (expires_in) of the access tokens
// issued from now on; d ≤ 0 restores DefaultTokenLifetime.
func (s *Server) SetTokenLifetime(d time.Duration) {
	if d <= 0 {
		d = DefaultTokenLifetime
	}
	s.tokens.lifetime.Store(int64(d))
}

// issue returns a new access token and its lifetime.
func (t *tokens) issue() (string, time.Duration) {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	tok := "ya29.mock-" + hex.EncodeToString(b)
	life := time.Duration(t.lifetime.Load())
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, exp := range t.expires { // forget tokens long expired
		if now.Sub(exp) > time.Hour {
			delete(t.expires, k)
		}
	}
	t.expires[tok] = now.Add(life)
	t.issued.Add(1)
	return tok, life
}

// check returns "" when tok is a token the mock issued that has not
// expired, else Google's ErrorInfo reason for it.
func (t *tokens) check(tok string) string {
	t.mu.Lock()
	exp, ok := t.expires[tok]
	t.mu.Unlock()
	switch {
	case !ok:
		return "ACCESS_TOKEN_TYPE_UNSUPPORTED"
	case !t.now().Before(exp):
		return "ACCESS_TOKEN_EXPIRED"
	}
	return ""
}

// serveToken answers POST /token: the JWT bearer grant of the configured
// service account. The assertion must be an RS256 JWT signed by its key,
// issued by its email, for the cloud-platform scope (or any), with aud the
// token endpoint's own URL and exp in the future by Options.Now. The
// answer is Google's: {"access_token","expires_in","token_type"}, or 400
// {"error":"invalid_grant","error_description"}.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.tokenError(w, http.StatusMethodNotAllowed, "invalid_request", "Method "+r.Method+" is not allowed; use POST")
		return
	}
	if st := s.Behavior().TokenStatus; st != 0 {
		code := "server_error"
		if st == http.StatusBadRequest || st == http.StatusUnauthorized {
			code = "invalid_grant"
		}
		s.tokenError(w, st, code, "mock token endpoint answered "+strconv.Itoa(st))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "The request body is not a form.")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != jwtBearerGrant {
		s.tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+gt)
		return
	}
	if code, msg := s.checkAssertion(r.PostForm.Get("assertion"), requestURL(r)); code != "" {
		s.tokenError(w, http.StatusBadRequest, code, msg)
		return
	}
	tok, life := s.tokens.issue()
	data, _ := json.Marshal(obj{"access_token": tok, "expires_in": int64(life / time.Second), "token_type": "Bearer"})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(data)
}

// requestURL is the URL r was sent to, as a client names it in aud.
func requestURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.Path
}

// checkAssertion verifies a JWT assertion for audience aud; it returns the
// OAuth2 error code and description of a refusal, or "".
func (s *Server) checkAssertion(assertion, aud string) (code, msg string) {
	const badSig = "Invalid JWT Signature."
	sa := s.tokens.account
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "invalid_request", "The assertion is not a JWT."
	}
	if sa == nil {
		return "invalid_grant", "Invalid grant: account not found"
	}
	header, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	claims, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || !gjson.ValidBytes(header) || !gjson.ValidBytes(claims) {
		return "invalid_request", "The assertion is not a JWT."
	}
	if alg := gjson.GetBytes(header, "alg").String(); alg != "RS256" {
		return "invalid_grant", badSig
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&sa.Key.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		return "invalid_grant", badSig
	}
	c := gjson.ParseBytes(claims)
	switch {
	case c.Get("iss").String() != sa.Email:
		return "invalid_grant", "Invalid grant: account not found"
	case c.Get("aud").String() != aud:
		return "invalid_grant", "Invalid JWT: Failed audience check. The right audience is " + aud
	case c.Get("exp").Type != gjson.Number || !s.tokens.now().Before(time.Unix(c.Get("exp").Int(), 0)):
		return "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	case c.Get("scope").String() == "":
		return "invalid_scope", "Invalid OAuth scope or ID token audience provided."
	}
	return "", ""
}

// tokenError answers an OAuth2 error (RFC 6749 §5.2) and counts it.
func (s *Server) tokenError(w http.ResponseWriter, status int, code, msg string) {
	s.tokens.refused.Add(1)
	data, _ := json.Marshal(obj{"error": code, "error_description": msg})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// authenticateVertex checks a Vertex request's Authorization: Bearer
// token and answers Google's 401 UNAUTHENTICATED when it is missing, not
// one the mock issued, or expired.
func (c *call) authenticateVertex() bool {
	tok, ok := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
	reason := "CREDENTIALS_MISSING"
	msg := "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	if ok && tok != "" {
		if reason = c.s.tokens.check(tok); reason == "" {
			return true
		}
		msg = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	}
	c.fail(apiError{status: http.StatusUnauthorized, message: msg, details: []obj{{
		"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "googleapis.com",
		"metadata": obj{"service": "aiplatform.googleapis.com", "method": "google.cloud.aiplatform.v1.PredictionService.GenerateContent"},
	}}})
	return false
}
