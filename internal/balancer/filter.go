package balancer

import "strconv"

// filter applies the filters of DESIGN.md §4 to c in order and returns the
// first that drops it, with a reason; ("", "") means c survives.
func filter(c *Candidate, exclude []string) (name, reason string) {
	switch {
	case !c.Active:
		return FilterInactive, "upstream inactive"
	case c.BreakerOpen:
		return FilterBreakerOpen, withDetail("breaker open", c.BreakerReason)
	case c.SpendExceeded:
		return FilterSpendExceeded, withDetail("spend quota exceeded", c.SpendReason)
	case excluded(c.Name, exclude):
		return FilterExcluded, "already tried by this request"
	case c.RateLimited:
		return FilterRateLimited, withDetail("rate limited", c.RateLimitReason)
	case c.MaxConcurrency > 0 && c.InFlight >= int64(c.MaxConcurrency):
		reason := "in-flight " + strconv.FormatInt(c.InFlight, 10) + " of max " + strconv.Itoa(c.MaxConcurrency)
		if c.QueueEnabled {
			return FilterWaitable, reason + ", queue enabled"
		}
		return FilterConcurrencyFull, reason
	}
	return "", ""
}

func withDetail(what, detail string) string {
	if detail == "" {
		return what
	}
	return what + ": " + detail
}

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
