package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// tally is what the attempt loop learned on the way, for the final answer.
type tally struct {
	attempts int
	failures []failure // what went wrong, in order, for the final error
	// plans are the decisions of the request's plans, whose left-out
	// candidates the final error names; planBuf holds the first ones.
	plans    []*balancer.Decision
	planBuf  [2]*balancer.Decision
	retryIn  time.Duration // shortest wait seen: a 429's cooldown, an open breaker, a full limit
	queueErr error         // why waiting for a slot failed, when nothing was attempted
	found    bool          // some upstream serves the model or a fallback
	// incompatible is the first feature that filtered every candidate of a
	// plan, for the 400 when nothing else was left.
	incompatible string
	// preferred lists each candidate of the first plan the request's
	// preferences left empty and why it was dropped, for the 400
	// no_upstream_matches_preferences.
	preferred string
}

// failure is one candidate that did not serve the request.
type failure struct {
	upstream string // "" for a reason that concerns no one upstream
	detail   string
	class    outcome.Class // of an attempt; Canceled for a candidate never sent to
}

// notePreferences records, for a plan that nothing survived, each
// candidate and why it was dropped, when the request's preferences dropped
// at least one of them (otherwise the usual 503 explains it).
func (t *tally) notePreferences(d *balancer.Decision) {
	if t.preferred != "" || !slices.ContainsFunc(d.Candidates, func(r balancer.CandidateRecord) bool {
		return r.Filter == balancer.FilterPreferences
	}) {
		return
	}
	parts := make([]string, len(d.Candidates))
	for i := range d.Candidates {
		parts[i] = d.Candidates[i].Name + " (" + d.Candidates[i].ReasonText() + ")"
	}
	t.preferred = strings.Join(parts, ", ")
}

// noteRetry keeps the shortest positive wait seen.
func (t *tally) noteRetry(d time.Duration) {
	if d > 0 && (t.retryIn == 0 || d < t.retryIn) {
		t.retryIn = d
	}
}

// exhausted is the error when every candidate of model failed or none was
// available.
func (t *tally) exhausted(model string) error {
	if t.attempts == 0 && t.queueErr != nil {
		sentinel := ErrQueueFull
		if errors.Is(t.queueErr, limits.ErrQueueTimeout) {
			sentinel = ErrQueueTimeout
		}
		e := newError(sentinel, "no upstream slot for model "+strconv.Quote(model)+t.summary())
		e.retryAfter = time.Second
		return e
	}
	if t.attempts == 0 || t.allRateLimited() {
		e := newError(ErrNoUpstream, "no upstream is available for model "+strconv.Quote(model)+t.summary())
		e.status = http.StatusServiceUnavailable
		e.retryAfter = max(t.retryIn, time.Second)
		return e
	}
	return newError(ErrNoUpstream, fmt.Sprintf("all %d upstream attempts failed%s", t.attempts, t.summary()))
}

// noted reports whether a failure of upstream name is recorded already.
func (t *tally) noted(name string) bool {
	for _, f := range t.failures {
		if f.upstream == name {
			return true
		}
	}
	return false
}

// allRateLimited reports whether every failure was an upstream's 429.
func (t *tally) allRateLimited() bool {
	for _, f := range t.failures {
		if f.class != outcome.RateLimited {
			return false
		}
	}
	return len(t.failures) > 0
}

// summary lists the failures, then every candidate the plans left out
// and was not tried after all (full ones with their slots in use), each
// once with the reason, for the client's error message: it names every
// upstream the key may reach and why it did not serve (docs/reference.md#errors).
func (t *tally) summary() string {
	var parts []string
	for _, f := range t.failures {
		if f.upstream == "" {
			parts = append(parts, f.detail)
			continue
		}
		parts = append(parts, f.upstream+": "+f.detail)
	}
	seen := map[string]bool{}
	for _, d := range t.plans {
		for i := range d.Candidates {
			c := &d.Candidates[i]
			if c.Filter == "" || seen[c.Name] || t.noted(c.Name) {
				continue
			}
			seen[c.Name] = true
			detail := c.Name + ": skipped, " + strings.ReplaceAll(c.Filter, "_", " ")
			switch {
			case c.Filter == balancer.FilterWaitable || c.Filter == balancer.FilterConcurrencyFull:
				detail = fmt.Sprintf("%s: skipped, full (%d/%d in flight)", c.Name, c.InFlight, c.MaxConcurrency)
			case c.Detail != "":
				detail += " (" + c.Detail + ")"
			}
			parts = append(parts, detail)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}
