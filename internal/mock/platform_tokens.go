package mock

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The platforms' token services a mock stands in for, besides Google's
// OAuth2 token endpoint (serveToken):
//
//	GET  /computeMetadata/v1/instance/service-accounts/default/token  the GCE/GKE metadata server's access token
//	GET  /computeMetadata/v1/project/project-id                       its project
//	POST /{tenant}/oauth2/v2.0/token                                  Microsoft Entra ID's client credentials grant
//
// A metadata token is one of the Vertex access tokens (authenticateVertex
// accepts it until it expires); an Entra token is accepted as Azure
// OpenAI's Authorization: Bearer when Options.Entra is set.
const (
	metadataPrefix   = "/computeMetadata/v1/"
	entraTokenSuffix = "/oauth2/v2.0/token"
	// EntraScope is the scope an Azure OpenAI token is asked for.
	EntraScope = "https://cognitiveservices.azure.com/.default"
	// clientAssertionType is a federated credential's client_assertion_type.
	clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// EntraApp is the Microsoft Entra ID application whose tokens a mock's
// Azure OpenAI paths accept. Its token endpoint (POST
// /{TenantID}/oauth2/v2.0/token) grants client credentials for
// ClientID proven by ClientSecret, or by FederatedToken as the
// client_assertion (workload identity), whichever is set.
type EntraApp struct {
	TenantID, ClientID string
	ClientSecret       string
	FederatedToken     string
}

// isPlatformTokenPath reports whether p is one of the platforms' token services.
func isPlatformTokenPath(p string) bool {
	return strings.HasPrefix(p, metadataPrefix) || strings.HasSuffix(p, entraTokenSuffix)
}

// servePlatformToken answers the platforms' token services.
func (s *Server) servePlatformToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, metadataPrefix) {
		s.serveMetadata(w, r)
		return
	}
	s.serveEntraToken(w, r)
}

// serveMetadata answers the metadata server's token and project id, to
// requests with Metadata-Flavor: Google only, as GCE's does.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Metadata-Flavor", "Google")
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	switch strings.TrimPrefix(r.URL.Path, metadataPrefix) {
	case "instance/service-accounts/default/token":
		tok, life := s.tokens.issue()
		writeJSON(w, obj{"access_token": tok, "expires_in": int64(life / time.Second), "token_type": "Bearer"})
	case "project/project-id":
		_, _ = w.Write([]byte("mock-project"))
	default:
		http.NotFound(w, r)
	}
}

// serveEntraToken grants Options.Entra's client credentials: the tenant of
// the path, client_id, the scope EntraScope, and the client secret or the
// federated token as a client assertion. The refusal is Entra's 400 or 401
// {"error","error_description"}, which never echoes a secret.
func (s *Server) serveEntraToken(w http.ResponseWriter, r *http.Request) {
	app := s.entraApp
	if r.Method != http.MethodPost || app == nil {
		http.NotFound(w, r)
		return
	}
	if status, code, msg := checkEntraGrant(app, r); status != 0 {
		s.entra.refused.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		data, _ := json.Marshal(obj{"error": code, "error_description": msg})
		_, _ = w.Write(data)
		return
	}
	tok, life := s.entra.issue()
	writeJSON(w, obj{"access_token": tok, "expires_in": int64(life / time.Second), "ext_expires_in": int64(life / time.Second), "token_type": "Bearer"})
}

// checkEntraGrant returns the status, error code and message of a
// refused client credentials grant, or 0.
func checkEntraGrant(app *EntraApp, r *http.Request) (int, string, string) {
	if err := r.ParseForm(); err != nil {
		return http.StatusBadRequest, "invalid_request", "AADSTS900144: The request body must contain the following parameter: 'grant_type'."
	}
	f := r.PostForm
	equal := func(a, b string) bool { return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	switch {
	case strings.TrimSuffix(r.URL.Path, entraTokenSuffix) != "/"+app.TenantID:
		return http.StatusBadRequest, "invalid_tenant", "AADSTS90002: Tenant not found."
	case f.Get("grant_type") != "client_credentials":
		return http.StatusBadRequest, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type."
	case f.Get("client_id") != app.ClientID:
		return http.StatusBadRequest, "unauthorized_client", "AADSTS700016: Application was not found in the directory."
	case f.Get("scope") != EntraScope:
		return http.StatusBadRequest, "invalid_scope", "AADSTS70011: The provided value for the input parameter 'scope' is not valid."
	case equal(f.Get("client_secret"), app.ClientSecret):
	case f.Get("client_assertion_type") == clientAssertionType && equal(f.Get("client_assertion"), app.FederatedToken):
	default:
		return http.StatusUnauthorized, "invalid_client", "AADSTS7000215: Invalid client secret or assertion provided."
	}
	return 0, "", ""
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(data)
}

// authenticateEntra checks an Azure OpenAI request's Entra token when
// Options.Entra is set: an Authorization: Bearer token the mock's Entra
// endpoint issued and that has not expired (401 otherwise, Azure's
// wording); the api-key header is checked as usual instead when there is
// no bearer token. It reports whether the request was settled (passed is
// then whether it may go on).
func (c *call) authenticateEntra() (settled, passed bool) {
	if c.s.entraApp == nil || !strings.HasPrefix(c.r.URL.Path, "/openai/") {
		return false, false
	}
	tok, ok := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false, false
	}
	if c.s.entra.check(tok) == "" {
		return true, true
	}
	e := statusError(protoOpenAI, http.StatusUnauthorized, "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.")
	e.code = "PermissionDenied"
	c.fail(e)
	return true, false
}

// EntraTokensIssued is the number of Entra ID tokens the mock has issued.
func (s *Server) EntraTokensIssued() int64 { return s.entra.issued.Load() }
