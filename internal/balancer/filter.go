package balancer

// filter applies the filters of docs/reference.md#balancing to c in order and
// records in r the first that drops it ("" if none), with the raw detail
// ReasonText needs. prefs are the request's preferences, nil for none. With keepRateLimited (a strategy that scores rate limits
// itself), a rate-limited candidate is not dropped but marked as a fallback and
// still subject to the concurrency filter. It formats nothing, so it never
// allocates.
func filter(c *Candidate, exclude []string, prefs *Preferences, keepRateLimited bool, r *CandidateRecord) {
	if prefs != nil && c.PinnedElsewhere == "" {
		if d := prefs.drop(c); d != "" {
			r.Filter, r.Detail = FilterPreferences, d
			return
		}
	}
	switch {
	case c.PinnedElsewhere != "":
		r.Filter, r.Detail = FilterPinnedElsewhere, c.PinnedElsewhere
	case !c.Active:
		r.Filter = FilterInactive
	case c.Incompatible != "":
		r.Filter, r.Detail = FilterIncompatible, c.Incompatible
	case c.BreakerOpen:
		r.Filter, r.Detail = FilterBreakerOpen, c.BreakerReason
	case c.SpendExceeded:
		r.Filter, r.Detail = FilterSpendExceeded, c.SpendReason
	case excluded(c.Name, exclude):
		r.Filter = FilterExcluded
	case c.RateLimited && !keepRateLimited:
		r.Filter, r.Detail = FilterRateLimited, c.RateLimitReason
	case c.MaxConcurrency > 0 && c.InFlight >= int64(c.MaxConcurrency):
		if c.QueueEnabled {
			r.Filter = FilterWaitable
		} else {
			r.Filter = FilterConcurrencyFull
		}
	case c.RateLimited:
		r.Fallback, r.Detail = true, c.RateLimitReason
	case keepRateLimited && (atLimit(c.RPMUsed, c.RPMLimit) || atLimit(c.TPMUsed, c.TPMLimit)):
		r.Fallback = true // the strategy scores a used-up limit like a cooldown
	}
}

// atLimit reports whether a known limit is used up.
func atLimit(used, limit int64) bool { return limit > 0 && used >= limit }

// excluded reports whether name is in exclude. Exclusion lists hold the
// upstreams a request already tried (at most its retries), so a linear scan
// beats building a set.
func excluded(name string, exclude []string) bool {
	for _, e := range exclude {
		if e == name {
			return true
		}
	}
	return false
}
