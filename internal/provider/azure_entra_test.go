package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard/internal/mock"
)

// entraApp is the application the Entra tests' mocks trust.
var testEntraApp = mock.EntraApp{TenantID: "tenant-1", ClientID: "client-1", ClientSecret: "entra-secret", FederatedToken: "eyJ.federated"}

// isolateAzure clears the Azure environment of the test process.
func isolateAzure(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestAzureCheck(t *testing.T) {
	isolateAzure(t)
	tests := []struct {
		name string
		u    Upstream
		want []Problem
	}{
		{"an api key", Upstream{APIKey: "k"}, nil},
		{"entra with a secret", Upstream{Azure: &AzureSettings{Auth: "entra", TenantID: "t", ClientID: "c", ClientSecret: "s"}}, nil},
		{"entra with a token file", Upstream{Azure: &AzureSettings{Auth: "entra", TenantID: "t", ClientID: "c", FederatedTokenFile: "/var/run/token"}}, nil},
		{"entra with nothing", Upstream{Azure: &AzureSettings{Auth: "entra"}}, []Problem{
			{"azure.tenant_id", "required with azure.auth entra (or AZURE_TENANT_ID in the environment)"},
			{"azure.client_id", "required with azure.auth entra (or AZURE_CLIENT_ID in the environment)"},
			{"azure.client_secret", "azure.auth entra needs client_secret or federated_token_file (or AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE in the environment)"}}},
		{"entra and an api key", Upstream{APIKey: "k", Azure: &AzureSettings{Auth: "entra", TenantID: "t", ClientID: "c", ClientSecret: "s"}},
			[]Problem{{"api_key", "not used with azure.auth entra (requests carry an Entra ID token); remove it"}}},
		{"an unknown auth", Upstream{Azure: &AzureSettings{Auth: "managed"}}, []Problem{{"azure.auth", `must be api_key or entra, got "managed"`}}},
		{"entra settings without entra", Upstream{APIKey: "k", Azure: &AzureSettings{ClientID: "c"}},
			[]Problem{{"azure.auth", "the Entra ID settings need auth: entra (the default, api_key, sends api_key)"}}},
		{"a bad authority", Upstream{Azure: &AzureSettings{Auth: "entra", TenantID: "t", ClientID: "c", ClientSecret: "s", AuthorityHost: "login"}},
			[]Problem{{"azure.authority_host", `must be an absolute http(s) URL such as https://login.microsoftonline.com/, got "login"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (AzureOpenAI{}).Check(tt.u); !slices.Equal(got, tt.want) {
				t.Errorf("Check = %v, want %v", got, tt.want)
			}
		})
	}
	if ps := ForeignSettings(NameOpenAI, Upstream{Azure: &AzureSettings{}}); len(ps) != 1 || ps[0].Field != "azure" {
		t.Errorf("ForeignSettings = %v", ps)
	}
}

// TestAzureEntra: an azure-openai upstream with auth entra sends the token
// the mock's Entra endpoint issued, got with a client secret or a
// federated token (from the settings or the environment), and no api-key;
// a token due within five minutes is replaced.
func TestAzureEntra(t *testing.T) {
	tests := []struct {
		name      string
		lifetime  time.Duration
		settings  func(t *testing.T, authority string) AzureSettings
		exchanges int64
	}{
		{"a client secret", time.Hour, func(_ *testing.T, authority string) AzureSettings {
			return AzureSettings{Auth: "entra", TenantID: "tenant-1", ClientID: "client-1", ClientSecret: "entra-secret", AuthorityHost: authority}
		}, 1},
		{"workload identity from the environment", time.Hour, func(t *testing.T, authority string) AzureSettings {
			t.Setenv("AZURE_TENANT_ID", "tenant-1")
			t.Setenv("AZURE_CLIENT_ID", "client-1")
			t.Setenv("AZURE_FEDERATED_TOKEN_FILE", writeFile(t, t.TempDir(), "token", "eyJ.federated\n"))
			t.Setenv("AZURE_AUTHORITY_HOST", authority)
			return AzureSettings{Auth: "entra"}
		}, 1},
		{"a token due within five minutes", 4 * time.Minute, func(_ *testing.T, authority string) AzureSettings {
			return AzureSettings{Auth: "entra", TenantID: "tenant-1", ClientID: "client-1", ClientSecret: "entra-secret", AuthorityHost: authority}
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateAzure(t)
			app := testEntraApp
			m := mock.New(mock.Options{APIKey: "azure-key", Entra: &app, TokenLifetime: tt.lifetime})
			srv := httptest.NewServer(m)
			t.Cleanup(srv.Close)
			a := tt.settings(t, srv.URL)
			u := Upstream{Name: "az", BaseURL: srv.URL, Azure: &a}
			if ps := (AzureOpenAI{}).Check(u); len(ps) > 0 {
				t.Fatalf("Check = %v", ps)
			}
			ep := AzureOpenAI{}.New(u)
			for range 3 {
				req, err := ep.NewRequest(context.Background(), "chat/completions", "gpt-4o", chatProbeBody("gpt-4o"), http.Header{})
				if err != nil {
					t.Fatal(err)
				}
				if req.Header.Get("Api-Key") != "" || !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
					t.Fatalf("headers %v", req.Header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			if got := m.EntraTokensIssued(); got != tt.exchanges {
				t.Errorf("%d Entra tokens issued for 3 requests, want %d", got, tt.exchanges)
			}
		})
	}
}

// TestAzureEntraRefused: a refused exchange fails the request with
// ErrAuth, naming Entra's error code but no secret; the mock refuses a
// token it did not issue.
func TestAzureEntraRefused(t *testing.T) {
	isolateAzure(t)
	app := testEntraApp
	srv := httptest.NewServer(mock.New(mock.Options{Entra: &app}))
	t.Cleanup(srv.Close)
	ep := AzureOpenAI{}.New(Upstream{Name: "az", BaseURL: srv.URL, Azure: &AzureSettings{Auth: "entra", TenantID: "tenant-1", ClientID: "client-1",
		ClientSecret: "wrong-secret", AuthorityHost: srv.URL}})
	_, err := ep.NewRequest(context.Background(), "chat/completions", "gpt-4o", chatProbeBody("gpt-4o"), http.Header{})
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("error = %v, want ErrAuth with invalid_client and no secret", err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", strings.NewReader(`{"messages":[]}`))
	req.Header.Set("Authorization", "Bearer forged")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged token got %d, want 401", resp.StatusCode)
	}
}
