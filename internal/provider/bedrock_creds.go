package provider

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// staticAWSCredentials are the keys of the config file.
type staticAWSCredentials aws.Credentials

// Retrieve returns the keys.
func (c *staticAWSCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials(*c), nil
}

// failedAWSCredentials are a default chain that could not be loaded: every
// request fails with err, which wraps ErrAuth.
type failedAWSCredentials struct{ err error }

// Retrieve returns the error.
func (c failedAWSCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, c.err
}

var (
	_ aws.CredentialsProvider = (*staticAWSCredentials)(nil)
	_ aws.CredentialsProvider = failedAWSCredentials{}
)

// awsDefaultCredentials returns the credentials of the AWS SDK's default
// chain for b (docs/providers.md#aws-bedrock-provider-bedrock), in the
// SDK's order: the environment (AWS_ACCESS_KEY_ID, …), the shared config
// and credentials files (~/.aws/config, ~/.aws/credentials, or
// AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE) with b.Profile or
// AWS_PROFILE, a web identity token file (AWS_WEB_IDENTITY_TOKEN_FILE and
// AWS_ROLE_ARN: EKS IRSA and Pod Identity, exchanged with STS), ECS
// container credentials (AWS_CONTAINER_CREDENTIALS_*) and EC2 instance
// metadata. The SDK's aws.CredentialsCache keeps them and fetches new
// ones tokenRefreshEarly before they expire, one fetch at a time. The
// chain's own requests (STS, ECS, IMDS) go over the SDK's HTTP client,
// which honours AWS_CA_BUNDLE, not the upstream transport: they are the
// platform's, not the upstream's. Loading reads the environment and the
// files only; nothing is fetched until the first request.
func awsDefaultCredentials(b BedrockSettings) aws.CredentialsProvider {
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(b.Region),
		awsconfig.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = tokenRefreshEarly }),
	}
	if b.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(b.Profile))
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	switch {
	case err != nil:
		return failedAWSCredentials{fmt.Errorf("%w: loading the AWS default credential chain: %v", ErrAuth, err)}
	case cfg.Credentials == nil:
		return failedAWSCredentials{fmt.Errorf("%w: the AWS default credential chain found no credentials", ErrAuth)}
	}
	return cfg.Credentials
}

var _ CredentialSourcer = Bedrock{}

// CredentialSource says which credentials u signs with: its keys, its
// Bedrock API key, or the source of the AWS default chain the
// environment points at.
func (Bedrock) CredentialSource(u Upstream) string {
	if u.Bedrock == nil {
		return ""
	}
	b := *u.Bedrock
	if b.AccessKeyID == "" && u.APIKey != "" {
		return "Bedrock API key (api_key) as Authorization: Bearer"
	}
	env := func(k string) bool { return os.Getenv(k) != "" }
	profile := b.Profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	// The SDK's order (config.resolveCredentialChain): a profile named
	// explicitly, the environment's keys, a web identity token file, then
	// the default profile, whose absence of credentials falls through to
	// the container's and then the instance's.
	const fallback = "the default profile of the shared files if it has credentials, else "
	switch {
	case b.AccessKeyID != "":
		return "SigV4 with bedrock.access_key_id " + b.AccessKeyID
	case profile != "":
		return "AWS default chain: profile " + profile + " of the shared config and credentials files"
	case env("AWS_ACCESS_KEY_ID"):
		return "AWS default chain: the environment's AWS_ACCESS_KEY_ID"
	case env("AWS_WEB_IDENTITY_TOKEN_FILE"):
		return "AWS default chain: web identity token file (AWS_WEB_IDENTITY_TOKEN_FILE, role AWS_ROLE_ARN) exchanged with STS"
	case env("AWS_CONTAINER_CREDENTIALS_FULL_URI") || env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
		return "AWS default chain: " + fallback + "ECS container credentials"
	}
	return "AWS default chain: " + fallback + "EC2 instance metadata"
}
