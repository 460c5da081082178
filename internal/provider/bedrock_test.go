package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/mock"
	"switchyard/internal/outcome"
)

// signedAt is the fixed time the tests' endpoints sign with.
var signedAt = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func sigV4Upstream(base string) Upstream {
	return Upstream{Name: "br", BaseURL: base, Clock: func() time.Time { return signedAt },
		Bedrock: &BedrockSettings{Region: "eu-west-3", AccessKeyID: "AKIDTEST", SecretAccessKey: "test-secret"}}
}

func TestBedrockCheck(t *testing.T) {
	keys := func(b BedrockSettings) *BedrockSettings { return &b }
	tests := []struct {
		name string
		u    Upstream
		want []Problem
	}{
		{"SigV4 keys", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "s"})}, nil},
		{"temporary keys", Upstream{Bedrock: keys(BedrockSettings{Region: "us-gov-west-1", AccessKeyID: "ASIA", SecretAccessKey: "s", SessionToken: "t"})}, nil},
		{"a Bedrock API key", Upstream{APIKey: "ABSK-key", Bedrock: keys(BedrockSettings{Region: "ap-southeast-2"})}, nil},
		{"no bedrock block", Upstream{APIKey: "k"}, []Problem{{"bedrock", "required for provider bedrock: set at least bedrock.region and credentials"}}},
		{"no region", Upstream{APIKey: "k", Bedrock: keys(BedrockSettings{})}, []Problem{{"bedrock.region", "required for provider bedrock (us-east-1, eu-central-1, …)"}}},
		{"a region that is no host name part", Upstream{APIKey: "k", Bedrock: keys(BedrockSettings{Region: "us-east-1.evil.com/x"})},
			[]Problem{{"bedrock.region", `must be an AWS region name such as us-east-1, got "us-east-1.evil.com/x"`}}},
		{"the default chain", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1"})}, nil},
		{"the default chain with a profile", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1", Profile: "bedrock"})}, nil},
		{"a profile with keys", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1", Profile: "p", AccessKeyID: "AKID", SecretAccessKey: "s"})},
			[]Problem{{"bedrock.profile", "names a profile of the AWS default credential chain, which is used only without bedrock.access_key_id and api_key; remove one"}}},
		{"a profile with an API key", Upstream{APIKey: "k", Bedrock: keys(BedrockSettings{Region: "us-east-1", Profile: "p"})},
			[]Problem{{"bedrock.profile", "names a profile of the AWS default credential chain, which is used only without bedrock.access_key_id and api_key; remove one"}}},
		{"a key id without its secret", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1", AccessKeyID: "AKID"})},
			[]Problem{{"bedrock.secret_access_key", "required with bedrock.access_key_id"}}},
		{"a secret without its key id", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1", SecretAccessKey: "s"})},
			[]Problem{{"bedrock.access_key_id", "required with bedrock.secret_access_key"}}},
		{"a session token alone", Upstream{APIKey: "k", Bedrock: keys(BedrockSettings{Region: "us-east-1", SessionToken: "t"})},
			[]Problem{{"bedrock.session_token", "only goes with bedrock.access_key_id and bedrock.secret_access_key"}}},
		{"both kinds of credentials", Upstream{APIKey: "k", Bedrock: keys(BedrockSettings{Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "s"})},
			[]Problem{{"api_key", "set either api_key (a Bedrock API key) or bedrock.access_key_id and bedrock.secret_access_key (SigV4), not both"}}},
		{"a secret with a trailing newline", Upstream{Bedrock: keys(BedrockSettings{Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "s\n"})},
			[]Problem{{"bedrock.secret_access_key", "must not contain whitespace or control characters (check for a trailing newline)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Bedrock{}).Check(tt.u); !slices.Equal(got, tt.want) {
				t.Errorf("Check = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBedrockDefaultBaseURLAndForeignSettings(t *testing.T) {
	if got := (Bedrock{}).DefaultBaseURL(Upstream{Bedrock: &BedrockSettings{Region: "eu-central-1"}}); got != "https://bedrock-runtime.eu-central-1.amazonaws.com" {
		t.Errorf("DefaultBaseURL = %q", got)
	}
	if got := (Bedrock{}).DefaultBaseURL(Upstream{}); got != "" {
		t.Errorf("DefaultBaseURL without a region = %q", got)
	}
	if got := (Gemini{}).DefaultBaseURL(Upstream{}); got != DefaultGeminiBaseURL {
		t.Errorf("gemini's DefaultBaseURL = %q", got)
	}
	for _, name := range Builtin().Names() {
		p, _ := Builtin().Lookup(name)
		_, defaulted := p.(BaseURLDefaulter)
		if want := name == NameGemini || name == NameVertex || name == NameBedrock; defaulted != want {
			t.Errorf("%s has a default base_url: %v", name, defaulted)
		}
	}
	tests := []struct {
		provider string
		u        Upstream
		want     []Problem
	}{
		{NameBedrock, Upstream{Bedrock: &BedrockSettings{}}, nil},
		{NameVertex, Upstream{Vertex: &VertexSettings{}}, nil},
		{NameOpenAI, Upstream{}, nil},
		{NameOpenAI, Upstream{Bedrock: &BedrockSettings{}, Vertex: &VertexSettings{}},
			[]Problem{{"bedrock", "only provider bedrock reads a bedrock block, not openai"}, {"vertex", "only provider vertex reads a vertex block, not openai"}}},
		{NameVertex, Upstream{Bedrock: &BedrockSettings{}}, []Problem{{"bedrock", "only provider bedrock reads a bedrock block, not vertex"}}},
	}
	for _, tt := range tests {
		if got := ForeignSettings(tt.provider, tt.u); !slices.Equal(got, tt.want) {
			t.Errorf("ForeignSettings(%s) = %v, want %v", tt.provider, got, tt.want)
		}
	}
}

func TestBedrockRequests(t *testing.T) {
	session := sigV4Upstream("")
	session.Bedrock.SessionToken = "session-token"
	withExtra := sigV4Upstream("http://127.0.0.1:9000/")
	withExtra.Headers = map[string]string{"X-Team": "a"}
	apiKey := Upstream{APIKey: "ABSK-key", Bedrock: &BedrockSettings{Region: "us-west-2"}}
	client := http.Header{
		"Authorization": {"Bearer client-key"}, "X-Amz-Security-Token": {"client's"}, "X-Amzn-Trace-Id": {"Root=1"},
		"Accept": {"text/event-stream"}, "Traceparent": {"00-abc-def-01"}, "X-Request-Id": {"r1"},
	}
	const scope = "Credential=AKIDTEST/20260501/eu-west-3/bedrock/aws4_request, "
	tests := []struct {
		name       string
		u          Upstream
		op, model  string
		wantURL    string
		wantHeader map[string]string // "" = absent; a value ending in "…" is a prefix
	}{
		{"default base, an inference profile id", sigV4Upstream(""), "converse", "us.anthropic.claude-sonnet-4-20250514-v1:0",
			"https://bedrock-runtime.eu-west-3.amazonaws.com/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse",
			map[string]string{
				"Authorization":        "AWS4-HMAC-SHA256 " + scope + "SignedHeaders=accept;content-length;content-type;host;x-amz-date, Signature=…",
				"X-Amz-Date":           "20260501T120000Z",
				"Content-Type":         "application/json",
				"Accept":               "application/json",
				"X-Amz-Security-Token": "",
				"X-Amzn-Trace-Id":      "",
				"Traceparent":          "00-abc-def-01",
				"X-Request-Id":         "r1",
			}},
		{"a stream, temporary credentials", session, "converse-stream", "anthropic.claude-3-haiku-20240307-v1:0",
			"https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream",
			map[string]string{
				"Authorization":        "AWS4-HMAC-SHA256 " + scope + "SignedHeaders=accept;content-length;content-type;host;x-amz-date;x-amz-security-token, Signature=…",
				"X-Amz-Security-Token": "session-token",
				"Accept":               "application/vnd.amazon.eventstream",
			}},
		{"a private base, an ARN, extra headers signed", withExtra, "converse", "arn:aws:bedrock:eu-west-3:123456789012:application-inference-profile/a1b2",
			"http://127.0.0.1:9000/model/arn:aws:bedrock:eu-west-3:123456789012:application-inference-profile%2Fa1b2/converse",
			map[string]string{
				"Authorization": "AWS4-HMAC-SHA256 " + scope + "SignedHeaders=accept;content-length;content-type;host;x-amz-date;x-team, Signature=…",
				"X-Team":        "a",
			}},
		{"a Bedrock API key", apiKey, "converse", "meta.llama3-70b-instruct-v1:0",
			"https://bedrock-runtime.us-west-2.amazonaws.com/model/meta.llama3-70b-instruct-v1:0/converse",
			map[string]string{"Authorization": "Bearer ABSK-key", "X-Amz-Date": "", "X-Amz-Security-Token": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := Builtin().Lookup(NameBedrock)
			if !ok {
				t.Fatal("bedrock is not registered")
			}
			ep := p.New(tt.u)
			req, err := ep.NewRequest(context.Background(), tt.op, tt.model, []byte(`{"messages":[]}`), client.Clone())
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tt.wantURL {
				t.Errorf("%s %s, want POST %s", req.Method, req.URL, tt.wantURL)
			}
			for k, v := range tt.wantHeader {
				got := req.Header.Get(k)
				if prefix, ok := strings.CutSuffix(v, "…"); ok && strings.HasPrefix(got, prefix) && len(got) == len(prefix)+64 {
					continue
				}
				if got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if body, _ := io.ReadAll(req.Body); string(body) != `{"messages":[]}` || req.ContentLength != int64(len(body)) {
				t.Errorf("body %s, length %d", body, req.ContentLength)
			}
			if ep.Family(tt.model) != codec.FamilyBedrock || ep.OpenStreamEnd() {
				t.Errorf("family %v open end %v", ep.Family(tt.model), ep.OpenStreamEnd())
			}
		})
	}
}

// TestBedrockAgainstMock sends the adapter's signed requests to the mock,
// which verifies them by signing again, and classifies its answers.
func TestBedrockAgainstMock(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":5}}`)
	tests := []struct {
		name     string
		u        func(base string) Upstream
		clock    time.Time // the mock's
		behavior mock.Behavior
		class    outcome.Class
		errType  string
	}{
		{"signed", func(b string) Upstream { return sigV4Upstream(b) }, signedAt, mock.Behavior{}, outcome.Success, ""},
		{"signed four minutes ago", func(b string) Upstream { return sigV4Upstream(b) }, signedAt.Add(4 * time.Minute), mock.Behavior{}, outcome.Success, ""},
		{"a wrong secret", func(b string) Upstream {
			u := sigV4Upstream(b)
			u.Bedrock.SecretAccessKey = "wrong"
			return u
		}, signedAt, mock.Behavior{}, outcome.AuthError, "InvalidSignatureException"},
		{"another key id", func(b string) Upstream {
			u := sigV4Upstream(b)
			u.Bedrock.AccessKeyID = "AKIDOTHER"
			return u
		}, signedAt, mock.Behavior{}, outcome.AuthError, "UnrecognizedClientException"},
		{"a clock six minutes slow", func(b string) Upstream { return sigV4Upstream(b) }, signedAt.Add(6 * time.Minute), mock.Behavior{}, outcome.AuthError, "InvalidSignatureException"},
		{"the API key", func(b string) Upstream {
			return Upstream{BaseURL: b, APIKey: "bedrock-key", Bedrock: &BedrockSettings{Region: "eu-west-3"}}
		}, signedAt, mock.Behavior{}, outcome.Success, ""},
		{"a wrong API key", func(b string) Upstream {
			return Upstream{BaseURL: b, APIKey: "nope", Bedrock: &BedrockSettings{Region: "eu-west-3"}}
		}, signedAt, mock.Behavior{}, outcome.AuthError, "UnrecognizedClientException"},
		{"throttled", func(b string) Upstream { return sigV4Upstream(b) }, signedAt, mock.Behavior{ForceStatus: 429}, outcome.RateLimited, "ThrottlingException"},
		{"unavailable", func(b string) Upstream { return sigV4Upstream(b) }, signedAt, mock.Behavior{ForceStatus: 503}, outcome.ServerError, "ServiceUnavailableException"},
		{"a model error", func(b string) Upstream { return sigV4Upstream(b) }, signedAt, mock.Behavior{ForceStatus: 424}, outcome.ServerError, "ModelErrorException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mock.New(mock.Options{Clock: clock.NewFake(tt.clock), Behavior: tt.behavior,
				AWSAccessKeyID: "AKIDTEST", AWSSecretAccessKey: "test-secret", APIKey: "bedrock-key"})
			srv := httptest.NewServer(m)
			t.Cleanup(srv.Close)
			ep := Bedrock{}.New(tt.u(srv.URL))
			for _, stream := range []bool{false, true} {
				h := http.Header{"X-Stainless-Lang": {"go"}, "Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
				req, err := ep.NewRequest(context.Background(), codec.Bedrock.Op(stream), "us.anthropic.claude-sonnet-4-20250514-v1:0", body, h)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				o := ep.Classify(resp.StatusCode, resp.Header, nil)
				if resp.StatusCode >= 300 {
					errBody, _ := io.ReadAll(resp.Body)
					o = ep.Classify(resp.StatusCode, resp.Header, errBody)
					if got := codec.BedrockErrorType(resp.Header.Get("X-Amzn-Errortype")); got != tt.errType {
						t.Errorf("stream %v: exception %q, want %q (%s)", stream, got, tt.errType, errBody)
					}
				} else if stream {
					checkBedrockStream(t, ep.(Framer).Events(resp.Header, resp.Body))
				}
				resp.Body.Close()
				if o.Class != tt.class || o.Cooldown != 0 {
					t.Errorf("stream %v: %d: class %v cooldown %v, want %v", stream, resp.StatusCode, o.Class, o.Cooldown, tt.class)
				}
			}
			for _, kind := range []string{"models", "chat"} {
				req, err := ep.ProbeRequest(context.Background(), kind, "anthropic.claude-3-haiku-20240307-v1:0")
				if err != nil {
					t.Fatal(err)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if want := tt.class == outcome.Success; (resp.StatusCode == http.StatusOK) != want {
					t.Errorf("%s probe answered %d", kind, resp.StatusCode)
				}
			}
		})
	}
}

// checkBedrockStream reads a ConverseStream through the framer and the codec.
func checkBedrockStream(t *testing.T, es codec.EventStream) {
	t.Helper()
	if es == nil {
		t.Fatal("the framer does not take the stream")
	}
	dec := codec.Bedrock.(codec.Translator).NewStreamDecoder()
	var chunks []codec.Chunk
	for {
		ev, err := es.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunks, err = dec.Decode(ev, chunks); err != nil {
			t.Fatal(err)
		}
	}
	last := chunks[len(chunks)-1]
	if !dec.Done() || last.Type != codec.ChunkEnd || last.Usage.Input == 0 || last.Usage.Output != 5 {
		t.Errorf("the stream ended with %+v, done %v", last, dec.Done())
	}
}

func TestBedrockProbe(t *testing.T) {
	ep := Bedrock{}.New(sigV4Upstream("https://b.example"))
	for _, kind := range []string{"models", "chat"} {
		req, err := ep.ProbeRequest(context.Background(), kind, "deepseek.r1-v1:0")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(req.Body)
		if req.Method != http.MethodPost || req.URL.String() != "https://b.example/model/deepseek.r1-v1:0/converse" ||
			gjson.GetBytes(body, "inferenceConfig.maxTokens").Int() != 1 || gjson.GetBytes(body, "additionalModelRequestFields").Exists() ||
			!strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			t.Errorf("%s probe: %s %s %s %v", kind, req.Method, req.URL, body, req.Header)
		}
	}
}

func TestBedrockClassify(t *testing.T) {
	const suffix = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
	tests := []struct {
		name      string
		status    int
		errType   string // x-amzn-ErrorType
		body      string
		class     outcome.Class
		limitType string
		detail    string
	}{
		{"success", 200, "", `{}`, outcome.Success, "", ""},
		{"throttled", 429, "ThrottlingException" + suffix, `{"message":"Too many requests, please wait before trying again."}`, outcome.RateLimited, "",
			"ThrottlingException: Too many requests, please wait before trying again."},
		{"throttled on tokens", 429, "ThrottlingException", `{"message":"Too many tokens, please wait before trying again."}`, outcome.RateLimited, "tokens", ""},
		{"throttling reported as a 400", 400, "ThrottlingException" + suffix, `{"message":"Too many tokens, please wait before trying again."}`, outcome.RateLimited, "tokens", ""},
		{"throttling named only in the body", 400, "", `{"__type":"com.amazon.coral.service#ThrottlingException","message":"Rate exceeded"}`, outcome.RateLimited, "", ""},
		{"throttling in a validation's words", 400, "ValidationException", `{"message":"Too many tokens, please wait before trying again."}`, outcome.RateLimited, "tokens", ""},
		{"a quota", 400, "ServiceQuotaExceededException", `{"message":"Your request exceeds the service quota for your account."}`, outcome.RateLimited, "", ""},
		{"unavailable", 503, "ServiceUnavailableException", `{"message":"Bedrock is unable to process your request."}`, outcome.ServerError, "", ""},
		{"not ready, as a 429", 429, "ModelNotReadyException", `{"message":"Model is not ready"}`, outcome.ServerError, "", ""},
		{"internal", 500, "InternalServerException", `{}`, outcome.ServerError, "", "InternalServerException"},
		{"a model error", 424, "ModelErrorException", `{"message":"The model returned an error"}`, outcome.ServerError, "", ""},
		{"a model timeout", 408, "ModelTimeoutException", `{}`, outcome.ServerError, "", ""},
		{"access denied", 403, "AccessDeniedException", `{"message":"You don't have access to the model with the specified model ID."}`, outcome.AuthError, "", "AccessDeniedException"},
		{"a wrong signature keeps its message out", 403, "InvalidSignatureException",
			`{"message":"The request signature we calculated does not match ... x-amz-security-token:IQoJb3JpZ2luX2VjEJr//////////wEa"}`, outcome.AuthError, "", "InvalidSignatureException"},
		{"an unknown key", 403, "UnrecognizedClientException", `{}`, outcome.AuthError, "", ""},
		{"an expired token, as a 400", 400, "ExpiredTokenException", `{"message":"The security token included in the request is expired"}`, outcome.AuthError, "", ""},
		{"an incomplete signature, as a 400", 400, "IncompleteSignatureException", `{}`, outcome.AuthError, "", ""},
		{"no token", 403, "MissingAuthenticationTokenException", `{"message":"Missing Authentication Token"}`, outcome.AuthError, "", ""},
		{"the client's error", 400, "ValidationException", `{"message":"A conversation must alternate between user and assistant roles."}`, outcome.ClientError, "",
			"ValidationException: A conversation must alternate between user and assistant roles."},
		{"a context too long is the client's", 400, "ValidationException", `{"message":"Input is too long for requested model."}`, outcome.ClientError, "", ""},
		{"no such model", 404, "ResourceNotFoundException", `{"message":"Could not resolve the foundation model"}`, outcome.ClientError, "", ""},
		{"an unknown exception goes by status", 502, "", `<html>bad gateway</html>`, outcome.ServerError, "", "error"},
	}
	ep := Bedrock{}.New(sigV4Upstream(""))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.errType != "" {
				h.Set("x-amzn-ErrorType", tt.errType)
			}
			o := ep.Classify(tt.status, h, []byte(tt.body))
			if o.Class != tt.class || o.Status != tt.status || o.Cooldown != 0 || o.LimitType != tt.limitType {
				t.Errorf("Classify = %v status %d cooldown %v limit %q, want %v limit %q", o.Class, o.Status, o.Cooldown, o.LimitType, tt.class, tt.limitType)
			}
			if tt.detail != "" && o.Detail != tt.detail {
				t.Errorf("detail %q, want %q", o.Detail, tt.detail)
			}
		})
	}
	long := `{"message":"` + strings.Repeat("é", 300) + `"}`
	if d := ep.Classify(400, http.Header{}, []byte(long)).Detail; len(d) > 240 || !strings.HasSuffix(d, "…") {
		t.Errorf("a long message is not cut: %d bytes", len(d))
	}
}

func TestBedrockWallClock(t *testing.T) {
	u := sigV4Upstream("")
	u.Clock = nil
	req, err := Bedrock{}.New(u).NewRequest(context.Background(), "converse", "m", []byte(`{}`), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse("20060102T150405Z", req.Header.Get("X-Amz-Date"))
	if err != nil || time.Since(at) > time.Hour || time.Until(at) > time.Hour {
		t.Errorf("X-Amz-Date %q is not now", req.Header.Get("X-Amz-Date"))
	}
}
