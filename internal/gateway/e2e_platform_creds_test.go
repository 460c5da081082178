package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// End-to-end tests of credentials from the platform
// (docs/providers.md): upstreams that configure no key sign or
// authenticate with what the environment gives, and the mocks verify it.

// clearEnv unsets the variables ks for the test.
func clearEnv(t *testing.T, ks ...string) {
	t.Helper()
	for _, k := range ks {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// isolatePlatform leaves the test process only the credentials a test
// sets: no AWS, Google or Azure variables, shared files that do not
// exist, no instance or metadata server.
func isolatePlatform(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	clearEnv(t, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_REGION",
		"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
		"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST")
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "aws-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	return dir
}

// askServedBy sends one chat completion for model and returns the
// upstream that served it.
func askServedBy(t *testing.T, e *env, model string) string {
	t.Helper()
	var raw *http.Response
	c := e.openAI(testKey)
	r, err := c.Chat.Completions.New(context.Background(), chatParams(model, "Say something about trains."), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	if len(r.Choices) == 0 || r.Choices[0].Message.Content == "" {
		t.Fatalf("%s: an empty answer", model)
	}
	return raw.Header.Get("X-Switchyard-Upstream")
}

// TestPlatformCredentialsEndToEnd: a Bedrock upstream with only a region
// signs with the environment's keys, with a named profile of a shared
// credentials file and with a web identity token exchanged at STS; a Vertex upstream with only project and location gets
// its token through GOOGLE_APPLICATION_CREDENTIALS and from the metadata
// server; an Azure OpenAI
// upstream with auth entra sends an Entra ID token. Each mock accepts only
// those credentials.
func TestPlatformCredentialsEndToEnd(t *testing.T) {
	tests := []struct {
		name     string
		model    string
		upstream func(t *testing.T, dir string) config.Upstream
	}{
		{"bedrock from the environment", bedrockModel, func(t *testing.T, _ string) config.Upstream {
			t.Setenv("AWS_ACCESS_KEY_ID", "ASIAENVE2E")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "env-e2e-secret")
			t.Setenv("AWS_SESSION_TOKEN", "env-e2e-session")
			_, url := startMockWith(t, mock.Options{Name: "bedrock-env", AWSAccessKeyID: "ASIAENVE2E", AWSSecretAccessKey: "env-e2e-secret", AWSSessionToken: "env-e2e-session"})
			return platformBedrock(url, "")
		}},
		{"bedrock from a named profile", bedrockModel, func(t *testing.T, dir string) config.Upstream {
			data := "[default]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = other\n\n[bedrock-e2e]\naws_access_key_id = AKIDPROFILEE2E\naws_secret_access_key = profile-e2e-secret\n"
			if err := os.WriteFile(filepath.Join(dir, "aws-credentials"), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, url := startMockWith(t, mock.Options{Name: "bedrock-profile", AWSAccessKeyID: "AKIDPROFILEE2E", AWSSecretAccessKey: "profile-e2e-secret"})
			return platformBedrock(url, "bedrock-e2e")
		}},
		{"bedrock from a web identity token and STS", bedrockModel, func(t *testing.T, dir string) config.Upstream {
			token := filepath.Join(dir, "token")
			if err := os.WriteFile(token, []byte("eyJ.irsa.token"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token)
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/gateway")
			t.Setenv("AWS_ENDPOINT_URL_STS", localSTS(t, "eyJ.irsa.token", "ASIASTSE2E", "sts-e2e-secret", "sts-e2e-session"))
			_, url := startMockWith(t, mock.Options{Name: "bedrock-irsa", AWSAccessKeyID: "ASIASTSE2E", AWSSecretAccessKey: "sts-e2e-secret", AWSSessionToken: "sts-e2e-session"})
			return platformBedrock(url, "")
		}},
		{"vertex through GOOGLE_APPLICATION_CREDENTIALS", vertexGemini, func(t *testing.T, dir string) config.Upstream {
			_, url := startVertexMock(t, "vertex-adc", mock.Options{})
			key := filepath.Join(dir, "key.json")
			if err := os.WriteFile(key, vertexAccount().JSON("p1", mock.TokenURI(url)), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", key)
			u := vertexUpstream("vertex-adc", url, 0)
			u.Vertex.CredentialsJSON = ""
			return u
		}},
		{"vertex through the metadata server", vertexGemini, func(t *testing.T, _ string) config.Upstream {
			_, url := startVertexMock(t, "vertex-metadata", mock.Options{})
			t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(url, "http://"))
			u := vertexUpstream("vertex-metadata", url, 0)
			u.Vertex.CredentialsJSON = ""
			return u
		}},
		{"azure openai with entra", "gpt-4o", func(t *testing.T, _ string) config.Upstream {
			app := mock.EntraApp{TenantID: "tenant-e2e", ClientID: "client-e2e", ClientSecret: "entra-e2e-secret"}
			_, url := startMockWith(t, mock.Options{Name: "azure-entra", APIKey: "unused-key", Entra: &app})
			u := upstreamAt("azure-entra", config.ProviderAzureOpenAI, url, 0, "gpt-4o")
			u.APIKey = ""
			u.Azure = &provider.AzureSettings{Auth: "entra", TenantID: "tenant-e2e", ClientID: "client-e2e", ClientSecret: "entra-e2e-secret", AuthorityHost: url}
			return u
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := isolatePlatform(t)
			u := tt.upstream(t, dir)
			e := startGateway(t, spec{upstreams: []config.Upstream{u}})
			if got := askServedBy(t, e, tt.model); got != u.Name {
				t.Errorf("served by %q, want %s", got, u.Name)
			}
		})
	}
}

// platformBedrock is a bedrock upstream at a mock with only a region (and
// profile): the AWS default chain signs.
func platformBedrock(mockURL, profile string) config.Upstream {
	u := config.DefaultUpstream()
	u.Name, u.Provider, u.BaseURL = "bedrock-"+strings.TrimPrefix(profile, "bedrock-")+"chain", config.ProviderBedrock, mockURL
	u.Models = []string{bedrockModel}
	u.ModelMap = map[string]string{bedrockModel: bedrockModelID}
	u.Bedrock = &provider.BedrockSettings{Region: "us-east-1", Profile: profile}
	return u
}

// localSTS is an STS stand-in that exchanges the web identity token for
// temporary credentials valid an hour (AssumeRoleWithWebIdentity).
func localSTS(t *testing.T, token, keyID, secret, session string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRoleWithWebIdentity" || r.Form.Get("WebIdentityToken") != token {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>refused</Message></Error></ErrorResponse>`))
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(`<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>` +
			`<Credentials><AccessKeyId>` + keyID + `</AccessKeyId><SecretAccessKey>` + secret + `</SecretAccessKey><SessionToken>` + session +
			`</SessionToken><Expiration>` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `</Expiration></Credentials>` +
			`</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
