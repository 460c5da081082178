package provider

// BedrockSettings are an AWS Bedrock upstream's settings (the config's
// `upstreams[].bedrock` block; docs/providers.md#aws-bedrock-provider-bedrock).
type BedrockSettings struct {
	// Region is the AWS region (us-east-1, …); it picks the default
	// base_url and signs the requests. Required.
	Region string `yaml:"region" json:"region"`
	// AccessKeyID and SecretAccessKey sign requests with SigV4; both or
	// neither. Without them the upstream's api_key is sent as a Bedrock
	// API key (Authorization: Bearer); without either the requests are
	// signed with the AWS default credential chain's credentials. SecretAccessKey is a secret: never
	// logged or returned.
	AccessKeyID     string `yaml:"access_key_id" json:"access_key_id,omitempty"`
	SecretAccessKey string `yaml:"secret_access_key" json:"secret_access_key,omitempty"`
	// SessionToken is the temporary credentials' token, when they are; a
	// secret.
	SessionToken string `yaml:"session_token" json:"session_token,omitempty"`
	// Profile is the profile of the shared config and credentials files
	// the AWS default credential chain reads, used only when neither the
	// keys nor api_key are set; "" is AWS_PROFILE, else "default".
	Profile string `yaml:"profile" json:"profile,omitempty"`
}

// VertexSettings are a Google Vertex AI upstream's settings (the config's
// `upstreams[].vertex` block;
// docs/providers.md#google-vertex-ai-provider-vertex).
type VertexSettings struct {
	// Project is the Google Cloud project id. Required.
	Project string `yaml:"project" json:"project"`
	// Location is the region (us-east5, europe-west1, global, …). Required.
	Location string `yaml:"location" json:"location"`
	// CredentialsFile is the path of a service-account JSON key; or
	// CredentialsJSON holds the key itself (a secret). At most one; with
	// neither, Google's Application Default Credentials apply
	// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, the metadata server).
	CredentialsFile string `yaml:"credentials_file" json:"credentials_file,omitempty"`
	CredentialsJSON string `yaml:"credentials_json" json:"credentials_json,omitempty"`
}

// AzureSettings are an Azure OpenAI upstream's authentication settings
// (the config's `upstreams[].azure` block;
// docs/providers.md#azure-openai-provider-azure-openai). Without the block,
// or with auth "api_key", the upstream's api_key goes in the api-key
// header.
type AzureSettings struct {
	// Auth is "api_key" (the default) or "entra": Microsoft Entra ID
	// access tokens as Authorization: Bearer, by the client credentials
	// grant with ClientSecret or, for workload identity, with the
	// federated token of FederatedTokenFile as the client assertion.
	Auth string `yaml:"auth" json:"auth,omitempty"`
	// TenantID and ClientID are the Entra tenant and application (client)
	// id; "" reads AZURE_TENANT_ID and AZURE_CLIENT_ID.
	TenantID string `yaml:"tenant_id" json:"tenant_id,omitempty"`
	ClientID string `yaml:"client_id" json:"client_id,omitempty"`
	// ClientSecret is the application's client secret (a secret); "" reads
	// AZURE_CLIENT_SECRET.
	ClientSecret string `yaml:"client_secret" json:"client_secret,omitempty"`
	// FederatedTokenFile is the file of a federated token (AKS workload
	// identity projects one), read again for each exchange; "" reads
	// AZURE_FEDERATED_TOKEN_FILE. Used when there is no client secret.
	FederatedTokenFile string `yaml:"federated_token_file" json:"federated_token_file,omitempty"`
	// AuthorityHost is Entra's token service; "" reads
	// AZURE_AUTHORITY_HOST, else https://login.microsoftonline.com/.
	AuthorityHost string `yaml:"authority_host" json:"authority_host,omitempty"`
}

// SecretPaths are the provider settings, as paths below an upstream, that
// hold secrets: logs, errors and the admin API never show them.
var SecretPaths = []string{"bedrock.secret_access_key", "bedrock.session_token", "vertex.credentials_json", "azure.client_secret"}

// ForeignSettings returns a problem for each provider settings block of u
// that provider name does not read (a vertex block on an openai
// upstream): a block in the wrong place is a mistake, not something to
// ignore.
func ForeignSettings(name string, u Upstream) []Problem {
	var ps []Problem
	if u.Bedrock != nil && name != NameBedrock {
		ps = append(ps, Problem{Field: "bedrock", Message: "only provider bedrock reads a bedrock block, not " + name})
	}
	if u.Vertex != nil && name != NameVertex {
		ps = append(ps, Problem{Field: "vertex", Message: "only provider vertex reads a vertex block, not " + name})
	}
	if u.Azure != nil && name != NameAzureOpenAI {
		ps = append(ps, Problem{Field: "azure", Message: "only provider azure-openai reads an azure block, not " + name})
	}
	return ps
}
