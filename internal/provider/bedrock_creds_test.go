package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/internal/mock"
)

// The credentials the AWS stand-ins hand out, temporary ones.
const (
	chainKeyID   = "ASIACHAIN"
	chainSecret  = "chain-secret"
	chainSession = "chain-session-token"
)

// isolateAWS clears the AWS environment of the test process and points
// the shared files at files that do not exist, with instance metadata
// off: only what a test sets is found.
func isolateAWS(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return dir
}

// writeFile writes data to a file of dir and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// stsServer is a local STS that exchanges token for the chain's
// credentials expiring after lifetime, and counts its exchanges.
func stsServer(t *testing.T, token string, lifetime time.Duration, calls *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRoleWithWebIdentity" ||
			r.Form.Get("WebIdentityToken") != token || r.Form.Get("RoleArn") != "arn:aws:iam::123456789012:role/bedrock" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>refused</Message></Error></ErrorResponse>`))
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(`<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>` +
			`<Credentials><AccessKeyId>` + chainKeyID + `</AccessKeyId><SecretAccessKey>` + chainSecret + `</SecretAccessKey>` +
			`<SessionToken>` + chainSession + `</SessionToken><Expiration>` + time.Now().Add(lifetime).UTC().Format(time.RFC3339) + `</Expiration></Credentials>` +
			`<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/bedrock/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>` +
			`</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// containerCredentials answers ECS's and IMDS's credentials document.
func containerCredentials(w http.ResponseWriter, lifetime time.Duration) {
	_ = json.NewEncoder(w).Encode(map[string]string{"Code": "Success", "Type": "AWS-HMAC",
		"AccessKeyId": chainKeyID, "SecretAccessKey": chainSecret, "Token": chainSession,
		"Expiration": time.Now().Add(lifetime).UTC().Format(time.RFC3339)})
}

// converseStatus sends one Converse of u to base and returns the status.
func converseStatus(t *testing.T, u Upstream) (int, error) {
	t.Helper()
	ep := Bedrock{}.New(u)
	req, err := ep.NewRequest(context.Background(), "converse", "m", bedrockProbeBody, http.Header{})
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestBedrockDefaultChain: an upstream with only a region signs with the
// credentials each source of the AWS default chain gives, as the mock
// verifies (the signature with the secret, the session token signed).
func TestBedrockDefaultChain(t *testing.T) {
	var calls atomic.Int32
	tests := []struct {
		name    string
		profile string
		keyID   string // the credentials the mock accepts
		secret  string
		session string
		setup   func(t *testing.T, dir string)
	}{
		{"the environment", "", "AKIDENV", "env-secret", "env-session", func(t *testing.T, _ string) {
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
			t.Setenv("AWS_SESSION_TOKEN", "env-session")
		}},
		{"a named profile of the shared credentials file", "bedrock", "AKIDPROFILE", "profile-secret", "", func(t *testing.T, dir string) {
			writeFile(t, dir, "credentials", "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = wrong\n\n"+
				"[bedrock]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n")
		}},
		{"a profile of the shared config file", "cfg", "AKIDCONFIG", "config-secret", "", func(t *testing.T, dir string) {
			writeFile(t, dir, "config", "[profile cfg]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = config-secret\n")
		}},
		{"a web identity token file and STS", "", chainKeyID, chainSecret, chainSession, func(t *testing.T, dir string) {
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, dir, "token", "eyJ.web-identity.token"))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/bedrock")
			t.Setenv("AWS_ENDPOINT_URL_STS", stsServer(t, "eyJ.web-identity.token", time.Hour, &calls))
		}},
		{"ECS container credentials", "", chainKeyID, chainSecret, chainSession, func(t *testing.T, _ string) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "ecs-auth" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				containerCredentials(w, time.Hour)
			}))
			t.Cleanup(srv.Close)
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/creds")
			t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ecs-auth")
		}},
		{"EC2 instance metadata", "", chainKeyID, chainSecret, chainSession, func(t *testing.T, _ string) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
					w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
					_, _ = w.Write([]byte("imds-token"))
				case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "imds-token":
					w.WriteHeader(http.StatusUnauthorized)
				case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
					_, _ = w.Write([]byte("bedrock-role"))
				case r.URL.Path == "/latest/meta-data/iam/security-credentials/bedrock-role":
					containerCredentials(w, time.Hour)
				default:
					w.WriteHeader(http.StatusNotFound)
				}
			}))
			t.Cleanup(srv.Close)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
			t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := isolateAWS(t)
			tt.setup(t, dir)
			for _, session := range []string{tt.session, "another-session"} {
				m := mock.New(mock.Options{AWSAccessKeyID: tt.keyID, AWSSecretAccessKey: tt.secret, AWSSessionToken: session})
				srv := httptest.NewServer(m)
				t.Cleanup(srv.Close)
				u := Upstream{Name: "br", BaseURL: srv.URL, Bedrock: &BedrockSettings{Region: "us-east-1", Profile: tt.profile}}
				status, err := converseStatus(t, u)
				if err != nil {
					t.Fatalf("NewRequest: %v", err)
				}
				if want := map[bool]int{true: 200, false: 403}[session == tt.session]; status != want {
					t.Errorf("mock with session token %q answered %d, want %d", session, status, want)
				}
			}
		})
	}
}

// TestBedrockDefaultChainRefresh: credentials are fetched again once they
// are within five minutes of their expiry, and reused before.
func TestBedrockDefaultChainRefresh(t *testing.T) {
	for _, tt := range []struct {
		lifetime  time.Duration
		wantCalls int32
	}{{time.Hour, 1}, {2 * time.Minute, 3}} {
		t.Run(tt.lifetime.String(), func(t *testing.T) {
			dir := isolateAWS(t)
			var calls atomic.Int32
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, dir, "token", "tok"))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/bedrock")
			t.Setenv("AWS_ENDPOINT_URL_STS", stsServer(t, "tok", tt.lifetime, &calls))
			srv := httptest.NewServer(mock.New(mock.Options{AWSAccessKeyID: chainKeyID, AWSSecretAccessKey: chainSecret, AWSSessionToken: chainSession}))
			t.Cleanup(srv.Close)
			ep := Bedrock{}.New(Upstream{Name: "br", BaseURL: srv.URL, Bedrock: &BedrockSettings{Region: "us-east-1"}})
			for range 3 {
				req, err := ep.NewRequest(context.Background(), "converse", "m", bedrockProbeBody, http.Header{})
				if err != nil {
					t.Fatal(err)
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
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("STS exchanges for 3 requests = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

// TestBedrockDefaultChainFailures: a chain without credentials, or whose
// profile is missing, fails each request with ErrAuth, naming no secret.
func TestBedrockDefaultChainFailures(t *testing.T) {
	for _, tt := range []struct {
		name, profile string
		setup         func(t *testing.T, dir string)
	}{
		{"no source", "", func(*testing.T, string) {}},
		{"a missing profile", "absent", func(t *testing.T, dir string) {
			writeFile(t, dir, "credentials", "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n")
		}},
		{"STS refuses the token", "", func(t *testing.T, dir string) {
			var calls atomic.Int32
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, dir, "token", "not-the-token"))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/bedrock")
			t.Setenv("AWS_ENDPOINT_URL_STS", stsServer(t, "tok", time.Hour, &calls))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := isolateAWS(t)
			tt.setup(t, dir)
			_, err := converseStatus(t, Upstream{Name: "br", BaseURL: "http://127.0.0.1:1", Bedrock: &BedrockSettings{Region: "us-east-1", Profile: tt.profile}})
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("NewRequest error = %v, want ErrAuth", err)
			}
			for _, secret := range []string{"default-secret", "not-the-token"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a secret", err)
				}
			}
		})
	}
}

// TestBedrockCredentialSource: check-config's description follows the
// SDK's order of sources and names no secret.
func TestBedrockCredentialSource(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		u    Upstream
		want string
	}{
		{"keys", nil, Upstream{Bedrock: &BedrockSettings{Region: "r", AccessKeyID: "AKID", SecretAccessKey: "s3cret"}}, "SigV4 with bedrock.access_key_id AKID"},
		{"an API key", nil, Upstream{APIKey: "k", Bedrock: &BedrockSettings{Region: "r"}}, "Bedrock API key (api_key) as Authorization: Bearer"},
		{"a named profile before the environment's keys", map[string]string{"AWS_ACCESS_KEY_ID": "AKIDENV"},
			Upstream{Bedrock: &BedrockSettings{Region: "r", Profile: "p"}}, "AWS default chain: profile p of the shared config and credentials files"},
		{"AWS_PROFILE", map[string]string{"AWS_PROFILE": "q"}, Upstream{Bedrock: &BedrockSettings{Region: "r"}},
			"AWS default chain: profile q of the shared config and credentials files"},
		{"the environment's keys before web identity", map[string]string{"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_WEB_IDENTITY_TOKEN_FILE": "/t"},
			Upstream{Bedrock: &BedrockSettings{Region: "r"}}, "AWS default chain: the environment's AWS_ACCESS_KEY_ID"},
		{"web identity", map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, Upstream{Bedrock: &BedrockSettings{Region: "r"}},
			"AWS default chain: web identity token file (AWS_WEB_IDENTITY_TOKEN_FILE, role AWS_ROLE_ARN) exchanged with STS"},
		{"ECS", map[string]string{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"}, Upstream{Bedrock: &BedrockSettings{Region: "r"}},
			"AWS default chain: the default profile of the shared files if it has credentials, else ECS container credentials"},
		{"nothing", nil, Upstream{Bedrock: &BedrockSettings{Region: "r"}},
			"AWS default chain: the default profile of the shared files if it has credentials, else EC2 instance metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWS(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if got := (Bedrock{}).CredentialSource(tt.u); got != tt.want {
				t.Errorf("CredentialSource = %q, want %q", got, tt.want)
			}
		})
	}
}
