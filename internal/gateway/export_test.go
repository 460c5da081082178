package gateway

import (
	"context"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
)

// What the external tests (package gateway_test) read of a Gateway that
// the admin API serves over HTTP.

// SessionBindings returns session's live affinity bindings.
func SessionBindings(g *Gateway, ctx context.Context, session string) []affinity.Binding {
	return g.affinity.Lookup(ctx, session)
}

// ForgetSession deletes session's bindings and returns how many there were.
func ForgetSession(g *Gateway, ctx context.Context, session string) int {
	return g.affinity.DeleteSession(ctx, session)
}

// RequestDecisions returns the decisions still kept for request id.
func RequestDecisions(g *Gateway, id string) []*balancer.Decision { return g.recent.ByRequest(id) }
