package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// platformUpstreams are a Bedrock, a Vertex and an Azure OpenAI upstream
// whose credentials come from the platform, and one with static keys.
const platformUpstreams = `upstreams:
  - {name: br, provider: bedrock, models: [claude], bedrock: {region: us-east-1, profile: prod}}
  - {name: br-keys, provider: bedrock, models: [claude], bedrock: {region: us-east-1, access_key_id: AKIDKEYS, secret_access_key: the-secret}}
  - {name: vx, provider: vertex, models: [gemini-2.5-flash], vertex: {project: p1, location: us-east5}}
  - name: az
    provider: azure-openai
    base_url: https://example.openai.azure.com
    models: [gpt-4o]
    azure: {auth: entra, tenant_id: t1, client_id: c1, client_secret: entra-secret}
`

// TestCheckConfigCredentialSources: check-config says where each
// platform-credentialed upstream's credentials come from, and no secret.
func TestCheckConfigCredentialSources(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/var/run/adc.json")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	if err := os.WriteFile(path, []byte(platformUpstreams), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runSplit(t, "check-config", path)
	if err != nil {
		t.Fatalf("check-config: %v\n%s", err, stdout)
	}
	for _, want := range []string{
		"upstream br: credentials: AWS default chain: profile prod of the shared config and credentials files\n",
		"upstream br-keys: credentials: SigV4 with bedrock.access_key_id AKIDKEYS\n",
		"upstream vx: credentials: Application Default Credentials: the file of GOOGLE_APPLICATION_CREDENTIALS /var/run/adc.json\n",
		"upstream az: credentials: Entra ID tokens of application c1 in tenant t1 by client secret from https://login.microsoftonline.com/t1/oauth2/v2.0/token\n",
		path + ": ok (4 upstreams",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, secret := range []string{"the-secret", "entra-secret"} {
		if strings.Contains(stdout, secret) {
			t.Errorf("stdout shows a secret:\n%s", stdout)
		}
	}
}
