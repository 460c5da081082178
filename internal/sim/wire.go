package sim

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/mock"
	adapters "switchyard/internal/provider"
)

// errorDialect is whose error bodies a simulated provider answers with.
type errorDialect uint8

const (
	errorsOpenAI    errorDialect = iota
	errorsAnthropic              // {"type":"error","error":{"type":"rate_limit_error",…}}
	errorsGoogle                 // {"error":{"status":"RESOURCE_EXHAUSTED","details":[RetryInfo]}}
	errorsAWS                    // {"message":…} with x-amzn-ErrorType: ThrottlingException
)

// wire is how a simulated upstream answers one request: the protocol of
// its answer and whose errors it sends, read off the request's path as the
// provider's own server routes it (Vertex serves Claude's Messages under
// Google's errors).
type wire struct {
	family codec.Family
	errors errorDialect
}

// wireOf returns the wire of a request to path.
func wireOf(path string) wire {
	_, method, _ := strings.Cut(path[strings.LastIndexByte(path, '/')+1:], ":")
	switch {
	case method == "rawPredict" || method == "streamRawPredict":
		return wire{codec.FamilyAnthropic, errorsGoogle}
	case method == "generateContent" || method == "streamGenerateContent":
		return wire{codec.FamilyGemini, errorsGoogle}
	case strings.HasSuffix(path, "/converse") || strings.HasSuffix(path, "/converse-stream"):
		return wire{codec.FamilyBedrock, errorsAWS}
	case strings.HasSuffix(path, "/messages"):
		return wire{codec.FamilyAnthropic, errorsAnthropic}
	}
	return wire{codec.FamilyOpenAI, errorsOpenAI}
}

// contentType is the Content-Type of a success answer on w.
func (w wire) contentType(stream bool) string {
	switch {
	case !stream:
		return "application/json"
	case w.family == codec.FamilyBedrock:
		return adapters.EventStreamContentType
	}
	return "text/event-stream"
}

// simAnswer is the content of every simulated answer: one text block.
var simAnswer = []codec.Part{{Kind: codec.PartText, Text: "x"}}

// wholeBody is a non-streaming answer with its usage, in w's protocol,
// written by that protocol's own encoder.
func (w wire) wholeBody(model string, created time.Time, u codec.Usage) []byte {
	return codec.ForFamily(w.family).EncodeResponse(&codec.Response{
		ID: "sim", Model: model, Parts: simAnswer, StopReason: codec.StopEnd,
		Usage: u, Created: created.Unix(),
	})
}

// streamBody is a stream's first event (its start and the first text) and
// the rest of it (the end, with the usage), in w's protocol.
func (w wire) streamBody(model string, u codec.Usage) (first, rest []byte) {
	enc := codec.ForFamily(w.family).NewStreamEncoder(&codec.Request{Model: model, Stream: true, IncludeUsage: true})
	chunks := [...]codec.Chunk{
		{Type: codec.ChunkStart, ID: "sim", Model: model, Usage: codec.Usage{Input: u.Input, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}},
		{Type: codec.ChunkBlockStart, Block: codec.Part{Kind: codec.PartText}},
		{Type: codec.ChunkDelta, Text: simAnswer[0].Text},
		{Type: codec.ChunkBlockStop},
		{Type: codec.ChunkEnd, StopReason: codec.StopEnd, Usage: u},
	}
	for i := range 3 {
		first = enc.Encode(&chunks[i], first)
	}
	for i := 3; i < len(chunks); i++ {
		rest = enc.Encode(&chunks[i], rest)
	}
	return first, rest
}

// rateLimited writes a 429 of limitType in w's dialect: its body, and the
// headers the dialect carries the wait in. retryAfter is how long until
// the quota has room, or 0 when the provider does not say: OpenAI and
// Anthropic send Retry-After, Google a RetryInfo in the body, AWS nothing.
func (w wire) rateLimited(h http.Header, limitType string, retryAfter time.Duration) []byte {
	secs := max(int64((retryAfter+time.Second-1)/time.Second), 1)
	switch w.errors {
	case errorsGoogle:
		var details string
		if retryAfter > 0 {
			details = fmt.Sprintf(`,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"%ds"}]`, secs)
		}
		return fmt.Appendf(nil, `{"error":{"code":429,"message":"Resource exhausted (%s per minute). Please try again later.","status":"RESOURCE_EXHAUSTED"%s}}`, limitType, details)
	case errorsAWS:
		h.Set("X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		return codec.Bedrock.ErrorBody(codec.Error{Status: http.StatusTooManyRequests, Message: "Too many " + limitType + ", please wait before trying again."})
	}
	if retryAfter > 0 {
		h.Set("Retry-After", fmt.Sprint(secs))
	}
	switch {
	case w.errors == errorsAnthropic && limitType == "tokens":
		return anthropicTokens429
	case w.errors == errorsAnthropic:
		return anthropicRequests429
	case limitType == "tokens":
		return openAITokens429
	}
	return openAIRequests429
}

var (
	openAIRequests429    = []byte(`{"error":{"message":"Rate limit reached on requests per min (RPM)","type":"requests","code":"rate_limit_exceeded"}}`)
	openAITokens429      = []byte(`{"error":{"message":"Rate limit reached on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}`)
	anthropicRequests429 = []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}`)
	anthropicTokens429   = []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
)

// serverError is a 5xx body in w's dialect.
func (w wire) serverError(status int) []byte {
	e := codec.Error{Status: status, Type: "server_error", Message: "simulated server error"}
	switch w.errors {
	case errorsAnthropic:
		return codec.Anthropic.ErrorBody(e)
	case errorsGoogle:
		return codec.Gemini.ErrorBody(e)
	case errorsAWS:
		return codec.Bedrock.ErrorBody(e)
	}
	return codec.OpenAIChat.ErrorBody(e)
}

// tokenPath is the simulated OAuth2 token endpoint, below simHost.
const tokenPath = "token"

// tokenAnswer is the token endpoint's answer: an access token for an hour
// (of the wall clock, which the token cache reads; a run takes seconds).
var tokenAnswer = []byte(`{"access_token":"sim-access-token","token_type":"Bearer","expires_in":3600}`)

// simAccount is the service account every simulated Vertex upstream signs
// its token requests with, made once per process (an RSA key takes a while).
var simAccount = sync.OnceValues(func() (*mock.ServiceAccount, error) {
	return mock.NewServiceAccount("switchyard-simulate@simulated.iam.gserviceaccount.com")
})

// simulatedCredentials gives u the simulation's own credentials where its
// provider exchanges them for tokens (Vertex) or fetches them from the
// platform (Bedrock's AWS default chain, Azure's Entra ID): the configured
// key file is never read, the platform is never asked, and the token
// requests reach the simulated token endpoint.
func simulatedCredentials(u *config.Upstream) error {
	if b := u.Bedrock; b != nil && b.AccessKeyID == "" && u.APIKey == "" {
		c := *b
		c.AccessKeyID, c.SecretAccessKey, c.Profile = "AKIDSIMULATED", "simulated", ""
		u.Bedrock = &c
	}
	if u.Azure != nil {
		u.Azure, u.APIKey = nil, "simulated"
	}
	if u.Vertex == nil {
		return nil
	}
	sa, err := simAccount()
	if err != nil {
		return fmt.Errorf("making the simulated service account: %w", err)
	}
	v := *u.Vertex
	v.CredentialsFile, v.CredentialsJSON = "", string(sa.JSON(v.Project, simHost+tokenPath))
	u.Vertex = &v
	return nil
}
