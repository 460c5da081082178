// Package admin serves Switchyard's admin REST API under /admin/api and the
// embedded web dashboard at /admin/ (docs/admin.md).
//
// New returns one http.Handler for both. Every /admin/api route requires
// `Authorization: Bearer <admin token>`, compared in constant time; the
// dashboard's static files need no token (the page asks for it and keeps it
// in sessionStorage). The API speaks JSON: the config types' JSON with
// durations as Go duration strings, lists as arrays of objects with a `name`,
// errors as {"error":{"message","fields":[{"path","message"}]}}. Upstream
// api_keys are never returned, only a hint (`sk-…last4`); a client key's
// secret is shown once, in the answer that created it.
//
// The domain behind the API is Service: configuration CRUD over the store
// (validated as a whole, then stored, then routing reloaded), the mapping
// of store and validation errors to the API's, and usage totals added up by
// the store. The package holds no gateway state: it reaches the running
// gateway through the small Gateway interface, which the gateway implements.
package admin

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"time"
)

// Errors the Service and the Gateway return, wrapped with context. The admin API maps them to
// statuses in one place (writeErr); a config.Errors in the chain answers 400
// with its field paths.
var (
	// ErrNotFound: the named upstream, key, route, client key or request does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: an upstream or key of that name already exists (409).
	ErrConflict = errors.New("already exists")
	// ErrInvalid: the request is not valid, e.g. an explain for a model the
	// key may not use (400).
	ErrInvalid = errors.New("invalid request")
)

// Limits of the API.
const (
	// DefaultDecisions is how many decisions GET /decisions returns without ?limit.
	DefaultDecisions = 100
	// MaxDecisions is the largest ?limit GET /decisions accepts.
	MaxDecisions = 1000
	// DefaultUsageSince is the period GET /usage covers without ?since.
	DefaultUsageSince = 24 * time.Hour
	// MaxHistoryStep is the longest step GET /state?history= accepts.
	MaxHistoryStep = time.Minute
	// maxBodyBytes bounds a request body.
	maxBodyBytes = 1 << 20
)

// ExplainQuery is GET /explain's query.
type ExplainQuery struct {
	// Model is the client model name. Required.
	Model string
	// Session is the session id the decision is made for; "" for none.
	Session string
	// Stream plans for a streaming request.
	Stream bool
	// Key, when set, is the client key's name: candidates are restricted to
	// what it may use.
	Key string
	// InputTokens and MaxTokens (query input_tokens, max_tokens) size the
	// request for lowest-cost's estimates; Provider (query provider) is
	// routing preferences as JSON (docs/routing.md#per-request-preferences).
	InputTokens, MaxTokens int64
	Provider               string
	// Header (query header, repeatable, each "Name=value") and Tools
	// (query tools=true) are what the route's rules test besides Key,
	// Stream and InputTokens (docs/routing.md#rules).
	Header []string
	Tools  bool
}

// StateQuery is GET /state's query.
type StateQuery struct {
	// History, when > 0, asks for each route upstream's attempts over the
	// window in steps of this length (whole seconds, 1s to MaxHistoryStep).
	History time.Duration
}

// handler serves the admin API and the dashboard.
type handler struct {
	s        *Service
	log      *slog.Logger
	enabled  bool     // a token is configured
	tokenSum [32]byte // SHA-256 of the token, compared in constant time
}

// New returns the handler of every /admin path over s: the API under /admin/api
// (each route requiring `Authorization: Bearer token`), the dashboard at
// /admin/, its icon at /admin/favicon.ico and /favicon.ico, and a redirect
// to it from /admin and /. An empty token disables the API: every call
// answers 401. logger receives one line per change (never a secret); nil
// discards.
func New(s *Service, token string, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{s: s, log: logger, enabled: token != "", tokenSum: sha256.Sum256([]byte(token))}

	ups, keys := upstreamsAPI{h}, keysAPI{h}

	api := http.NewServeMux()
	api.Handle("/admin/api/upstreams", methods{
		http.MethodGet: ups.listUpstreams, http.MethodPost: ups.createUpstream,
	})
	api.Handle("/admin/api/upstreams/{name}", methods{
		http.MethodGet: ups.getUpstream, http.MethodPut: ups.replaceUpstream,
		http.MethodPatch: ups.patchUpstream, http.MethodDelete: ups.deleteUpstream,
	})
	api.Handle("/admin/api/keys", methods{http.MethodGet: keys.listKeys, http.MethodPost: keys.createKey})
	api.Handle("/admin/api/keys/{name}", methods{
		http.MethodGet: keys.getKey, http.MethodPut: keys.replaceKey,
		http.MethodPatch: keys.patchKey, http.MethodDelete: keys.deleteKey,
	})
	api.Handle("/admin/api/routes", methods{http.MethodGet: h.listRoutes})
	api.Handle("/admin/api/routes/{model...}", methods{
		http.MethodGet: h.getRoute, http.MethodPut: h.putRoute, http.MethodDelete: h.deleteRoute,
	})
	api.Handle("/admin/api/state", methods{http.MethodGet: h.state})
	api.Handle("/admin/api/explain", methods{http.MethodGet: h.explain})
	api.Handle("/admin/api/decisions", methods{http.MethodGet: h.decisions})
	api.Handle("/admin/api/requests/{id}", methods{http.MethodGet: h.request})
	api.Handle("/admin/api/affinity", methods{http.MethodGet: h.affinity, http.MethodDelete: h.deleteAffinity})
	api.Handle("/admin/api/usage", methods{http.MethodGet: h.usage})
	// Go's profiler, for finding where a busy gateway spends its time:
	// go tool pprof -http : 'http://host/admin/api/debug/pprof/profile?seconds=10' (with the token).
	api.Handle("/admin/api/debug/pprof/", http.StripPrefix("/admin/api", http.HandlerFunc(pprof.Index)))
	api.HandleFunc("/admin/api/debug/pprof/cmdline", pprof.Cmdline)
	api.HandleFunc("/admin/api/debug/pprof/profile", pprof.Profile)
	api.HandleFunc("/admin/api/debug/pprof/symbol", pprof.Symbol)
	api.HandleFunc("/admin/api/debug/pprof/trace", pprof.Trace)
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "unknown admin endpoint "+r.Method+" "+r.URL.Path, nil)
	})

	root := http.NewServeMux()
	root.Handle("/admin/api/", h.authenticate(api))
	root.Handle("/admin/api", h.authenticate(api))
	root.Handle("/admin/", dashboard())
	root.Handle("/admin/favicon.ico", Favicon())
	root.Handle("/favicon.ico", Favicon())
	root.Handle("/admin", http.RedirectHandler("/admin/", http.StatusMovedPermanently))
	root.Handle("/{$}", http.RedirectHandler("/admin/", http.StatusFound))
	root.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found: "+r.URL.Path, nil)
	})
	return root
}

// methods dispatches on the request method and answers any other with 405
// and an Allow header.
type methods map[string]http.HandlerFunc

func (m methods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f, ok := m[r.Method]; ok {
		f(w, r)
		return
	}
	allowed := make([]string, 0, len(m))
	for k := range m {
		allowed = append(allowed, k)
	}
	sort.Strings(allowed)
	allow := strings.Join(allowed, ", ")
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+allow, nil)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
