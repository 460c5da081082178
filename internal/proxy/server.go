// Package proxy serves the client API of docs/reference.md#client-api: it authenticates the
// caller, peeks at the request, asks the balancer for a plan, and runs the
// attempt loop that forwards the request to upstreams, failing over before
// the first byte reaches the client and streaming SSE through event by event.
package proxy

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/limits"
	"switchyard/internal/metrics"
	"switchyard/internal/state"
	"switchyard/internal/store"
)

// LogSink receives one record per client request. Enqueue must not block.
type LogSink interface {
	Enqueue(l store.RequestLog) bool
}

// Options wires a Server's dependencies.
type Options struct {
	// Clock times attempts and timeouts. Required.
	Clock clock.Clock
	// Logger receives operational logs; routing decisions at debug level.
	Logger *slog.Logger
	// Transport sends upstream requests. Default: a tuned http.Transport.
	Transport http.RoundTripper
	// Go runs f on a goroutine of its own: each attempt a hedged request
	// races (docs/routing.md#hedged-requests). Default: the go statement; the simulator
	// runs f as a task of its scheduler.
	Go func(f func())
	// State is the live routing state (breakers, limits, slots, statistics,
	// key windows) whichever state.driver runs. Default: a new in-process one.
	State state.Driver
	// Spend tracks spend per upstream and key. Default: a new one (not persisted).
	Spend *limits.Spend
	// Affinity holds session bindings. Default: an in-process table of 10,000.
	Affinity affinity.ContextStore
	// Metrics records the Prometheus series. Default: a private, unexported set.
	Metrics *metrics.Metrics
	// Latency, when set, returns an upstream's last probe RTT in ms (the
	// latency the weighted-random score uses; 0 = unknown).
	Latency func(upstream string) float64
	// Logs receives request logs; nil disables them.
	Logs LogSink
	// OnDecision, when set, receives every routing decision once the
	// attempts made on its plan are over, listed in Decision.Tried (a plan
	// that only waited for an upstream to free up has none). It must not
	// block, and may keep the decision.
	OnDecision func(*balancer.Decision)
	// MaxResponseBytes caps a non-streaming upstream response. Default 64 MiB.
	MaxResponseBytes int64
	// Waiting counts the requests waiting in upstream queues, by class and
	// key, for the admin API. Default: a private one.
	Waiting *limits.Waiting
	// Tracer, when set, traces every client request, its attempts and
	// the probes (docs/tracing.md); nil turns tracing off at no cost.
	Tracer trace.Tracer
}

// Server is the client-facing HTTP handler. Create it with New.
type Server struct {
	opts Options
	// upstream sends upstream requests. It is the transport itself, not an
	// http.Client: redirects from an LLM API are not followed (the body
	// would be lost), and the client's redirect bookkeeping costs a header
	// copy per request.
	upstream http.RoundTripper
	catalog  atomic.Pointer[Catalog]
	// attempts counts the attempts of hedged races that may still be
	// running after their request's handler returned: each ends itself
	// (gives its lease back) when it unwinds. Drain waits for them.
	attempts sync.WaitGroup
}

// New returns a Server routing with cat.
func New(opts Options, cat *Catalog) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Transport == nil {
		opts.Transport = NewTransport()
	}
	if opts.State == nil {
		opts.State = state.NewLocal(state.LocalOptions{Clock: opts.Clock})
	}
	if opts.Spend == nil {
		opts.Spend = limits.NewSpend(opts.Clock)
	}
	if opts.Affinity == nil {
		opts.Affinity = affinity.WithContext(affinity.NewTable(affinity.DefaultMaxEntries, opts.Clock))
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New(func() []string { return nil }, func() []string { return nil })
	}
	if opts.Go == nil {
		opts.Go = func(f func()) { go f() }
	}
	if opts.Waiting == nil {
		opts.Waiting = new(limits.Waiting)
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	s := &Server{opts: opts, upstream: opts.Transport}
	s.catalog.Store(cat)
	return s
}

// NewTransport returns the upstream transport: keep-alive pools sized for
// many concurrent streams, HTTP/2 where the upstream offers it. It starts
// from http.DefaultTransport's settings (proxy from the environment, dial
// and TLS timeouts) when that is still an *http.Transport.
func NewTransport() *http.Transport {
	t, ok := http.DefaultTransport.(*http.Transport)
	if ok {
		t = t.Clone()
	} else { // replaced by the program: start from the same defaults
		t = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ExpectContinueTimeout = 0
	return t
}

// Drain waits until every attempt of a finished hedged race has ended
// and given its lease back, or ctx ends first (then its error). Shutdown
// calls it after the HTTP server has stopped, so that no slot, reservation
// or shared lease is left behind.
func (s *Server) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.attempts.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("draining hedged attempts: %w", ctx.Err())
	}
}

// SetCatalog swaps in a new routing table. Requests already in flight finish
// with the one they started with.
func (s *Server) SetCatalog(c *Catalog) { s.catalog.Store(c) }

// Catalog returns the routing table in force.
func (s *Server) Catalog() *Catalog { return s.catalog.Load() }

// ServeHTTP routes the client API: the proxied endpoints and GET /v1/models.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	cl, ok := call{codec: endpoints[path]}, endpoints[path] != nil
	if !ok {
		cl, ok = geminiCall(path)
	}
	if ok {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, cl.codec, newError(ErrMethodNotAllowed, r.Method+" "+path+" is not allowed; use POST"))
			return
		}
		s.serveProxy(w, r, cl, path)
		return
	}
	if path == "/v1/models" || path == "/v1beta/models" || modelPath(path) != "" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, clientCodec(r), newError(ErrMethodNotAllowed, r.Method+" "+path+" is not allowed; use GET"))
			return
		}
		s.serveModels(w, r, modelPath(path))
		return
	}
	writeError(w, clientCodec(r), newError(ErrNotFound, "unknown endpoint "+r.Method+" "+r.URL.Path))
}

// modelPath returns the model id of GET /v1/models/{id} (Gemini:
// /v1beta/models/{id}), or "".
func modelPath(path string) string {
	for _, prefix := range []string{"/v1/models/", "/v1beta/models/"} {
		if id, ok := strings.CutPrefix(path, prefix); ok && !strings.Contains(id, ":") {
			return id
		}
	}
	return ""
}

// serveModels lists the models the caller's key may use, or describes one
// (id non-empty), in the caller's protocol.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, id string) {
	c := clientCodec(r)
	cat := s.catalog.Load()
	key, err := cat.authenticate(r)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = apiErrorFor(err)
		}
		writeError(w, c, ae)
		return
	}
	names := cat.models(key)
	body := codec.ModelList(c.Family(), names)
	if id != "" {
		if i, found := slices.BinarySearch(names, id); !found || names[i] != id {
			writeError(w, c, newError(ErrModelNotFound, fmt.Sprintf("model %q does not exist or this key may not use it", id)))
			return
		}
		body = codec.ModelObject(c.Family(), id)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// requestID returns the client's X-Request-Id when it is sane, else a new one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && printableASCII(id) {
		return id
	}
	var b [16]byte
	for i := 0; i < len(b); i += 8 {
		v := rand.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return "req_" + hex.EncodeToString(b[:])
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// readBody reads at most limit bytes of the request body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, newError(ErrBodyTooLarge, bodyTooLargeMsg(limit))
	}
	body, err := readSized(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, newError(ErrBodyTooLarge, bodyTooLargeMsg(limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, newError(ErrBodyTimeout, "")
	case err != nil:
		return nil, newError(ErrInvalidRequest, "reading request body: "+err.Error())
	}
	return body, nil
}

// readSized is io.ReadAll starting with room for size bytes (the declared
// Content-Length, when known and ≤ 1 MiB), so that a body is read into one
// buffer instead of a doubling series of them.
func readSized(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > 1<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func bodyTooLargeMsg(limit int64) string {
	return "request body exceeds the limit of " + itoa(limit) + " bytes"
}
