package mock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestSessionTokenChecked: with AWSSessionToken set, a signature made
// with the right keys passes only with that token, signed.
func TestSessionTokenChecked(t *testing.T) {
	srv := httptest.NewServer(New(Options{AWSAccessKeyID: "ASIAKEY", AWSSecretAccessKey: "secret", AWSSessionToken: "session"}))
	t.Cleanup(srv.Close)
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	send := func(session string, addUnsigned string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/model/m/converse", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		sum := sha256.Sum256(body)
		creds := aws.Credentials{AccessKeyID: "ASIAKEY", SecretAccessKey: "secret", SessionToken: session}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		if addUnsigned != "" {
			req.Header.Set("X-Amz-Security-Token", addUnsigned)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, session, unsigned string
		want                    int
	}{
		{"the session token, signed", "session", "", 200},
		{"no session token", "", "", 403},
		{"another session token", "other", "", 403},
		{"the session token, unsigned", "", "session", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := send(tt.session, tt.unsigned); got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
}

// TestPlatformTokenEndpoints: the metadata server answers only with
// Metadata-Flavor: Google; Entra's endpoint grants only the configured
// application, for the Azure OpenAI scope.
func TestPlatformTokenEndpoints(t *testing.T) {
	app := EntraApp{TenantID: "t1", ClientID: "c1", ClientSecret: "s1", FederatedToken: "fed"}
	srv := httptest.NewServer(New(Options{Entra: &app}))
	t.Cleanup(srv.Close)
	get := func(flavor string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/computeMetadata/v1/instance/service-accounts/default/token", nil)
		if flavor != "" {
			req.Header.Set("Metadata-Flavor", flavor)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(""); got != http.StatusForbidden {
		t.Errorf("metadata without Metadata-Flavor: %d, want 403", got)
	}
	if got := get("Google"); got != 200 {
		t.Errorf("metadata with Metadata-Flavor: %d, want 200", got)
	}
	grant := func(tenant string, f url.Values) int {
		resp, err := http.PostForm(srv.URL+"/"+tenant+"/oauth2/v2.0/token", f)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	form := func(kv ...string) url.Values {
		f := url.Values{"grant_type": {"client_credentials"}, "client_id": {"c1"}, "scope": {EntraScope}}
		for i := 0; i < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	tests := []struct {
		name   string
		tenant string
		form   url.Values
		want   int
	}{
		{"a client secret", "t1", form("client_secret", "s1"), 200},
		{"a federated token", "t1", form("client_assertion_type", clientAssertionType, "client_assertion", "fed"), 200},
		{"a wrong secret", "t1", form("client_secret", "s2"), 401},
		{"another tenant", "t2", form("client_secret", "s1"), 400},
		{"another scope", "t1", form("client_secret", "s1", "scope", "https://management.azure.com/.default"), 400},
		{"another client", "t1", form("client_secret", "s1", "client_id", "c2"), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := grant(tt.tenant, tt.form); got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
}
