// Package admin serves Switchyard's admin REST API under /admin/api and the
// embedded web dashboard at /admin/ (DESIGN.md §3).
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
// The package holds no gateway state: it reaches the running gateway through
// the Backend interface, which the gateway implements.
package admin

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// Errors a Backend returns, wrapped with context. The admin API maps them to
// statuses in one place (writeErr); a config.Errors in the chain answers 400
// with its field paths.
var (
	// ErrNotFound: the named upstream, key, route or client key does not exist (404).
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
	// maxBodyBytes bounds a request body.
	maxBodyBytes = 1 << 20
)

// Backend is what the admin API needs from a running gateway. The gateway
// implements it; tests use a fake. Every method may be called concurrently.
type Backend interface {
	UpstreamEditor
	KeyEditor
	RouteEditor
	Observer
}

// UpstreamEditor reads and changes the stored upstreams. A change is
// persisted, then routing is reloaded before the method returns: the next
// request sees it, requests in flight finish on what they started with.
type UpstreamEditor interface {
	// Upstreams returns every upstream, ordered by name, api_key included
	// (the admin package redacts it).
	Upstreams(ctx context.Context) ([]config.Upstream, error)
	// CreateUpstream stores a new upstream. ErrConflict when the name is
	// taken; config.Errors (paths relative to the upstream) when it does not
	// fit the rest of the configuration.
	CreateUpstream(ctx context.Context, u config.Upstream) error
	// UpdateUpstream replaces the named upstream with what edit returns from
	// the stored one, atomically with respect to other changes, and returns
	// the result. ErrNotFound when absent; an error from edit is returned
	// as is and changes nothing. edit must not change the name.
	UpdateUpstream(ctx context.Context, name string, edit func(config.Upstream) (config.Upstream, error)) (config.Upstream, error)
	// DeleteUpstream removes the named upstream; ErrNotFound when absent.
	DeleteUpstream(ctx context.Context, name string) error
}

// KeyEditor reads and changes the stored client keys. Keys are given and
// returned with KeySHA256 set and Key (the plaintext) empty: the secret is
// never stored. Changes are persisted and reloaded as for UpstreamEditor.
type KeyEditor interface {
	// Keys returns every client key, ordered by name.
	Keys(ctx context.Context) ([]config.Key, error)
	// CreateKey stores a new key. ErrConflict when the name is taken;
	// config.Errors when it does not fit the rest (a secret another key
	// has, an unknown allowed upstream).
	CreateKey(ctx context.Context, k config.Key) error
	// UpdateKey is UpdateUpstream for keys.
	UpdateKey(ctx context.Context, name string, edit func(config.Key) (config.Key, error)) (config.Key, error)
	// DeleteKey removes the named key; ErrNotFound when absent.
	DeleteKey(ctx context.Context, name string) error
}

// RouteEditor reads and changes the stored routes. Changes are persisted
// and reloaded as for UpstreamEditor.
type RouteEditor interface {
	// Routes returns every route, ordered by model.
	Routes(ctx context.Context) ([]config.Route, error)
	// RouteDefaults returns the `defaults` a route inherits what it does not set.
	RouteDefaults() config.RouteSettings
	// PutRoute creates or replaces the route for r.Model and reports
	// whether it created it. config.Errors when it does not fit the rest.
	PutRoute(ctx context.Context, r config.Route) (created bool, err error)
	// DeleteRoute removes the route for model; ErrNotFound when absent.
	DeleteRoute(ctx context.Context, model string) error
}

// Observer reports the gateway's live state. Its methods do not change
// anything but DeleteAffinity.
type Observer interface {
	// State returns every upstream's live state (shares are filled in by
	// the admin package).
	State(ctx context.Context) (State, error)
	// Explain computes, without sending anything, the routing decision a
	// request would get now. ErrNotFound for a model no upstream serves or
	// an unknown key; ErrInvalid for a model the key may not use.
	Explain(q ExplainQuery) (*balancer.Decision, error)
	// Decisions returns up to limit of the latest routing decisions, newest first.
	Decisions(limit int) []*balancer.Decision
	// Affinity returns the sticky-session bindings of session, as a
	// JSON-encodable list.
	Affinity(session string) (any, error)
	// DeleteAffinity removes the bindings of session and returns how many it removed.
	DeleteAffinity(session string) (int, error)
	// Usage aggregates request logs since q's start by upstream or key.
	// truncated reports that the bound on logs read was reached, so older
	// requests within the period are missing.
	Usage(ctx context.Context, q UsageQuery) (rows []UsageRow, truncated bool, err error)
}

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
}

// UsageQuery is GET /usage's query. Exactly one of Since and Ago is set.
type UsageQuery struct {
	// Since is the start of the period.
	Since time.Time
	// Ago is the period's length, ending now (the gateway's clock).
	Ago time.Duration
	// By is "upstream" or "key".
	By string
}

// UsageRow is one line of GET /usage.
type UsageRow struct {
	// Name is the upstream's or key's name; "(none)" for requests that no
	// upstream served (or that no key made, e.g. with an invalid key).
	Name string `json:"name"`
	// Requests counts client requests.
	Requests int64 `json:"requests"`
	// InputTokens and OutputTokens add up what the upstreams reported.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// USD is the cost at the upstreams' current prices.
	USD float64 `json:"usd"`
	// Errors counts requests that ended with an error class.
	Errors int64 `json:"errors"`
}

// handler serves the admin API and the dashboard.
type handler struct {
	b        Backend
	log      *slog.Logger
	enabled  bool     // a token is configured
	tokenSum [32]byte // SHA-256 of the token, compared in constant time
}

// New returns the handler of every /admin path: the API under /admin/api
// (each route requiring `Authorization: Bearer token`), the dashboard at
// /admin/, and a redirect to it from /admin and /. An empty token disables
// the API: every call answers 401. logger receives one line per change
// (never a secret); nil discards.
func New(b Backend, token string, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{b: b, log: logger, enabled: token != "", tokenSum: sha256.Sum256([]byte(token))}

	api := http.NewServeMux()
	api.Handle("/admin/api/upstreams", methods{
		http.MethodGet: h.listUpstreams, http.MethodPost: h.createUpstream,
	})
	api.Handle("/admin/api/upstreams/{name}", methods{
		http.MethodGet: h.getUpstream, http.MethodPut: h.replaceUpstream,
		http.MethodPatch: h.patchUpstream, http.MethodDelete: h.deleteUpstream,
	})
	api.Handle("/admin/api/keys", methods{http.MethodGet: h.listKeys, http.MethodPost: h.createKey})
	api.Handle("/admin/api/keys/{name}", methods{
		http.MethodGet: h.getKey, http.MethodPut: h.replaceKey,
		http.MethodPatch: h.patchKey, http.MethodDelete: h.deleteKey,
	})
	api.Handle("/admin/api/routes", methods{http.MethodGet: h.listRoutes})
	api.Handle("/admin/api/routes/{model...}", methods{
		http.MethodGet: h.getRoute, http.MethodPut: h.putRoute, http.MethodDelete: h.deleteRoute,
	})
	api.Handle("/admin/api/state", methods{http.MethodGet: h.state})
	api.Handle("/admin/api/explain", methods{http.MethodGet: h.explain})
	api.Handle("/admin/api/decisions", methods{http.MethodGet: h.decisions})
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
