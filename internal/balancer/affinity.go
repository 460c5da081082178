package balancer

// Affinity results recorded in Decision.Affinity.Result (DESIGN.md §5).
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
)

// ReasonNotACandidate is the AffinityRecord.Reason of a fall-through whose
// bound upstream is no longer a candidate for the model (removed, inactive
// for the key, or no longer serving it), so it will not come back.
const ReasonNotACandidate = "not_a_candidate"

// AffinityRecord says how session affinity shaped a Decision.
type AffinityRecord struct {
	// Session is the session id; "" when the request carries none.
	Session string `json:"session,omitempty"`
	// Source names where the id was found (e.g. "header:x-session-id").
	Source string `json:"source,omitempty"`
	// Bound is the upstream the session was bound to, if any.
	Bound string `json:"bound,omitempty"`
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
// the index in records of the bound upstream when it goes first, or -1.
// It fills d.Affinity.
func pinLocked(req *Request, records []CandidateRecord, d *AffinityRecord) int {
	d.Session, d.Source, d.Bound = req.Session, req.SessionSource, req.Pinned
	switch {
	case req.Session == "":
		return -1
	case req.Pinned == "":
		d.Result = AffinityMiss
		return -1
	}
	bound, best := -1, 0
	first := true
	for i := range records {
		r := &records[i]
		if r.Name == req.Pinned {
			bound = i
		}
		if r.Filter == "" && !r.Fallback && (first || r.Priority < best) {
			best, first = r.Priority, false
		}
	}
	if bound < 0 {
		d.Result, d.Reason = AffinityFallthrough, ReasonNotACandidate
		return -1
	}
	r := &records[bound]
	if r.Filter != "" || r.Fallback {
		d.Result, d.Reason = AffinityFallthrough, r.Filter
		if r.Fallback {
			d.Reason = FilterRateLimited
		}
		return -1
	}
	if req.Migrate != nil && req.Migrate(req.BodyLen, r.Priority, best) {
		d.Result = AffinityMigrated
		return -1
	}
	d.Result = AffinityHit
	return bound
}
