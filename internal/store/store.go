// Package store defines the persistence layer of the gateway: the
// backend-neutral Store interface that holds configuration (upstreams, client
// keys, routes), request logs and spend totals, and the LogWriter that moves
// request logs from the hot path to a Store asynchronously, in batches.
//
// Backends live in subpackages (internal/store/sqlite and
// internal/store/postgres); only those subpackages import a database driver.
// A backend that several instances can share also implements Watcher, which
// reports configuration changes made by any of them. internal/store/storetest
// is the conformance suite every backend runs.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"switchyard/internal/config"
)

// Errors a Store returns. Callers classify with errors.Is; implementations
// wrap them with context ("deleting upstream \"a\": not found").
var (
	// ErrNotFound means the named upstream, key, route or request log does
	// not exist.
	ErrNotFound = errors.New("not found")
	// ErrPlaintextKey means a client key was given with its plaintext secret
	// (Key set) or without a valid hex SHA-256 (KeySHA256). The store holds
	// only hashes of client keys; hash the secret before upserting it.
	ErrPlaintextKey = errors.New("client key must be stored as its sha256 hash only")
	// ErrClosed means the Store was closed: Watch returns it when the Store
	// is closed before or while it watches.
	ErrClosed = errors.New("store closed")
)

// Store persists configuration and request logs. Implementations are safe for
// concurrent use. Every method that does I/O takes a context that bounds it.
//
// Upserts are keyed by the object's natural id (Upstream.Name, Key.Name,
// Route.Model) and store every field, so that List returns objects equal to
// the ones upserted; empty maps may come back as nil. Lists are ordered by
// that id. The hot path never calls a Store directly: request logs go through
// a LogWriter.
type Store interface {
	// Ping reports whether the backend is reachable (used by /readyz).
	Ping(ctx context.Context) error

	// UpsertUpstream inserts or replaces the upstream named u.Name. Every
	// field is stored, APIKey included: the gateway needs it to call the
	// upstream.
	UpsertUpstream(ctx context.Context, u config.Upstream) error
	// DeleteUpstream removes the named upstream; ErrNotFound when absent.
	DeleteUpstream(ctx context.Context, name string) error
	// ListUpstreams returns every upstream, ordered by name.
	ListUpstreams(ctx context.Context) ([]config.Upstream, error)

	// UpsertKey inserts or replaces the client key named k.Name. k.Key (the
	// plaintext secret) must be empty and k.KeySHA256 must hold the hex
	// SHA-256 of the secret; otherwise it returns ErrPlaintextKey and stores
	// nothing. The store never holds a plaintext client key.
	UpsertKey(ctx context.Context, k config.Key) error
	// DeleteKey removes the named client key; ErrNotFound when absent.
	DeleteKey(ctx context.Context, name string) error
	// ListKeys returns every client key (hashes only), ordered by name.
	ListKeys(ctx context.Context) ([]config.Key, error)

	// UpsertRoute inserts or replaces the route for r.Model.
	UpsertRoute(ctx context.Context, r config.Route) error
	// DeleteRoute removes the route for model; ErrNotFound when absent.
	DeleteRoute(ctx context.Context, model string) error
	// ListRoutes returns every route, ordered by model.
	ListRoutes(ctx context.Context) ([]config.Route, error)

	// InsertRequestLogs appends logs in one transaction: either every log of
	// the batch is stored or none is. An empty batch is a no-op. It must not
	// retain logs after returning: the LogWriter reuses the slice. Text the
	// backend cannot hold (a NUL byte, invalid UTF-8) may be stored with
	// U+FFFD in its place, but never fails the batch.
	InsertRequestLogs(ctx context.Context, logs []RequestLog) error
	// RecentRequestLogs returns at most limit logs, newest (by Time) first.
	// A limit ≤ 0 returns none.
	RecentRequestLogs(ctx context.Context, limit int) ([]RequestLog, error)
	// RequestLog returns the request log whose ID is id, the newest (by
	// Time, then last inserted) when several share it (a client may reuse
	// an X-Request-Id). It returns an error wrapping ErrNotFound when none
	// has, which includes a log still queued in a LogWriter.
	RequestLog(ctx context.Context, id string) (RequestLog, error)
	// UsageTotals adds up, in the database, the request logs whose Time is
	// at or after since (to the nanosecond; a log with the zero Time is
	// never counted): one total per (Upstream, Key, Model) and UTC day that
	// has a log, ordered by upstream, key, model, then day. Grouping by all
	// of them lets a caller total by any one. It never returns nil.
	UsageTotals(ctx context.Context, since time.Time) ([]UsageTotal, error)

	// AddSpend adds every delta's USD to the total stored under its
	// (Scope, Name, PeriodStart), creating the total when missing, in one
	// transaction: either every delta of the batch is added or none is.
	// Deltas sharing a key add up. An empty batch is a no-op. A delta with an
	// empty Scope or Name, a zero PeriodStart or a USD that is not a finite
	// number fails the whole batch. It must not retain deltas after returning.
	AddSpend(ctx context.Context, deltas []SpendDelta) error
	// LoadSpend returns every spend total whose PeriodStart is at or after
	// since, ordered by scope, name and period start.
	LoadSpend(ctx context.Context, since time.Time) ([]SpendTotal, error)

	// Close releases the backend. The Store must not be used afterwards.
	Close() error
}

// Watcher is implemented by a Store whose configuration several parties may
// change: other gateway instances sharing the database, or an operator with
// SQL. The gateway asserts it (st.(store.Watcher)) and, when present, reloads
// upstreams, keys and routes from the Store on every call of onChange, so that
// an admin change made through any instance reaches every instance. A Store
// that is not a Watcher is only ever changed through its own instance.
type Watcher interface {
	// Watch calls onChange after upstreams, keys or routes changed, whoever
	// changed them (this Store included), until ctx ends; it blocks until
	// then and returns nil. It returns an error wrapping ErrClosed when the
	// Store is closed before or while it watches.
	//
	// onChange runs on Watch's goroutine, one call at a time, and should
	// return promptly (reload and return); changes made meanwhile are not
	// lost but coalesced into one further call. Watch also calls onChange
	// as soon as it watches, and after it recovered from losing the
	// database, because changes may have been missed in between: a call does
	// not prove a change, it asks the caller to reload. A committed change
	// is reported within 5 seconds while the database is reachable.
	// Transient database errors are retried inside Watch and never end it.
	// Several Watch calls may run at once on one Store.
	Watch(ctx context.Context, onChange func()) error
}

// RequestLog is one proxied request as persisted. It never holds request or
// response bodies, nor any secret: Key is the client key's name.
type RequestLog struct {
	// ID is the request id (X-Request-Id). Not required to be unique.
	ID string `json:"id"`
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Key is the name of the client key that made the request.
	Key string `json:"key"`
	// Model is the client-facing model name.
	Model string `json:"model"`
	// Upstream is the name of the upstream that served the last attempt; "" when none did.
	Upstream string `json:"upstream"`
	// Status is the HTTP status returned to the client.
	Status int `json:"status"`
	// Attempts is the number of upstream attempts made (≥ 1 when any was).
	Attempts int `json:"attempts"`
	// Stream reports whether the client asked for a streamed response.
	Stream bool `json:"stream"`
	// Latency is the whole request's duration.
	Latency time.Duration `json:"latency_ns"`
	// TTFT is the time to the first byte (streaming: first event) from the upstream; 0 when unknown.
	TTFT time.Duration `json:"ttft_ns"`
	// InputTokens is the prompt token count the upstream reported.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens is the completion token count the upstream reported;
	// for a stream cut before it reported one, the content events received.
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// the upstream read from and wrote to its prompt cache
	// (docs/protocols.md#usage-and-cache-tokens).
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CostUSD is the cost of the answer's usage at the model's price on
	// the upstream that served it (docs/reference.md#request-cost); 0 when
	// unpriced or when no upstream answered.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced: the upstream that served the request has no price for the
	// model, so CostUSD is 0 without being free.
	Unpriced bool `json:"unpriced,omitempty"`
	// ErrorClass classifies a failure (rate_limited, server_error, …); "" on success.
	ErrorClass string `json:"error_class,omitempty"`
	// Error is a short, secret-free error message; "" on success.
	Error string `json:"error,omitempty"`
	// Translated is "<client protocol>-><upstream protocol>" when the
	// request was translated for the upstream that served it
	// (docs/protocols.md), "" when it passed through.
	Translated string `json:"translated,omitempty"`
	// Tried lists the request's upstream attempts in the order they
	// started: retries one after another, hedges alongside the attempt
	// they raced (docs/routing.md#hedged-requests); the one whose answer the
	// client got has Won set.
	Tried []Attempt `json:"tried,omitempty"`
	// TraceID is the request's OpenTelemetry trace id (32 hex digits)
	// when tracing is on (docs/tracing.md), else "".
	TraceID string `json:"trace_id,omitempty"`
}

// Attempt is one upstream attempt of a request, as its request log keeps it.
type Attempt struct {
	// Upstream is the upstream tried.
	Upstream string `json:"upstream"`
	// Start is when it was sent, measured from the request's arrival;
	// FirstByte (when it got that far, else 0) and End are measured from
	// Start: the attempt ended at Start+End after the request arrived.
	Start     time.Duration `json:"start_ns"`
	FirstByte time.Duration `json:"first_byte_ns,omitempty"`
	End       time.Duration `json:"end_ns"`
	// Status is the upstream's HTTP status, 0 when none came back.
	Status int `json:"status,omitempty"`
	// Outcome is how it ended: success, client_error, rate_limited,
	// server_error, auth_error or canceled (a lost hedge, a client gone).
	Outcome string `json:"outcome"`
	// Detail says why it failed or was cancelled; no secrets.
	Detail string `json:"detail,omitempty"`
	// InputTokens and OutputTokens are what the upstream reported.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// Hedge: started alongside a slower attempt rather than after a failure.
	Hedge bool `json:"hedge,omitempty"`
	// Won: the client got this attempt's answer.
	Won bool `json:"won,omitempty"`
}

// TriedJSON encodes tried for a request log's column: "" when empty.
func TriedJSON(tried []Attempt) string {
	if len(tried) == 0 {
		return ""
	}
	b, err := json.Marshal(tried)
	if err != nil { // plain fields: cannot happen
		return ""
	}
	return string(b)
}

// ParseTried decodes a request log's tried column; "" or a value it
// cannot read is no attempts.
func ParseTried(s string) []Attempt {
	if s == "" {
		return nil
	}
	var tried []Attempt
	if json.Unmarshal([]byte(s), &tried) != nil {
		return nil
	}
	return tried
}

// UsageTotal is what the request logs of one (Upstream, Key, Model) add up
// to over one UTC day of a period (Store.UsageTotals).
type UsageTotal struct {
	// Day is the UTC day of the requests' Time, at midnight UTC.
	Day time.Time `json:"day"`
	// Upstream is the name of the upstream that served the requests' last
	// attempts; "" for requests no upstream served.
	Upstream string `json:"upstream"`
	// Key is the name of the client key that made the requests; "" when
	// none did (e.g. an invalid key).
	Key string `json:"key"`
	// Model is the client-facing model the requests asked for (the route);
	// "" when none was read (e.g. a body that was not JSON).
	Model string `json:"model"`
	// Requests counts the logs.
	Requests int64 `json:"requests"`
	// Errors counts the logs with an ErrorClass.
	Errors int64 `json:"errors"`
	// InputTokens and OutputTokens are the sums of the logs' token counts.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens and CacheWriteTokens are the sums of the logs'
	// prompt cache counts.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CostUSD is the sum of the logs' CostUSD: each priced when it was
	// served, never re-priced.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced counts the logs marked Unpriced.
	Unpriced int64 `json:"unpriced"`
}

// DayOf returns the UTC day of the Unix day number n (days since
// 1970-01-01), at midnight UTC.
func DayOf(n int64) time.Time { return time.Unix(n*86400, 0).UTC() }

// SpendDelta is USD spent since the last write, to be added to a stored
// spend total.
type SpendDelta struct {
	// Scope is what is charged: "upstream" or "key".
	Scope string `json:"scope"`
	// Name is the upstream's or client key's name.
	Name string `json:"name"`
	// PeriodStart is the start of the period the USD was spent in (UTC). The
	// limits package writes one total per UTC day and sums days into months.
	PeriodStart time.Time `json:"period_start"`
	// USD is the amount to add, in US dollars.
	USD float64 `json:"usd"`
}

// SpendTotal is the USD stored for one scope, name and period.
type SpendTotal struct {
	// Scope is what was charged: "upstream" or "key".
	Scope string `json:"scope"`
	// Name is the upstream's or client key's name.
	Name string `json:"name"`
	// PeriodStart is the start of the period (UTC).
	PeriodStart time.Time `json:"period_start"`
	// USD is the total spent in the period, in US dollars.
	USD float64 `json:"usd"`
}
