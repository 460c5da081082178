// Package mock is a configurable mock LLM upstream that speaks the OpenAI,
// Anthropic, Gemini and AWS Bedrock (Converse) wire formats well enough for
// the official SDKs to parse it. The gateway's tests run against it, `switchyard serve --demo`
// starts three of them in process, and `switchyard mock` serves one from
// the command line.
//
// Endpoints, exactly the real services' paths (Azure's
// /openai/deployments/{d}/{op}?api-version=… and /openai/v1/{op} besides),
// so that a base_url that would fail in production fails here too; any
// other path is refused with 404 in the family's error shape:
//
//	POST /v1/chat/completions   chat.completion, or chat.completion.chunk events
//	POST /v1/completions        text_completion, JSON or stream
//	POST /v1/embeddings         a list of deterministic unit vectors
//	POST /v1/responses          a Responses API object, or its event stream
//	POST /v1/messages           an Anthropic message, or its event stream
//	POST /v1/messages/count_tokens  Anthropic's {"input_tokens"}
//	GET  /v1/models[/{id}]      OpenAI's list, Anthropic's with anthropic-version
//	POST /v1beta/models/{m}:generateContent              a GenerateContentResponse
//	POST /v1beta/models/{m}:streamGenerateContent?alt=sse its chunks as SSE
//	POST /v1beta/models/{m}:countTokens, :embedContent, :batchEmbedContents
//	GET  /v1beta/models[/{m}]   Gemini's model list or model
//	POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent (and Gemini's other methods)
//	POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict   an Anthropic message
//	POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:streamRawPredict its event stream
//	POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/count-tokens:rawPredict {"input_tokens"}
//	GET  /v1/publishers/{google|anthropic}/models/{m}   the PublisherModel
//	POST /token                 the OAuth2 JWT bearer grant of Options.ServiceAccount
//	GET  /computeMetadata/v1/…  the GCE metadata server's token; POST /{tenant}/oauth2/v2.0/token, Entra ID's (platform_tokens.go)
//	POST /model/{modelId}/converse         a ConverseResponse (Bedrock)
//	POST /model/{modelId}/converse-stream  ConverseStream's AWS event-stream frames
//
// Vertex paths accept only unexpired access tokens that POST /token issued
// (Authorization: Bearer), else 401 UNAUTHENTICATED; a Claude body must
// carry anthropic_version vertex-2023-10-16 and no model. Vertex's own
// errors (auth, quota, unavailable) are Google's shape for both
// publishers; Claude's are Anthropic's.
//
// Answers are deterministic: the same request gets the same answer, plain
// or streamed, on every run. A request that offers tools and whose last
// turn is the user's gets a call of the first tool (the first two when the
// user's text says "parallel"; the one tool_choice names), with arguments
// built from the tool's JSON Schema; one whose last turn is a tool result
// gets "The tool returned: <result>"; one with images gets "I see 1 image
// (image/png, 68 bytes)."; any other gets CompletionTokens words drawn from
// a RNG seeded by Options.Seed and the request's model and prompt.
// Reasoning (Anthropic thinking, OpenAI reasoning effort, Gemini thoughts,
// Claude's thinking on Bedrock) comes first where the family shows it, and
// usage reports it. The text ends before the first stop sequence it
// contains. Prompt tokens are the body's bytes / 4; a prompt of 1024
// tokens or more, or an Anthropic prompt with cache_control (a Bedrock one
// with cachePoint blocks), reports half of it (rounded down to a multiple
// of 64) as cached, the first request of such a prefix as a cache write. Requests are validated as the real APIs do (images, tool
// results that answer no call, thinking budgets and signatures, Gemini
// roles, Bedrock's alternating turns) and refused with 400 in the family's
// error shape (Bedrock's {"message"} with x-amzn-ErrorType). Bedrock
// requests are checked against Options' AWS credentials (SigV4) or its
// API key (Bearer). The response
// "model" echoes the request's, so a test can see a gateway's model_map at
// work. Every response carries X-Mock-Upstream. Ids (responses, messages,
// completions) carry a random tag of the mock's own, so that two mocks
// never issue the same; a Responses request whose previous_response_id
// this mock did not issue is refused with 404 previous_response_not_found,
// as an account that does not hold the response refuses it.
//
// How the mock misbehaves (latency, TTFT, speed, error rate, forced status,
// its own RPM/TPM limits, hanging, stalled streams, cut streams, error
// events in streams, broken or empty bodies) is a Behavior,
// changeable at run time with SetBehavior or over HTTP:
//
//	GET         /_mock/behavior   the Behavior as JSON
//	PUT         /_mock/behavior   replace it (absent fields become zero)
//	PATCH       /_mock/behavior   merge into it
//	GET         /_mock/stats      Stats as JSON
//	POST        /_mock/reset      zero the stats, the RPM/TPM windows and the prompt cache
package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
)

// HeaderUpstream is the response header that names the mock that answered.
const HeaderUpstream = "X-Mock-Upstream"

// maxBodyBytes bounds a request body; larger ones answer 413.
const maxBodyBytes = 32 << 20

// shutdownGrace is how long Serve lets in-flight requests finish after its
// context ends before it closes their connections.
const shutdownGrace = 5 * time.Second

// DefaultModels are the models a mock lists when Options.Models is empty.
var DefaultModels = []string{
	"gpt-4o", "gpt-4o-mini", "gpt-4.1-mini", "text-embedding-3-small",
	"claude-3-5-haiku", "claude-sonnet-4-5",
	"gemini-2.0-flash", "gemini-2.5-flash",
}

// Options configure a mock upstream.
type Options struct {
	// Name is sent in X-Mock-Upstream on every response; default "mock".
	Name string
	// Behavior is the initial behaviour (see Behavior). It is not
	// validated; call Behavior.Validate for input from users.
	Behavior Behavior
	// Clock times the RPM/TPM windows and the Latency/TTFT/TPS waits, and
	// stamps "created"; default clock.Real.
	Clock clock.Clock
	// Seed seeds the ErrorRate draws and the answer text; the same seed
	// gives the same answers and, for sequential requests, the same errors.
	Seed int64
	// Models are listed by GET /models; default DefaultModels. Requests for
	// other models are still answered.
	Models []string
	// APIKey, when set, is the only key the mock accepts, in each family's
	// header (see the package documentation); a missing or wrong key gets
	// the provider's 401 (Google: 403 missing, 400 API_KEY_INVALID wrong).
	// Empty accepts any key, and none but for Gemini, which needs one.
	// Vertex requests need an access token instead (ServiceAccount). It is
	// also the Bedrock API key a Bedrock request may carry as Bearer.
	APIKey string
	// AWSAccessKeyID and AWSSecretAccessKey, when set, are the credentials
	// a Bedrock request's SigV4 signature must be made with: the mock signs
	// the request's signed parts again and compares, and refuses an
	// X-Amz-Date more than 5 minutes from its clock (403
	// InvalidSignatureException, or UnrecognizedClientException for
	// another key id). Bedrock requests are refused without a signature or
	// the APIKey as Bearer when either these or APIKey are set, and
	// accepted with any credentials when none is.
	AWSAccessKeyID, AWSSecretAccessKey string
	// AWSSessionToken, when set with them, makes them temporary
	// credentials: a signed request must carry it as X-Amz-Security-Token,
	// among its signed headers, as AWS requires of temporary credentials
	// (403 UnrecognizedClientException without it or with another).
	AWSSessionToken string
	// ServiceAccount is the service account whose JWT assertions the
	// OAuth2 token endpoint (POST /token) exchanges for access tokens, the
	// only credentials Vertex paths accept; nil refuses every assertion.
	ServiceAccount *ServiceAccount
	// Entra, when set, is the Entra ID application whose access tokens
	// (POST /{tenant}/oauth2/v2.0/token) Azure OpenAI paths accept as
	// Authorization: Bearer, besides APIKey in api-key.
	Entra *EntraApp
	// TokenLifetime is the lifetime (expires_in) of the access tokens
	// issued (Google's and Entra's); default DefaultTokenLifetime (1 h). SetTokenLifetime
	// changes it at run time.
	TokenLifetime time.Duration
	// Now is the token endpoint's clock: access tokens expire, and
	// assertions' exp is checked, by it. Default: Clock's Now.
	Now func() time.Time
}

// Server is a mock LLM upstream; it implements http.Handler. It is safe for
// concurrent use, and two Servers share nothing.
type Server struct {
	name   string
	clock  clock.Clock
	seed   int64
	models []string
	apiKey string
	aws    awsCredentials

	mu       sync.RWMutex // guards behavior
	behavior Behavior

	rngMu sync.Mutex // guards rng
	rng   *rand.Rand // ErrorRate draws

	seq    atomic.Uint64                // response and tool call ids
	idTag  string                       // in every id, unique to this mock (newIDTag)
	stored *lru.Cache[string, struct{}] // the response ids issued (stored.go)
	stats  *stats
	tokens *tokens // Vertex's OAuth2 access tokens, from POST /token or the metadata server
	// entra are the Entra ID tokens issued for entraApp (nil: none).
	entra    *tokens
	entraApp *EntraApp
	limiter  limiter
	// prefixes are the Anthropic cache_control prefixes seen, so that the
	// first request of one writes the cache and later ones read it.
	prefixes *lru.Cache[uint64, struct{}]

	// Test hooks, nil in production: hangHook runs when a request starts
	// hanging (Hang, or StallAfterHeaders once its headers are out),
	// doneHook when an API request has finished.
	hangHook func()
	doneHook func()
}

var _ http.Handler = (*Server)(nil)

// New returns a mock upstream configured by opts.
func New(opts Options) *Server {
	s := &Server{
		name:     opts.Name,
		clock:    opts.Clock,
		seed:     opts.Seed,
		models:   append([]string(nil), opts.Models...),
		apiKey:   opts.APIKey,
		aws:      newAWSCredentials(opts.AWSAccessKeyID, opts.AWSSecretAccessKey, opts.AWSSessionToken),
		behavior: opts.Behavior,
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed_e770)),
		stats:    newStats(),
		idTag:    newIDTag(),
		stored:   newStored(),
	}
	if s.name == "" {
		s.name = "mock"
	}
	prefixes, err := lru.New[uint64, struct{}](prefixCacheSize)
	if err != nil {
		panic(fmt.Sprintf("mock: %v", err)) // a bug: the size is a positive constant
	}
	s.prefixes = prefixes
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	now := opts.Now
	if now == nil {
		now = s.clock.Now
	}
	s.tokens = newTokens(now, opts.ServiceAccount, opts.TokenLifetime)
	s.entra = newTokens(now, nil, opts.TokenLifetime)
	if opts.Entra != nil {
		app := *opts.Entra
		s.entraApp = &app
	}
	if len(s.models) == 0 {
		s.models = append([]string(nil), DefaultModels...)
	}
	return s
}

// Name returns the name sent in X-Mock-Upstream.
func (s *Server) Name() string { return s.name }

// Behavior returns the current behaviour.
func (s *Server) Behavior() Behavior {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.behavior
}

// SetBehavior replaces the behaviour. Requests already being answered keep
// the behaviour they started with.
func (s *Server) SetBehavior(b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behavior = b
}

// Stats returns a copy of what the mock has seen.
func (s *Server) Stats() Stats {
	st := s.stats.snapshot()
	st.TokensIssued, st.TokensRefused = s.tokens.issued.Load(), s.tokens.refused.Load()
	return st
}

// ResetStats zeroes the counters and forgets the last request. The RPM/TPM
// windows are kept; ResetLimits clears them. Issued tokens stay valid.
func (s *Server) ResetStats() {
	s.stats.reset()
	s.tokens.issued.Store(0)
	s.tokens.refused.Store(0)
}

// ResetLimits empties the RPM/TPM windows.
func (s *Server) ResetLimits() { s.limiter.reset() }

// ResetCache forgets the prompt prefixes seen, so that the next request
// with cache_control writes the cache again.
func (s *Server) ResetCache() { s.prefixes.Purge() }

// Start listens on addr (":0" picks a free port), serves s in the background
// until ctx ends, then shuts down gracefully. It returns the mock and its base
// URL, such as http://127.0.0.1:PORT; a provider's base_url appends its
// version path (provider.BasePath: /v1 for OpenAI and Anthropic).
func Start(ctx context.Context, addr string, opts Options) (*Server, string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := New(opts)
	go func() { _ = s.Serve(ctx, ln) }()
	return s, BaseURL(ln.Addr()), nil
}

// Serve answers requests on ln until ctx ends, then stops accepting, lets
// in-flight requests finish for up to 5 s and closes the rest (hung requests
// and slow streams). It returns nil after a shutdown caused by ctx, or the
// error that stopped serving.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving mock %s: %w", s.name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	<-errc
	return nil
}

// BaseURL is the http:// URL a client uses to reach a listener's address;
// an unspecified host (":0", "0.0.0.0", "[::]") becomes 127.0.0.1.
func BaseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// ServeHTTP answers one request: /_mock/ control requests, or an API request
// shaped by the current Behavior.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(HeaderUpstream, s.name)
	if r.URL.Path == tokenPath {
		s.serveToken(w, r)
		return
	}
	if isPlatformTokenPath(r.URL.Path) {
		s.servePlatformToken(w, r)
		return
	}
	if isControlPath(r.URL.Path) {
		s.serveControl(w, r)
		return
	}
	rt := parseRoute(r)
	sw := &statusWriter{ResponseWriter: w}
	c := &call{s: s, w: sw, r: r, rt: rt, b: s.Behavior(), now: s.clock.Now()}

	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	c.body = body
	s.stats.begin(r, rt.endpoint, body)
	defer func() {
		s.stats.end(sw.status, r.Context().Err() != nil)
		if s.doneHook != nil {
			s.doneHook()
		}
	}()
	c.serve(readErr)
}

// drawError reports whether a request should fail, with probability rate.
func (s *Server) drawError(rate float64) bool {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < rate
}

// sleep waits d on the server's clock; it returns false if the client went
// away first.
func (c *call) sleep(d time.Duration) bool {
	ctx := c.r.Context()
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-c.s.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// id returns a fresh id with prefix, unique to this mock.
func (c *call) id(prefix string) string {
	return prefix + c.s.idTag + strconv.FormatUint(c.s.seq.Add(1), 10)
}

// answer returns n answer words for this request.
func (c *call) answer(n int) []string {
	return answerWords(c.s.seed, c.answerKey(), n)
}

// answerKey identifies the request's model and prompt (not its other
// settings), so that the same conversation gets the same words.
func (c *call) answerKey() uint64 {
	if c.rt.proto == protoGemini {
		return hash64(c.model,
			gjson.GetBytes(c.body, "systemInstruction").Raw,
			gjson.GetBytes(c.body, "contents").Raw)
	}
	return hash64(c.model,
		gjson.GetBytes(c.body, "system").Raw,
		gjson.GetBytes(c.body, "instructions").Raw,
		gjson.GetBytes(c.body, "messages").Raw,
		gjson.GetBytes(c.body, "prompt").Raw,
		gjson.GetBytes(c.body, "input").Raw)
}

// setCommonHeaders sets the rate-limit and request-id headers every API
// answer carries.
func (c *call) setCommonHeaders() {
	h := c.w.Header()
	if c.rt.proto == protoGemini || c.rt.vertex {
		return // Google sends neither rate-limit headers nor a request id
	}
	if c.rt.proto == protoBedrock { // a request id, no rate-limit headers
		h.Set("x-amzn-RequestId", bedrockRequestID(c.s.seq.Add(1)))
		return
	}
	if !c.limited {
		c.limits, _ = c.s.limiter.admit(c.now, c.b.RPM, c.b.TPM, 0, false)
		c.limited = true
	}
	c.limits.setHeaders(h, c.rt.proto, c.now)
	reqID := "req_mock" + strconv.FormatUint(c.s.seq.Add(1), 10)
	if c.rt.proto == protoAnthropic {
		h.Set("request-id", reqID)
	} else {
		h.Set("x-request-id", reqID)
	}
}

// obj is a JSON object under construction.
type obj = map[string]any

// writeJSON answers status with v as JSON.
func (c *call) writeJSON(status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mock: encoding a response: %v", err)) // a bug: every value is built here
	}
	c.setCommonHeaders()
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(data)
}

// fail answers e in the request's protocol shape (errorProto); Bedrock
// names the exception in x-amzn-ErrorType.
func (c *call) fail(e apiError) {
	if c.rt.proto == protoBedrock {
		c.w.Header().Set("x-amzn-ErrorType", e.typ+bedrockErrorTypeSuffix)
	}
	c.writeJSON(e.status, e.body(c.errorProto(e.status)))
}
