package admin

import (
	"encoding/json"
	"strings"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/provider"
)

// TestUpstreamViewHidesProviderSecrets: every provider secret
// (provider.SecretPaths) is shown as its hint only.
func TestUpstreamViewHidesProviderSecrets(t *testing.T) {
	u := config.DefaultUpstream()
	u.Name = "u"
	u.Bedrock = &provider.BedrockSettings{Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "bedrock-secret-value", SessionToken: "bedrock-session-value"}
	u.Vertex = &provider.VertexSettings{Project: "p", Location: "l", CredentialsJSON: `{"private_key":"vertex-key-value"}`}
	u.Azure = &provider.AzureSettings{Auth: "entra", TenantID: "t", ClientID: "c", ClientSecret: "azure-client-secret-value"}
	view, err := upstreamView(u)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"bedrock-secret-value", "bedrock-session-value", "vertex-key-value", "azure-client-secret-value"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the view shows %q: %s", secret, data)
		}
	}
	if !strings.Contains(string(data), `"client_id":"c"`) {
		t.Errorf("the view lacks the azure block: %s", data)
	}
}
