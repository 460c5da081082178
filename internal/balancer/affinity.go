package balancer

// Affinity results recorded in Decision.Affinity.Result
// (docs/reference.md#session-affinity).
const (
	// AffinityHit: the session's bound upstream was available and goes first.
	AffinityHit = "hit"
	// AffinityMiss: the request carries a session with no live binding.
	AffinityMiss = "miss"
	// AffinityFallthrough: the bound upstream is unavailable (Reason says
	// which filter dropped it); normal selection decides, and the binding is
	// kept for when it recovers.
	AffinityFallthrough = "fallthrough"
	// AffinityMigrated: the bound upstream is available, but the migration
	// policy moved the session to normal selection (a better tier is up).
	AffinityMigrated = "migrated"
	// AffinityStandIn: the bound upstream (the home) is unavailable (Reason
	// says why) and the session's stand-in goes first, so that one
	// substitute serves it until the home is back.
	AffinityStandIn = "stand_in"
	// AffinityYielded: a prefix binding's upstream is available but carries
	// more than Request.MaxShare of the route's in-flight requests and its
	// tier has another available upstream (Reason ReasonMaxShare); normal
	// selection decides, and the binding is kept
	// (docs/routing.md#prefix-cache-affinity).
	AffinityYielded = "yielded"
)

// ReasonMaxShare is the AffinityRecord.Reason of AffinityYielded.
const ReasonMaxShare = "max_share"

// ReasonNotACandidate is the AffinityRecord.Reason of a fall-through whose
// bound upstream is no longer a candidate for the model (removed, inactive
// for the key, or no longer serving it), so it will not come back.
const ReasonNotACandidate = "not_a_candidate"

// AffinityRecord says how session affinity shaped a Decision.
type AffinityRecord struct {
	// Session is the session id; "" when the request carries none.
	Session string `json:"session,omitempty"`
	// Source names where the id was found (e.g. "header:x-session-id"), or
	// "prefix" for a prefix binding, whose Session is "prefix:" and the hash
	// of the prompt's prefix (docs/routing.md#prefix-cache-affinity).
	Source string `json:"source,omitempty"`
	// Bound is the upstream the session was bound to (its home), if any.
	Bound string `json:"bound,omitempty"`
	// StandIn is the binding's stand-in, if it has one.
	StandIn string `json:"stand_in,omitempty"`
	// Result is one of the Affinity* constants, or "" without a session.
	Result string `json:"result,omitempty"`
	// Reason is the filter that made the bound upstream unavailable, for a
	// fall-through ("not_a_candidate" when it no longer serves the model).
	Reason string `json:"reason,omitempty"`
}

// MigrateFunc decides whether a session bound to an upstream of tier
// boundPriority may move when the best available tier is bestPriority, for
// a request body of bodyLen bytes (seed 000 shouldMigrate).
type MigrateFunc func(bodyLen int64, boundPriority, bestPriority int) bool

// pinLocked applies session affinity to the filtered records: it returns
// the indices in records of the upstreams that go first, in order, -1 for
// none: the bound home, then its stand-in (so that a home failing before
// its breaker opens fails over to the one substitute); or, while the home
// is unavailable, the stand-in alone. It fills d.Affinity.
func pinLocked(req *Request, records []CandidateRecord, d *AffinityRecord) (first, second int) {
	d.Session, d.Source, d.Bound, d.StandIn = req.Session, req.SessionSource, req.Pinned, req.StandIn
	switch {
	case req.Session == "":
		return -1, -1
	case req.Pinned == "":
		d.Result = AffinityMiss
		return -1, -1
	}
	bound, stand, best := -1, -1, 0
	seen := false
	for i := range records {
		r := &records[i]
		switch r.Name {
		case req.Pinned:
			bound = i
		case req.StandIn:
			stand = i
		}
		if r.Filter == "" && !r.Fallback && (!seen || r.Priority < best) {
			best, seen = r.Priority, true
		}
	}
	available := func(i int) bool { return i >= 0 && records[i].Filter == "" && !records[i].Fallback }
	if !available(bound) {
		d.Result, d.Reason = AffinityFallthrough, ReasonNotACandidate
		if bound >= 0 {
			d.Reason = records[bound].Filter
			if records[bound].Fallback {
				d.Reason = FilterRateLimited
			}
		}
		if available(stand) {
			d.Result = AffinityStandIn
			return stand, -1
		}
		return -1, -1
	}
	if req.Migrate != nil && req.Migrate(req.BodyLen, records[bound].Priority, best) {
		d.Result = AffinityMigrated
		return -1, -1
	}
	if req.MaxShare > 0 && overShare(records, bound, req.MaxShare) && tierHasOther(records, bound, available) {
		d.Result, d.Reason = AffinityYielded, ReasonMaxShare
		return -1, -1
	}
	d.Result = AffinityHit
	if available(stand) {
		return bound, stand
	}
	return bound, -1
}

// overShare reports whether records[i] carries more than share of the
// in-flight requests of all records (the route's candidates), counted as at
// least one per candidate: on a quiet route, where the bound upstream's one
// or two requests are all there are, nothing is overloaded and a binding
// keeps its cache.
func overShare(records []CandidateRecord, i int, share float64) bool {
	total := int64(len(records))
	var sum int64
	for j := range records {
		sum += records[j].InFlight
	}
	return float64(records[i].InFlight) > share*float64(max(sum, total))
}

// tierHasOther reports whether another record of records[i]'s tier is
// available.
func tierHasOther(records []CandidateRecord, i int, available func(int) bool) bool {
	for j := range records {
		if j != i && records[j].Priority == records[i].Priority && available(j) {
			return true
		}
	}
	return false
}
