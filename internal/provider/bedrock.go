package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/tidwall/gjson"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// Bedrock is AWS Bedrock's runtime API, spoken as Converse and
// ConverseStream: {base_url}/model/{modelId}/converse (or
// /converse-stream), the model id (or inference profile id or ARN)
// path-escaped, on https://bedrock-runtime.{region}.amazonaws.com unless
// base_url says otherwise. Requests are signed with SigV4 for service
// "bedrock" in the upstream's region, with the configured keys or the AWS
// default credential chain's (awsDefaultCredentials), or carry a Bedrock
// API key as Authorization: Bearer. A stream is an AWS event-stream, which the
// endpoint's Events frames. Throttling is a ThrottlingException (429,
// sometimes 400) with no Retry-After; see Classify.
type Bedrock struct{}

// bedrockService is the SigV4 signing name of Bedrock's runtime.
const bedrockService = "bedrock"

var (
	_ Provider         = Bedrock{}
	_ BaseURLDefaulter = Bedrock{}
	_ Endpoint         = (*bedrockEndpoint)(nil)
	_ Framer           = (*bedrockEndpoint)(nil)
)

// Name is "bedrock".
func (Bedrock) Name() string { return NameBedrock }

// System is the GenAI semantic conventions' name of the provider.
func (Bedrock) System() string { return "aws.bedrock" }

// DefaultBaseURL is https://bedrock-runtime.{region}.amazonaws.com; "" without a region.
func (Bedrock) DefaultBaseURL(u Upstream) string {
	if u.Bedrock == nil || !validRegion(u.Bedrock.Region) {
		return ""
	}
	return "https://bedrock-runtime." + u.Bedrock.Region + ".amazonaws.com"
}

// Check requires the bedrock block with a region. Credentials are both
// access_key_id and secret_access_key (session_token only with them), or
// api_key, not both; with neither the AWS default chain applies, with
// profile if set. organization and project are refused.
func (Bedrock) Check(u Upstream) []Problem {
	ps := refuseScope(NameBedrock, u,
		"Bedrock bills the AWS account of the upstream's credentials; for another account add an upstream with its credentials")
	b := u.Bedrock
	if b == nil {
		return append(ps, Problem{Field: "bedrock", Message: "required for provider bedrock: set at least bedrock.region and credentials"})
	}
	switch {
	case b.Region == "":
		ps = append(ps, Problem{Field: "bedrock.region", Message: "required for provider bedrock (us-east-1, eu-central-1, …)"})
	case !validRegion(b.Region):
		ps = append(ps, Problem{Field: "bedrock.region", Message: "must be an AWS region name such as us-east-1, got \"" + b.Region + "\""})
	}
	keys := b.AccessKeyID != "" || b.SecretAccessKey != ""
	switch {
	case b.AccessKeyID == "" && b.SecretAccessKey != "":
		ps = append(ps, Problem{Field: "bedrock.access_key_id", Message: "required with bedrock.secret_access_key"})
	case b.AccessKeyID != "" && b.SecretAccessKey == "":
		ps = append(ps, Problem{Field: "bedrock.secret_access_key", Message: "required with bedrock.access_key_id"})
	}
	for _, f := range [...]struct{ field, value string }{
		{"bedrock.access_key_id", b.AccessKeyID}, {"bedrock.secret_access_key", b.SecretAccessKey}, {"bedrock.session_token", b.SessionToken},
	} {
		if strings.ContainsFunc(f.value, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			ps = append(ps, Problem{Field: f.field, Message: "must not contain whitespace or control characters (check for a trailing newline)"})
		}
	}
	if b.SessionToken != "" && !keys {
		ps = append(ps, Problem{Field: "bedrock.session_token", Message: "only goes with bedrock.access_key_id and bedrock.secret_access_key"})
	}
	switch {
	case keys && u.APIKey != "":
		ps = append(ps, Problem{Field: "api_key", Message: "set either api_key (a Bedrock API key) or bedrock.access_key_id and bedrock.secret_access_key (SigV4), not both"})
	}
	if b.Profile != "" && (keys || u.APIKey != "") {
		ps = append(ps, Problem{Field: "bedrock.profile", Message: "names a profile of the AWS default credential chain, which is used only without bedrock.access_key_id and api_key; remove one"})
	}
	return ps
}

// validRegion reports whether s can be an AWS region: lower-case letters,
// digits and inner dashes (it becomes part of a host name).
func validRegion(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// New returns the endpoint of u, on DefaultBaseURL when u sets no base_url.
func (p Bedrock) New(u Upstream) Endpoint {
	base := u.BaseURL
	if base == "" {
		base = p.DefaultBaseURL(u)
	}
	e := &bedrockEndpoint{base: strings.TrimRight(base, "/") + "/model/", extra: u.Headers, now: u.Clock}
	if e.now == nil {
		e.now = time.Now
	}
	if b := u.Bedrock; b != nil {
		e.region = b.Region
		switch {
		case b.AccessKeyID != "":
			e.creds = &staticAWSCredentials{AccessKeyID: b.AccessKeyID, SecretAccessKey: b.SecretAccessKey, SessionToken: b.SessionToken, Source: "switchyard config"}
		case u.APIKey == "":
			e.creds = awsDefaultCredentials(*b)
		}
	}
	if e.creds == nil {
		e.bearer = []string{"Bearer " + u.APIKey}
	} else {
		e.signer = v4.NewSigner()
	}
	return e
}

// bedrockEndpoint is one Bedrock upstream: SigV4 credentials, or a bearer
// API key.
type bedrockEndpoint struct {
	base   string // base_url + "/model/"
	region string
	creds  aws.CredentialsProvider // nil: the bearer key
	signer *v4.Signer
	bearer []string
	extra  map[string]string
	now    func() time.Time
}

func (e *bedrockEndpoint) Family(string) codec.Family { return codec.FamilyBedrock }

// OpenStreamEnd is false: a ConverseStream is complete once its metadata
// event came (the codec watches for it), cut otherwise.
func (e *bedrockEndpoint) OpenStreamEnd() bool { return false }

// Events frames an answer whose Content-Type is application/vnd.amazon.eventstream.
func (e *bedrockEndpoint) Events(h http.Header, body io.Reader) codec.EventStream {
	if !isEventStream(h) {
		return nil
	}
	return NewEventStreamReader(body)
}

// NewRequest posts body to {base}/model/{model}/{op}. Only the gateway's
// own headers are signed (content type, accept, the configured extra
// headers, host, length and the x-amz-* the signer adds); the client's
// forwarded headers are added after signing, unsigned, so that nothing
// set later (a tracing header) can break the signature, and the client's
// x-amz-* and x-amzn-* headers, which would mean something to AWS, are
// dropped.
func (e *bedrockEndpoint) NewRequest(ctx context.Context, op, model string, body []byte, h http.Header) (*http.Request, error) {
	req, err := newPost(ctx, e.base+url.PathEscape(model)+"/"+op, body, http.Header{})
	if err != nil {
		return nil, err
	}
	accept := "application/json"
	if op == codec.Bedrock.Op(true) {
		accept = EventStreamContentType
	}
	req.Header["Accept"] = []string{accept}
	if err := e.authorize(ctx, req, body); err != nil {
		return nil, err
	}
	for k, vs := range h {
		if _, ours := req.Header[k]; ours || isAWSHeader(k) || http.CanonicalHeaderKey(k) == "Authorization" {
			continue
		}
		req.Header[k] = vs
	}
	return req, nil
}

// authorize sets the configured headers and signs req, or sets the bearer key.
func (e *bedrockEndpoint) authorize(ctx context.Context, req *http.Request, body []byte) error {
	setExtra(req.Header, e.extra)
	if e.creds == nil {
		req.Header["Authorization"] = e.bearer
		return nil
	}
	creds, err := e.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("%w: retrieving AWS credentials: %v", ErrAuth, err)
	}
	sum := sha256.Sum256(body)
	if err := e.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), bedrockService, e.region, e.now()); err != nil {
		return fmt.Errorf("signing the request with SigV4: %w", err)
	}
	return nil
}

// bedrockProbeBody asks for one token, with no thinking (no budget spent).
var bedrockProbeBody = []byte(`{"messages":[{"role":"user","content":[{"text":"ping"}]}],"inferenceConfig":{"maxTokens":1}}`)

// ProbeRequest is a one-token Converse of model for either kind: Bedrock's
// runtime has no free call that every credential and model id can make
// (CountTokens and ListAsyncInvokes need IAM actions an invoke-only policy
// lacks, so a healthy upstream would fail them with 403, and CountTokens
// refuses inference profiles), and one token of a model proves what
// serving needs: the endpoint, the signature and the model's access.
func (e *bedrockEndpoint) ProbeRequest(ctx context.Context, _, model string) (*http.Request, error) {
	return e.NewRequest(ctx, codec.Bedrock.Op(false), model, bedrockProbeBody, http.Header{})
}

// Classify maps an answer by its exception, named by the x-amzn-ErrorType
// header or the body's __type, before its status (Bedrock has reported
// throttling as a 400): ThrottlingException and
// ServiceQuotaExceededException are rate limited with no cooldown of
// their own (Bedrock sends no Retry-After: the limiter's backoff applies),
// and so is a 400 whose message asks to wait ("Too many tokens, please
// wait before trying again"); ServiceUnavailableException,
// ModelNotReadyException, InternalServerException, ModelErrorException
// (424), ModelTimeoutException (408) and ModelStreamErrorException are
// server errors; AccessDeniedException, UnrecognizedClientException,
// InvalidSignatureException, IncompleteSignatureException,
// ExpiredTokenException and MissingAuthenticationTokenException are auth
// errors; ValidationException and ResourceNotFoundException are the
// client's. Anything else goes by its status.
func (e *bedrockEndpoint) Classify(status int, h http.Header, body []byte) outcome.Outcome {
	o := outcome.Outcome{Class: ClassifyStatus(status), Status: status}
	if status < 300 {
		return o
	}
	r := gjson.GetManyBytes(body, "__type", "message", "Message")
	typ := codec.BedrockErrorType(h.Get("X-Amzn-Errortype"))
	if typ == "" {
		typ = codec.BedrockErrorType(r[0].Str)
	}
	msg := r[1].Str
	if msg == "" {
		msg = r[2].Str
	}
	switch strings.TrimSuffix(strings.ToLower(typ), "exception") {
	case "throttling", "servicequotaexceeded":
		o.Class = outcome.RateLimited
	case "serviceunavailable", "modelnotready", "internalserver", "modelerror", "modeltimeout", "modelstreamerror":
		o.Class = outcome.ServerError
	case "accessdenied", "unrecognizedclient", "invalidsignature", "incompletesignature", "expiredtoken", "missingauthenticationtoken":
		o.Class = outcome.AuthError
	case "validation", "resourcenotfound":
		o.Class = outcome.ClientError
	}
	if o.Class == outcome.ClientError && asksToWait(msg) {
		o.Class = outcome.RateLimited
	}
	if o.Class == outcome.RateLimited && strings.Contains(strings.ToLower(msg), "token") {
		o.LimitType = "tokens"
	}
	o.Detail = bedrockDetail(typ, msg, o.Class)
	return o
}

// asksToWait reports whether an error message is Bedrock's throttling
// wording.
func asksToWait(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "please wait before trying again") || strings.Contains(m, "too many requests") ||
		strings.HasPrefix(m, "too many tokens")
}

// maxDetail bounds the message an outcome's detail quotes.
const maxDetail = 200

// bedrockDetail says what went wrong: the exception and its message, but
// for an auth error only the exception (a signature mismatch's message
// quotes the canonical request, which may hold a session token).
func bedrockDetail(typ, msg string, c outcome.Class) string {
	if typ == "" {
		typ = "error"
	}
	if msg == "" || c == outcome.AuthError {
		return typ
	}
	if len(msg) > maxDetail {
		cut := maxDetail
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return typ + ": " + msg
}

// isAWSHeader reports whether header k is one of AWS's (x-amz-*, x-amzn-*).
func isAWSHeader(k string) bool {
	return len(k) >= 5 && strings.EqualFold(k[:5], "x-amz")
}
