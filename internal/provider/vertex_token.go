package provider

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// Token refresh and exchange bounds.
const (
	// tokenRefreshEarly is how long before its expiry a cached access
	// token is replaced: a request never leaves with a token about to
	// lapse on its way, and one slow exchange does not stall traffic.
	tokenRefreshEarly = 5 * time.Minute
	// tokenExchangeTimeout bounds one token exchange; requests that need
	// the token wait for it.
	tokenExchangeTimeout = 10 * time.Second
)

// serviceAccountKey is what Switchyard reads of a service-account key.
type serviceAccountKey struct {
	Type        string `json:"type"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
	TokenURI    string `json:"token_uri"`
}

// serviceAccountJSON returns the service-account key of v, checked, or
// the field at fault and what is wrong with it. No error echoes the key.
func serviceAccountJSON(v VertexSettings) (data []byte, field string, err error) {
	switch {
	case v.CredentialsFile != "" && v.CredentialsJSON != "":
		return nil, "vertex.credentials_json", errors.New("set either credentials_file or credentials_json, not both")
	case v.CredentialsFile != "":
		field = "vertex.credentials_file"
		if data, err = os.ReadFile(v.CredentialsFile); err != nil {
			return nil, field, fmt.Errorf("reading the service-account key: %w", err)
		}
	case v.CredentialsJSON != "":
		field, data = "vertex.credentials_json", []byte(v.CredentialsJSON)
	default:
		return nil, "vertex", errors.New("credentials_file or credentials_json (a service-account JSON key) is required")
	}
	if err := checkServiceAccount(data); err != nil {
		return nil, field, err
	}
	return data, field, nil
}

// checkServiceAccount checks that data is a service-account key whose
// private key parses and whose token_uri is an http(s) URL.
func checkServiceAccount(data []byte) error {
	var k serviceAccountKey
	if err := json.Unmarshal(data, &k); err != nil {
		return errors.New("is not a service-account JSON key: not a JSON object with string fields")
	}
	switch {
	case k.Type != "service_account":
		return fmt.Errorf("is not a service-account key: type must be \"service_account\", got %q", k.Type)
	case k.ClientEmail == "":
		return errors.New("is not a service-account key: client_email is missing")
	case k.PrivateKey == "":
		return errors.New("is not a service-account key: private_key is missing")
	case k.TokenURI == "":
		return errors.New("is not a service-account key: token_uri is missing")
	}
	if !isRSAKey([]byte(k.PrivateKey)) {
		return errors.New("private_key is not a PEM-encoded RSA private key (PKCS #8 or PKCS #1)")
	}
	if u, err := url.Parse(k.TokenURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("token_uri must be an absolute http(s) URL, got %q", k.TokenURI)
	}
	return nil
}

// isRSAKey reports whether pemKey holds an RSA private key, as Google's
// JWT signer reads it.
func isRSAKey(pemKey []byte) bool {
	block, _ := pem.Decode(pemKey)
	if block == nil {
		return false
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		_, ok := k.(*rsa.PrivateKey)
		return ok
	}
	_, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	return err == nil
}

// tokenSource hands out one upstream's access token as an Authorization
// value. Its oauth2 source caches the token and exchanges a new one
// tokenRefreshEarly before it expires, one exchange at a time: requests
// that need it meanwhile wait for that exchange. It is safe for concurrent
// use.
type tokenSource struct {
	src  oauth2.TokenSource // nil when err is set
	err  error              // why the credentials cannot be used (wraps ErrAuth)
	what string             // whose token, for errors: "" is the service account's
	last atomic.Pointer[bearerValue]
}

// bearerValue is the Authorization value of one token, built once.
type bearerValue struct {
	tok    *oauth2.Token
	header []string
}

// newTokenSource returns the token source of v's service account, whose
// exchanges go over rt (nil: http.DefaultTransport).
//
// It is built on google.JWTConfigFromJSON, which takes service-account
// keys only, rather than the deprecated CredentialsFromJSON, which would
// also accept an external_account configuration from the config file (one
// that runs a program or fetches a URL to get its credentials).
//
// With neither credentials_file nor credentials_json it is the Application
// Default Credentials' (newADCTokenSource).
func newTokenSource(v VertexSettings, rt http.RoundTripper) *tokenSource {
	if v.CredentialsFile == "" && v.CredentialsJSON == "" {
		return newADCTokenSource(rt)
	}
	data, _, err := serviceAccountJSON(v)
	if err != nil {
		return &tokenSource{err: fmt.Errorf("%w: service account: %v", ErrAuth, err)}
	}
	cfg, err := google.JWTConfigFromJSON(data, VertexScope)
	if err != nil {
		return &tokenSource{err: fmt.Errorf("%w: service account: %v", ErrAuth, err)}
	}
	// The exchange's HTTP client travels in the context the library keeps.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: rt, Timeout: tokenExchangeTimeout})
	return &tokenSource{src: oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(ctx), tokenRefreshEarly)}
}

// header returns the Authorization value of a valid token, exchanging one
// when the cached token is missing or due. Its error wraps ErrAuth and
// holds no token, key or response body.
func (s *tokenSource) header() ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	tok, err := s.src.Token()
	if err != nil {
		what := s.what
		if what == "" {
			what = "the service account"
		}
		return nil, fmt.Errorf("%w: getting a token of %s: %s", ErrAuth, what, tokenError(err))
	}
	if b := s.last.Load(); b != nil && b.tok == tok {
		return b.header, nil
	}
	b := &bearerValue{tok: tok, header: []string{"Bearer " + tok.AccessToken}}
	s.last.Store(b)
	return b.header, nil
}

// tokenError says why an exchange failed without the response body (it
// may echo the assertion or a token): the token endpoint's status and
// OAuth2 error code (invalid_grant), or the library's own error.
func tokenError(err error) string {
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.Response != nil {
		msg := "token endpoint answered " + strconv.Itoa(re.Response.StatusCode)
		code := re.ErrorCode
		if code == "" {
			code = gjson.GetBytes(re.Body, "error").String()
		}
		if isOAuthErrorCode(code) {
			msg += " " + code
		}
		return msg
	}
	// The library's other errors name the token URL and the transport's
	// or the JSON decoder's complaint, never a token or the key.
	return err.Error()
}

// isOAuthErrorCode reports whether s looks like an RFC 6749 error code
// (invalid_grant): lowercase letters and '_'.
func isOAuthErrorCode(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_') {
			return false
		}
	}
	return true
}
