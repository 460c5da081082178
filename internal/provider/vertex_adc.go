package provider

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// newADCTokenSource returns the token source of Google's Application
// Default Credentials (docs/providers.md#google-vertex-ai-provider-vertex),
// in the library's order: the file GOOGLE_APPLICATION_CREDENTIALS names (a
// service-account key, an authorized_user file, or an external_account
// configuration of workload identity federation), gcloud's
// application_default_credentials.json, then the GCE/GKE metadata server
// (GCE_METADATA_HOST moves it). Finding them reads the environment and
// files only, and on a machine without either asks whether a metadata
// server answers; tokens are fetched on the first request. The token
// exchanges of the files go over rt (nil: http.DefaultTransport).
func newADCTokenSource(rt http.RoundTripper) *tokenSource {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: rt, Timeout: tokenExchangeTimeout})
	creds, err := google.FindDefaultCredentialsWithParams(ctx, google.CredentialsParams{
		Scopes: []string{VertexScope}, EarlyTokenRefresh: tokenRefreshEarly})
	if err != nil {
		return &tokenSource{err: fmt.Errorf("%w: Application Default Credentials: %v", ErrAuth, err)}
	}
	return &tokenSource{src: oauth2.ReuseTokenSourceWithExpiry(nil, creds.TokenSource, tokenRefreshEarly), what: "Application Default Credentials"}
}

var _ CredentialSourcer = Vertex{}

// CredentialSource says where u's tokens come from: its service-account
// key, or the source of the Application Default Credentials the
// environment points at.
func (Vertex) CredentialSource(u Upstream) string {
	if u.Vertex == nil {
		return ""
	}
	v := *u.Vertex
	switch {
	case v.CredentialsFile != "":
		return "service account of vertex.credentials_file " + v.CredentialsFile
	case v.CredentialsJSON != "":
		return "service account of vertex.credentials_json"
	}
	if f := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		return "Application Default Credentials: the file of GOOGLE_APPLICATION_CREDENTIALS " + f
	}
	if h := os.Getenv("GCE_METADATA_HOST"); h != "" {
		return "Application Default Credentials: gcloud's application_default_credentials.json if present, else the metadata server " + h
	}
	return "Application Default Credentials: gcloud's application_default_credentials.json if present, else the GCE/GKE metadata server"
}
