package health

// Outcome classifies the result of one upstream attempt (DESIGN.md §6).
type Outcome int

// Outcome classes. Server and auth errors feed the breaker; a 429 feeds the
// cooldown; client errors and cancellations touch nothing.
const (
	// Success is a 2xx answer.
	Success Outcome = iota
	// ClientError is a 4xx that is the caller's fault (400, 404, 413, 422):
	// returned as is, no failover, no penalty.
	ClientError
	// AuthError is a 401/403 (or 402) from the upstream: the account is
	// unusable, so the breaker opens at once.
	AuthError
	// RateLimited is a 429 from the upstream.
	RateLimited
	// ServerError is a 5xx, a connection failure, a timeout or a malformed answer.
	ServerError
	// Canceled means the client went away; it says nothing about the upstream.
	Canceled
)

var outcomeNames = [...]string{"success", "client_error", "auth_error", "rate_limited", "server_error", "canceled"}

// String returns the snake_case name used in logs and metrics.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Failover reports whether the next candidate should be tried after o.
func (o Outcome) Failover() bool {
	return o == AuthError || o == RateLimited || o == ServerError
}
