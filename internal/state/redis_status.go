package state

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Status is Redis's reachability as an instance's /readyz body shows it
// (docs/scale-out.md#what-the-log-and-readyz-say). It names no address and
// no secret: the log has the details.
type Status struct {
	// Mode is single, sentinel or cluster.
	Mode string `json:"mode"`
	// Shared is true while Redis answers and the routing state is shared;
	// false while the instance routes on its local state.
	Shared bool `json:"shared"`
	// Since is when Shared last changed; absent if it never did.
	Since *time.Time `json:"since,omitempty"`
	// Reason says, while not shared, why Redis failed (redisReason).
	Reason string `json:"reason,omitempty"`
	// LastOutage is the last period Redis did not answer, once it is over.
	LastOutage *Outage `json:"last_outage,omitempty"`
}

// Outage is one period during which Redis did not answer.
type Outage struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Seconds float64   `json:"seconds"`
	// Reason is why Redis failed first (redisReason).
	Reason string `json:"reason"`
	// PrimaryChanged is true when Sentinel named another primary after
	// the outage than before it: a failover. Sentinel mode only.
	PrimaryChanged bool `json:"primary_changed,omitempty"`
}

// reachability keeps what Status and the log say about Redis's
// reachability; Redis.up is the flag the calls read.
type reachability struct {
	mode   string
	secret string                                  // the password, cut out of logged errors
	lookup func(context.Context) ([]string, error) // the sentinels' answers: where the primary is; nil unless mode sentinel

	mu          sync.Mutex // guards the fields below
	shared      bool
	since       time.Time // zero: never changed
	reason      string
	last        *Outage
	primary     string // the primary Sentinel named last
	needPrimary bool   // ask Sentinel on the next sync
}

// newReachability starts shared (optimistic: the first call tells).
// lookup, for mode sentinel, asks the sentinels for the primary.
func newReachability(mode, secret string, lookup func(context.Context) ([]string, error)) *reachability {
	return &reachability{mode: mode, secret: secret, shared: true, lookup: lookup, needPrimary: lookup != nil}
}

// change records and logs that Redis became reachable (up) or not, at now.
func (r *reachability) change(log *slog.Logger, up bool, err error, now time.Time, prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !up {
		r.shared, r.since, r.reason = false, now, redisReason(err)
		log.Warn("redis unreachable: routing on this instance's local state until it answers",
			"mode", r.mode, "reason", r.reason, "err", r.redact(err))
		return
	}
	from := r.since
	if from.IsZero() {
		from = now
	}
	r.last = &Outage{From: from, To: now, Seconds: now.Sub(from).Seconds(), Reason: r.reason}
	r.shared, r.since, r.reason = true, now, ""
	r.needPrimary = r.lookup != nil
	log.Info("redis reachable again: routing state is shared", "mode", r.mode, "prefix", prefix,
		"down_for", now.Sub(from).Round(time.Millisecond).String(), "reason", r.last.Reason)
}

// status returns the Status.
func (r *reachability) status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Status{Mode: r.mode, Shared: r.shared, Reason: r.reason}
	if !r.since.IsZero() {
		since := r.since.UTC()
		s.Since = &since
	}
	if r.last != nil {
		o := *r.last
		s.LastOutage = &o
	}
	return s
}

// notePrimary asks the sentinels for the primary when it has not since the
// start or the last outage, and logs it: a primary other than before, named
// by any sentinel, is a failover. One round trip to each sentinel, in the
// sync loop.
func (r *reachability) notePrimary(ctx context.Context, log *slog.Logger) {
	r.mu.Lock()
	need := r.needPrimary
	r.mu.Unlock()
	if !need {
		return
	}
	answers, err := r.lookup(ctx)
	if err != nil {
		return // asked again on the next sync
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.needPrimary = false
	before, addr := r.primary, answers[0]
	for _, a := range answers { // a sentinel naming another primary than before has failed over
		if a != before {
			addr = a
			break
		}
	}
	r.primary = addr
	switch {
	case before == "":
		log.Info("redis sentinel primary", "primary", addr)
	case before != addr:
		if r.last != nil {
			r.last.PrimaryChanged = true
		}
		log.Warn("redis primary changed: Sentinel failed over", "from", before, "to", addr)
	default:
		log.Info("redis primary unchanged after the outage", "primary", addr)
	}
}

// redact returns err's text without the password.
func (r *reachability) redact(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if r.secret != "" {
		s = strings.ReplaceAll(s, r.secret, "<redacted>")
	}
	return s
}

// sentinelPrimaries asks every sentinel at addrs where the primary named
// master is (as go-redis does before it connects), with uo's timeouts and
// TLS, and returns their answers, in order. During and just after a
// failover they may differ: the sentinel that ran it names the promoted
// replica before the others hear of it.
func sentinelPrimaries(ctx context.Context, addrs []string, master string, uo *redis.UniversalOptions) ([]string, error) {
	var out []string
	err := errors.New("no sentinel")
	for _, a := range addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: uo.DialTimeout, ReadTimeout: uo.ReadTimeout,
			WriteTimeout: uo.WriteTimeout, MaxRetries: -1, ContextTimeoutEnabled: true, TLSConfig: uo.TLSConfig})
		var hp []string
		hp, err = sc.GetMasterAddrByName(ctx, master).Result()
		_ = sc.Close()
		if err == nil && len(hp) == 2 {
			out = append(out, net.JoinHostPort(hp[0], hp[1]))
		}
	}
	if len(out) == 0 {
		return nil, err
	}
	return out, nil
}

// redisReason classifies a failed call's error in a few words without an
// address: what /readyz says.
func redisReason(err error) string {
	var ne net.Error
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.HasPrefix(msg, "READONLY"):
		return "read-only replica (a failover in progress)"
	case strings.HasPrefix(msg, "CLUSTERDOWN"):
		return "cluster down"
	case strings.HasPrefix(msg, "TRYAGAIN"), strings.HasPrefix(msg, "MOVED"), strings.HasPrefix(msg, "ASK"):
		return "cluster resharding"
	case strings.HasPrefix(msg, "LOADING"):
		return "loading its dataset"
	case strings.HasPrefix(msg, "MASTERDOWN"):
		return "replica lost its primary"
	case strings.HasPrefix(msg, "NOAUTH"), strings.HasPrefix(msg, "WRONGPASS"):
		return "authentication failed"
	case strings.HasPrefix(msg, "NOPERM"):
		return "ACL permission denied"
	case strings.Contains(msg, "sentinel"):
		return "sentinels unreachable or without a primary"
	case strings.Contains(msg, "connection reset"), strings.Contains(msg, "EOF"), strings.Contains(msg, "broken pipe"):
		return "connection lost"
	}
	return "error"
}
