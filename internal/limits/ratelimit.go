package limits

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"switchyard/internal/clock"
)

// Limit types of a rate limit: which quota an upstream ran out of.
const (
	// LimitRequests is the requests-per-minute quota.
	LimitRequests = "requests"
	// LimitTokens is the tokens-per-minute quota (total, input or output).
	LimitTokens = "tokens"
)

// Rate window parameters (docs/reference.md#rate-limits).
const (
	// RateWindow is the sliding window RPM and TPM are counted over.
	RateWindow = time.Minute
	// rateBuckets divides RateWindow: 60 buckets of 1 s.
	rateBuckets = 60
	// learnedTTL is how long a learned remaining count holds when the
	// response named no reset time.
	learnedTTL = RateWindow
)

// Limiter does the RPM/TPM accounting of every upstream over a sliding
// 60 s window (docs/reference.md#rate-limits, seed 002 "令牌桶追踪": predict a 429
// before sending and route around it).
//
// Before sending, the caller reserves one request and the estimated tokens
// (prompt bytes/4 + max_tokens) with Reserve; the reservation counts at once,
// so concurrent requests see each other. After the response it commits the
// real usage, or cancels the reservation when nothing was sent. Limits come
// from configuration (Configure) and from the provider's response headers
// (ObserveHeaders): a limit header lowers the known limit, and a remaining
// count of 0 — less the reservations made since it was read — makes the
// upstream exhausted until the header's reset time, before the provider has
// to answer 429. A 429 itself (RateLimited) starts a cooldown.
//
// Reading and reserving are O(1) (an exhausted upstream's View scans the 60
// buckets once to say when it frees up); memory is fixed per upstream.
type Limiter struct {
	clk clock.Clock

	mu     sync.RWMutex // guards byName (the map; each entry has its own lock)
	byName map[string]*upstreamRate
}

// upstreamRate is one upstream's windows, limits and cooldown.
type upstreamRate struct {
	mu          sync.Mutex // guards every field below and the done flag of its Reservations
	reqs, toks  window
	rpm, tpm    int64 // configured limits; 0 = unknown
	req, tok    learned
	coolUntil   time.Time
	coolType    string // limit type of the last 429, "" when unknown
	consecutive int    // 429s since the last success
}

// learned is what the provider's headers said about one quota.
type learned struct {
	limit     int64     // learned limit; 0 = unknown
	remaining int64     // remaining count when read
	hasRem    bool      // remaining and reset are known
	reset     time.Time // when remaining stops applying
	since     int64     // reserved since remaining was read, net of cancels and commits
	gen       uint64    // bumped on every new remaining count
}

// active reports whether the learned remaining count still applies at now.
func (l *learned) active(now time.Time) bool { return l.hasRem && now.Before(l.reset) }

// left is the learned remaining count less what was reserved since.
func (l *learned) left() int64 { return l.remaining - l.since }

// NewLimiter returns a Limiter with no upstream known; clk tells the time.
func NewLimiter(clk clock.Clock) *Limiter {
	return &Limiter{clk: clk, byName: map[string]*upstreamRate{}}
}

func (l *Limiter) lookup(name string) *upstreamRate {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.byName[name]
}

func (l *Limiter) get(name string) *upstreamRate {
	if u := l.lookup(name); u != nil {
		return u
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.byName[name]
	if u == nil {
		u = &upstreamRate{
			reqs: newWindow(rateBuckets, RateWindow/rateBuckets),
			toks: newWindow(rateBuckets, RateWindow/rateBuckets),
		}
		l.byName[name] = u
	}
	return u
}

// Configure sets upstream name's configured limits, requests and tokens per
// minute (rate_limit.rpm/tpm); 0 (or less) means unknown. Learned limits
// still apply: the lower known limit wins. Call it at start and on every
// configuration change; usage already counted is kept.
func (l *Limiter) Configure(name string, rpm, tpm int) {
	u := l.get(name)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.rpm, u.tpm = int64(max(rpm, 0)), int64(max(tpm, 0))
}

// LimitView is one upstream's rate-limit state as the balancer's snapshot
// needs it.
type LimitView struct {
	// RPMUsed and TPMUsed are the requests and tokens counted in the sliding
	// minute, reservations included; RPMLimit and TPMLimit are the lower of
	// the configured and learned limits, 0 meaning unknown.
	RPMUsed, RPMLimit, TPMUsed, TPMLimit int64
	// Exhausted means one more request with the given tokens would exceed a
	// known limit, or a learned remaining count (less the reservations made
	// since) is 0 or too small, until its reset.
	Exhausted bool
	// CoolingUntil is the end of the cooldown after a 429; zero when not
	// cooling down.
	CoolingUntil time.Time
	// Until is when the upstream is expected to take the request again: the
	// latest of the cooldown's end, the learned reset and the moment enough
	// of the window expires. Zero when not limited, or when the request can
	// never fit (its tokens alone exceed the TPM limit).
	Until time.Time
	// LimitType is the quota in the way, LimitRequests or LimitTokens; for a
	// cooldown, the type the 429 named ("" when it named none).
	LimitType string
	// Reason says why, raw, for the Decision: "cooling down after 429
	// (requests)", "rpm 60/60", "tpm 9900+200/10000", "learned remaining
	// requests 0". Empty when not limited.
	Reason string
}

// Limited reports whether the upstream should be filtered as rate limited:
// exhausted or cooling down.
func (v LimitView) Limited() bool { return v.Exhausted || !v.CoolingUntil.IsZero() }

// block is the first limit a request would exceed, unformatted.
type block struct {
	kind       blockKind
	used, need int64 // window usage and this request's share, or learned left and need
	limit      int64
	until      time.Time // when it lifts; zero = unknown or never
}

type blockKind uint8

const (
	blockNone blockKind = iota
	blockLearnedRequests
	blockRPM
	blockLearnedTokens
	blockTPM
)

// View returns upstream name's state for a request of tokens estimated
// tokens at the clock's now. It counts nothing.
func (l *Limiter) View(name string, tokens int64) LimitView {
	u := l.lookup(name)
	if u == nil {
		return LimitView{}
	}
	now := l.clk.Now()
	tokens = max(tokens, 0)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reqs.advance(now)
	u.toks.advance(now)
	v := LimitView{
		RPMUsed: u.reqs.total, RPMLimit: u.rpmLocked(),
		TPMUsed: u.toks.total, TPMLimit: u.tpmLocked(),
	}
	cooling := now.Before(u.coolUntil)
	b := u.checkLocked(now, tokens, true)
	if !cooling && b.kind == blockNone {
		return v
	}
	v.Exhausted = b.kind != blockNone
	v.Until = u.liftLocked(now, b)
	if cooling {
		v.CoolingUntil = u.coolUntil
		v.LimitType = u.coolType
		v.Reason = "cooling down after 429"
		if u.coolType != "" {
			v.Reason += " (" + u.coolType + ")"
		}
		return v
	}
	v.LimitType, v.Reason = b.kind.limitType(), b.reason()
	return v
}

// liftLocked is when a request refused at now for block b (blockNone: for
// the cooldown alone) may be taken again: the later of the cooldown's end
// and the moment b lifts; zero when b lifts at an unknown time or never.
func (u *upstreamRate) liftLocked(now time.Time, b block) time.Time {
	if !now.Before(u.coolUntil) {
		return b.until
	}
	if b.kind != blockNone && (b.until.IsZero() || b.until.After(u.coolUntil)) {
		return b.until
	}
	return u.coolUntil
}

func (k blockKind) limitType() string {
	switch k {
	case blockLearnedRequests, blockRPM:
		return LimitRequests
	case blockLearnedTokens, blockTPM:
		return LimitTokens
	}
	return ""
}

func (b block) reason() string {
	switch b.kind {
	case blockLearnedRequests:
		return "learned remaining requests " + strconv.FormatInt(max(b.used, 0), 10)
	case blockLearnedTokens:
		return fmt.Sprintf("learned remaining tokens %d < %d", max(b.used, 0), b.need)
	case blockRPM:
		return fmt.Sprintf("rpm %d/%d", b.used, b.limit)
	case blockTPM:
		return fmt.Sprintf("tpm %d+%d/%d", b.used, b.need, b.limit)
	}
	return ""
}

// rpmLocked is the effective RPM limit: the lower known of configured and learned.
func (u *upstreamRate) rpmLocked() int64 { return lowerKnown(u.rpm, u.req.limit) }

// tpmLocked is the effective TPM limit.
func (u *upstreamRate) tpmLocked() int64 { return lowerKnown(u.tpm, u.tok.limit) }

// lowerKnown returns the smaller of a and b, where 0 means unknown.
func lowerKnown(a, b int64) int64 {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}

// checkLocked returns the first limit a request of tokens would exceed at
// now, with the windows already advanced to now. withUntil computes when it
// lifts (a scan of the window), which only View needs.
func (u *upstreamRate) checkLocked(now time.Time, tokens int64, withUntil bool) block {
	if u.req.active(now) && u.req.left() < 1 {
		return block{kind: blockLearnedRequests, used: u.req.left(), need: 1, until: u.req.reset}
	}
	if lim := u.rpmLocked(); lim > 0 && u.reqs.total+1 > lim {
		b := block{kind: blockRPM, used: u.reqs.total, need: 1, limit: lim}
		if withUntil {
			b.until = u.reqs.freeAt(u.reqs.total + 1 - lim)
		}
		return b
	}
	if u.tok.active(now) && (u.tok.left() <= 0 || u.tok.left() < tokens) {
		return block{kind: blockLearnedTokens, used: u.tok.left(), need: tokens, until: u.tok.reset}
	}
	if lim := u.tpmLocked(); lim > 0 && u.toks.total+tokens > lim {
		b := block{kind: blockTPM, used: u.toks.total, need: tokens, limit: lim}
		if withUntil && tokens <= lim {
			b.until = u.toks.freeAt(u.toks.total + tokens - lim)
		}
		return b
	}
	return block{}
}

// Reservation is one request's claim on an upstream's RPM/TPM window, made
// by Reserve before sending. Exactly one of Commit and Cancel takes effect;
// later calls, and calls on a nil Reservation, do nothing.
type Reservation struct {
	u              *upstreamRate
	epoch          int64 // window bucket the claim was counted in
	tokens         int64 // tokens reserved (the estimate, until committed)
	reqGen, tokGen uint64
	done           bool // guarded by u.mu
}

// Reserve atomically counts one request and tokens estimated tokens against
// upstream name if they fit: it refuses (nil, wait, false) while the
// upstream is cooling down after a 429 or when the request would exceed a
// known or learned limit — the same test as View(name, tokens).Limited() —
// with wait the time until it is expected to take the request again (View's
// Until less now; 0 when unknown or never). The caller must end a granted
// Reservation with Commit or Cancel.
func (l *Limiter) Reserve(name string, tokens int64) (r *Reservation, wait time.Duration, ok bool) {
	u := l.get(name)
	now := l.clk.Now()
	tokens = max(tokens, 0)
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.reqs.advance(now)
	u.toks.advance(now) // same width and history as reqs, so the same epoch
	if b := u.checkLocked(now, tokens, false); b.kind != blockNone || now.Before(u.coolUntil) {
		if b.kind != blockNone {
			b = u.checkLocked(now, tokens, true) // refused: when it lifts is worth the scan
		}
		return nil, max(u.liftLocked(now, b).Sub(now), 0), false
	}
	u.reqs.add(e, 1)
	u.toks.add(e, tokens)
	u.req.since++
	u.tok.since += tokens
	return &Reservation{u: u, epoch: e, tokens: tokens, reqGen: u.req.gen, tokGen: u.tok.gen}, 0, true
}

// end marks r ended and returns its upstream with u.mu held, which the
// caller must unlock; ok is false, with nothing held, when r is nil or was
// already ended, so that Commit and Cancel take effect once between them.
func (r *Reservation) end() (u *upstreamRate, ok bool) {
	if r == nil {
		return nil, false
	}
	u = r.u
	u.mu.Lock()
	if r.done {
		u.mu.Unlock()
		return nil, false
	}
	r.done = true
	return u, true
}

// Commit reconciles the reservation with the tokens the upstream reported
// (usage: input + output). The request stays counted; the token count moves
// from the estimate to actualTokens in the bucket the reservation was made
// in (if that bucket has left the window, there is nothing to correct). A
// negative actualTokens means the usage is unknown and keeps the estimate.
func (r *Reservation) Commit(actualTokens int64) {
	u, ok := r.end()
	if !ok {
		return
	}
	defer u.mu.Unlock()
	if actualTokens < 0 {
		return
	}
	delta := actualTokens - r.tokens
	u.toks.add(r.epoch, delta)
	if u.tok.gen == r.tokGen {
		u.tok.since += delta
	}
	r.tokens = actualTokens
}

// Cancel gives the reservation back: the request was never sent, so neither
// it nor its tokens count.
func (r *Reservation) Cancel() {
	u, ok := r.end()
	if !ok {
		return
	}
	defer u.mu.Unlock()
	u.reqs.add(r.epoch, -1)
	u.toks.add(r.epoch, -r.tokens)
	if u.req.gen == r.reqGen {
		u.req.since--
	}
	if u.tok.gen == r.tokGen {
		u.tok.since -= r.tokens
	}
}
