package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Entra ID constants.
const (
	// AzureAuthEntra is azure.auth's value for Entra ID tokens.
	AzureAuthEntra = "entra"
	// AzureAuthAPIKey is azure.auth's default: the api-key header.
	AzureAuthAPIKey = "api_key"
	// EntraScope is the scope of Azure OpenAI's access tokens.
	EntraScope = "https://cognitiveservices.azure.com/.default"
	// DefaultAuthorityHost is Entra ID's public cloud token service.
	DefaultAuthorityHost = "https://login.microsoftonline.com/"
	// clientAssertionType names a federated token sent as the client assertion.
	clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// entraApp is an Azure block with the environment's defaults filled in.
type entraApp struct {
	tenant, client, secret, tokenFile, authority string
}

// resolveEntra fills a's empty fields from the environment, as Azure's
// SDKs read it (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET,
// AZURE_FEDERATED_TOKEN_FILE, AZURE_AUTHORITY_HOST).
func resolveEntra(a AzureSettings) entraApp {
	or := func(v, env string) string {
		if v != "" {
			return v
		}
		return os.Getenv(env)
	}
	e := entraApp{
		tenant: or(a.TenantID, "AZURE_TENANT_ID"), client: or(a.ClientID, "AZURE_CLIENT_ID"),
		secret: or(a.ClientSecret, "AZURE_CLIENT_SECRET"), tokenFile: or(a.FederatedTokenFile, "AZURE_FEDERATED_TOKEN_FILE"),
		authority: or(a.AuthorityHost, "AZURE_AUTHORITY_HOST"),
	}
	if e.authority == "" {
		e.authority = DefaultAuthorityHost
	}
	return e
}

// tokenURL is the tenant's OAuth2 v2.0 token endpoint.
func (e entraApp) tokenURL() string {
	return strings.TrimRight(e.authority, "/") + "/" + url.PathEscape(e.tenant) + "/oauth2/v2.0/token"
}

// checkAzure returns the problems of an azure block.
func checkAzure(u Upstream) []Problem {
	a := u.Azure
	if a == nil || a.Auth == "" || a.Auth == AzureAuthAPIKey {
		ps := requireKey(NameAzureOpenAI, u)
		if a != nil && (a.TenantID != "" || a.ClientID != "" || a.ClientSecret != "" || a.FederatedTokenFile != "" || a.AuthorityHost != "") {
			ps = append(ps, Problem{Field: "azure.auth", Message: `the Entra ID settings need auth: entra (the default, api_key, sends api_key)`})
		}
		return ps
	}
	if a.Auth != AzureAuthEntra {
		return []Problem{{Field: "azure.auth", Message: fmt.Sprintf("must be api_key or entra, got %q", a.Auth)}}
	}
	var ps []Problem
	if u.APIKey != "" {
		ps = append(ps, Problem{Field: "api_key", Message: "not used with azure.auth entra (requests carry an Entra ID token); remove it"})
	}
	e := resolveEntra(*a)
	if e.tenant == "" {
		ps = append(ps, Problem{Field: "azure.tenant_id", Message: "required with azure.auth entra (or AZURE_TENANT_ID in the environment)"})
	}
	if e.client == "" {
		ps = append(ps, Problem{Field: "azure.client_id", Message: "required with azure.auth entra (or AZURE_CLIENT_ID in the environment)"})
	}
	if e.secret == "" && e.tokenFile == "" {
		ps = append(ps, Problem{Field: "azure.client_secret", Message: "azure.auth entra needs client_secret or federated_token_file (or AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE in the environment)"})
	}
	if h, err := url.Parse(e.authority); err != nil || (h.Scheme != "https" && h.Scheme != "http") || h.Host == "" {
		ps = append(ps, Problem{Field: "azure.authority_host", Message: fmt.Sprintf("must be an absolute http(s) URL such as %s, got %q", DefaultAuthorityHost, e.authority)})
	}
	return ps
}

// entraSource exchanges the client credentials of app for a token, once
// per call: tokenSource's cache decides when.
type entraSource struct {
	app entraApp
	ctx context.Context // carries the exchange's HTTP client (oauth2.HTTPClient), not a deadline
}

var _ oauth2.TokenSource = (*entraSource)(nil)

// Token makes one exchange: with the client secret, else with the
// federated token file's current content as the client assertion.
func (s *entraSource) Token() (*oauth2.Token, error) {
	cfg := clientcredentials.Config{ClientID: s.app.client, ClientSecret: s.app.secret, TokenURL: s.app.tokenURL(),
		Scopes: []string{EntraScope}, AuthStyle: oauth2.AuthStyleInParams}
	if s.app.secret == "" {
		data, err := os.ReadFile(s.app.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading the federated token file: %w", err)
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return nil, errors.New("the federated token file is empty")
		}
		cfg.EndpointParams = url.Values{"client_assertion_type": {clientAssertionType}, "client_assertion": {tok}}
	}
	return cfg.Token(s.ctx)
}

// newEntraTokenSource returns the Entra ID token source of a, whose
// exchanges go over rt (nil: http.DefaultTransport); tokens are kept and
// replaced tokenRefreshEarly before they expire.
func newEntraTokenSource(a AzureSettings, rt http.RoundTripper) *tokenSource {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: rt, Timeout: tokenExchangeTimeout})
	src := &entraSource{app: resolveEntra(a), ctx: ctx}
	return &tokenSource{src: oauth2.ReuseTokenSourceWithExpiry(nil, src, tokenRefreshEarly), what: "Entra ID"}
}

var _ CredentialSourcer = AzureOpenAI{}

// CredentialSource says how u authenticates: its api_key, or Entra ID
// tokens of which application, tenant and grant.
func (AzureOpenAI) CredentialSource(u Upstream) string {
	if u.Azure == nil || u.Azure.Auth != AzureAuthEntra {
		return "api-key header with api_key"
	}
	e := resolveEntra(*u.Azure)
	how := "client secret"
	if e.secret == "" {
		how = "workload identity (federated token file " + e.tokenFile + ")"
	}
	return "Entra ID tokens of application " + e.client + " in tenant " + e.tenant + " by " + how + " from " + e.tokenURL()
}
