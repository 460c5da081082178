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

// SecretPaths are the provider settings, as paths below an upstream, that
// hold secrets: logs, errors and the admin API never show them.
var SecretPaths = []string{"bedrock.secret_access_key", "bedrock.session_token", "vertex.credentials_json"}

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
	return ps
}
