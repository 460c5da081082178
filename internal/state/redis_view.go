package state

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Spend scopes as the shared counters name them (limits.ScopeUpstream,
// limits.ScopeKey and limits.ScopeTeam).
const (
	ScopeUpstream = "upstream"
	ScopeKey      = "key"
	ScopeTeam     = "team"
)

// Watch lists what the sync loop reads: the configured upstreams, and the
// client keys and the teams with a spend limit.
type Watch struct {
	Upstreams  []string
	SpendKeys  []string
	SpendTeams []string
}

// View is one upstream's shared state as of the last sync, for planning.
type View struct {
	// Breaker is closed, open or half_open.
	Breaker string
	// BreakerUntil is, while open, the end of the open period; while
	// half-open, when the next probe is due (zero if due now).
	BreakerUntil time.Time
	// ProbeHeld is true while half-open with the probe claimed.
	ProbeHeld bool
	// BreakerReason says why it last tripped.
	BreakerReason string
	// CooldownUntil is the end of a shared 429 cooldown; zero if none.
	CooldownUntil time.Time
	// RPMUsed and TPMUsed are the requests and tokens in the sliding minute
	// across all instances (counted only for upstreams with that limit).
	RPMUsed, TPMUsed int64
	// RPMFreeAt and TPMFreeAt are when the oldest request, and the oldest
	// second of tokens, counted in the window leave it (as admit.lua says
	// when it refuses); zero for an empty window.
	RPMFreeAt, TPMFreeAt time.Time
	// InFlight is the live leases across all instances; QueueDepth the
	// requests queued for one.
	InFlight, QueueDepth int64
	// Stats are the shared statistics.
	Stats Snapshot
}

// Admits reports whether the breaker lets a request through at now.
func (v View) Admits(now time.Time) bool {
	switch v.Breaker {
	case "open":
		return !now.Before(v.BreakerUntil)
	case "half_open":
		return !v.ProbeHeld && !now.Before(v.BreakerUntil)
	}
	return true
}

// View returns upstream's shared state as of the last sync; ok is false
// when Redis is down or the upstream has not been synced yet, and the
// caller uses its local state.
func (r *Redis) View(upstream string) (View, bool) {
	if !r.up.Load() {
		return View{}, false
	}
	m := r.view.Load()
	if m == nil {
		return View{}, false
	}
	v, ok := (*m)[upstream]
	return v, ok
}

// SetWatch sets what the sync loop reads (on start and on every reload).
func (r *Redis) SetWatch(w Watch) { r.watch.Store(&w) }

// Run refreshes the view every sync_interval and renews the leases of
// requests in flight every lease_ttl/3 until ctx ends. While Redis is down
// each tick is the attempt to reach it again. onSpend receives the shared
// spend totals of every watched upstream, key and team.
func (r *Redis) Run(ctx context.Context, onSpend func(scope, name string, dayUSD, monthUSD float64)) {
	tick := r.clk.After(r.sync)
	renew := r.clk.After(r.lease / 3)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			r.Sync(onSpend)
			tick = r.clk.After(r.sync)
		case <-renew:
			r.Renew()
			renew = r.clk.After(r.lease / 3)
		}
	}
}

// upstreamReads are one upstream's reads in a sync batch.
type upstreamReads struct {
	brk           *redis.SliceCmd
	cd            *redis.DurationCmd
	rpm, inflight *redis.IntCmd
	oldest        *redis.ZSliceCmd // the oldest request in the rpm window
	queue         *redis.IntCmd
	tpm, stats    *redis.MapStringStringCmd
	win           *redis.MapStringStringCmd
}

// Sync reads the shared state of every watched upstream and spend scope in
// one round trip and replaces the view. A success after Redis was down
// re-registers the leases held here at once.
func (r *Redis) Sync(onSpend func(scope, name string, dayUSD, monthUSD float64)) {
	w := r.watch.Load()
	if w == nil {
		w = &Watch{}
	}
	wasUp := r.up.Load()
	now := r.clk.Now()
	nowMs := now.UnixMilli()
	ctx, cancel := r.opCtx(context.Background())
	defer cancel()
	pipe := r.rdb.Pipeline()
	reads := make([]upstreamReads, len(w.Upstreams))
	since, later := strconv.FormatInt(nowMs-60000, 10), "("+strconv.FormatInt(nowMs, 10)
	for i, u := range w.Upstreams {
		reads[i] = upstreamReads{
			brk:      pipe.HMGet(ctx, r.keys.upstream(u, "brk"), "st", "until", "pnext", "pheld", "reason"),
			cd:       pipe.PTTL(ctx, r.keys.upstream(u, "cd")),
			rpm:      pipe.ZCount(ctx, r.keys.upstream(u, "rpm"), "("+since, "+inf"),
			oldest:   pipe.ZRangeByScoreWithScores(ctx, r.keys.upstream(u, "rpm"), &redis.ZRangeBy{Min: "(" + since, Max: "+inf", Count: 1}),
			tpm:      pipe.HGetAll(ctx, r.keys.upstream(u, "tpm")),
			inflight: pipe.ZCount(ctx, r.keys.upstream(u, "lease"), later, "+inf"),
			queue:    pipe.ZCard(ctx, r.keys.upstream(u, "queue")),
			stats:    pipe.HGetAll(ctx, r.keys.upstream(u, "stats")),
			win:      pipe.HGetAll(ctx, r.keys.upstream(u, "win")),
		}
	}
	type spendRead struct {
		scope, name string
		day, month  *redis.StringCmd // two GETs, not an MGET: the keys may live in two Cluster slots
	}
	var spends []spendRead
	for _, sc := range [...]struct {
		scope string
		names []string
	}{{ScopeUpstream, w.Upstreams}, {ScopeKey, w.SpendKeys}, {ScopeTeam, w.SpendTeams}} {
		for _, n := range sc.names {
			d, m := r.keys.spend(sc.scope, n, now)
			spends = append(spends, spendRead{sc.scope, n, pipe.Get(ctx, d), pipe.Get(ctx, m)})
		}
	}
	if !r.result(context.Background(), OpSync, pipeErr(pipe.Exec(ctx))) {
		return
	}
	if !wasUp {
		r.Renew()
	}
	defer r.notePrimary()
	view := make(map[string]View, len(w.Upstreams))
	sec := nowMs / 1000
	for i, u := range w.Upstreams {
		view[u] = reads[i].view(now, sec)
	}
	r.view.Store(&view)
	if onSpend == nil {
		return
	}
	for _, s := range spends {
		day, dayErr := s.day.Result()
		month, monthErr := s.month.Result()
		if dayErr == nil || monthErr == nil {
			onSpend(s.scope, s.name, parseFloat(day), parseFloat(month))
		}
	}
}

// notePrimary has Sentinel name the primary, at start and after an outage
// (reachability.notePrimary), once the view is stored.
func (r *Redis) notePrimary() {
	if r.reach.lookup == nil {
		return
	}
	ctx, cancel := r.opCtx(context.Background())
	defer cancel()
	r.reach.notePrimary(ctx, r.opts.Logger)
}

// view decodes one upstream's reads.
func (rd *upstreamReads) view(now time.Time, sec int64) View {
	var v View
	b := rd.brk.Val()
	st := func(i int) string {
		if i < len(b) {
			s, _ := b[i].(string)
			return s
		}
		return ""
	}
	untl, pnext, pheld := parseInt(st(1)), parseInt(st(2)), parseInt(st(3))
	nowMs := now.UnixMilli()
	switch st(0) {
	case "open": // the first probe also waits for probe_interval after the last
		v.Breaker, v.BreakerUntil = "open", time.UnixMilli(max(untl, pnext))
		if nowMs >= untl { // due to turn half-open on the next admission
			v.Breaker, v.BreakerUntil = "half_open", time.UnixMilli(max(pnext, untl))
		}
	case "half":
		v.Breaker, v.BreakerUntil, v.ProbeHeld = "half_open", time.UnixMilli(pnext), pheld > nowMs
	default:
		v.Breaker = "closed"
	}
	v.BreakerReason = st(4)
	if d := rd.cd.Val(); d > 0 {
		v.CooldownUntil = now.Add(d)
	}
	v.RPMUsed, v.InFlight, v.QueueDepth = rd.rpm.Val(), rd.inflight.Val(), rd.queue.Val()
	if z := rd.oldest.Val(); len(z) > 0 {
		v.RPMFreeAt = time.UnixMilli(int64(z[0].Score) + 60000)
	}
	first := int64(0)
	for f, n := range rd.tpm.Val() {
		if s := parseInt(f); s > sec-60 {
			v.TPMUsed += parseInt(n)
			if first == 0 || s < first {
				first = s
			}
		}
	}
	if first != 0 {
		v.TPMFreeAt = time.Unix(first+60, 0)
	}
	for f, n := range rd.win.Val() {
		if parseInt(f) > sec-60 {
			v.Stats.WindowRequests += parseInt(n)
		}
	}
	s := rd.stats.Val()
	v.Stats.LatencyEWMA, v.Stats.TTFTEWMA, v.Stats.TPSEWMA = parseFloat(s["lat"]), parseFloat(s["ttft"]), parseFloat(s["tps"])
	v.Stats.ConsecutiveFailures = int(parseInt(s["fails"]))
	if lf := parseInt(s["lastfail"]); lf > 0 {
		v.Stats.LastFailure = time.UnixMilli(lf)
	}
	return v
}

// Renew extends the lease of every request in flight here (under an
// upstream's, a key's or a team's max_concurrency) by lease_ttl,
// re-creating any that Redis lost (a restart), and removes the queue and
// lease entries given up while Redis could not be told (abandon) that
// Redis has not swept by itself yet: one round trip.
func (r *Redis) Renew() {
	t := r.clk.Now()
	now := t.UnixMilli()
	r.mu.Lock()
	left := make([]entry, 0, len(r.left))
	for e, until := range r.left {
		if !until.After(t) { // Redis has swept it by itself: the map stays bounded however long it is down
			delete(r.left, e)
			continue
		}
		left = append(left, e)
	}
	if len(r.held) == 0 && len(left) == 0 {
		r.mu.Unlock()
		return
	}
	expiry := float64(now + r.lease.Milliseconds())
	byKey := map[string][]redis.Z{}
	for id, k := range r.held {
		byKey[k] = append(byKey[k], redis.Z{Score: expiry, Member: id})
	}
	r.mu.Unlock()
	ctx, cancel := r.opCtx(context.Background())
	defer cancel()
	pipe := r.rdb.Pipeline()
	expired := strconv.FormatInt(now, 10)
	for k, zs := range byKey {
		// Admit sweeps expired leases only under max_concurrency; sweep
		// here too, or the leases of dead instances would pile up in a
		// key every renewal keeps alive.
		pipe.ZRemRangeByScore(ctx, k, "-inf", expired)
		pipe.ZAdd(ctx, k, zs...)
		pipe.PExpire(ctx, k, 2*r.lease)
	}
	for _, e := range left {
		pipe.ZRem(ctx, e.key, e.id)
	}
	_, err := pipe.Exec(ctx)
	if !r.result(context.Background(), OpLease, err) {
		return
	}
	r.mu.Lock()
	for _, e := range left {
		delete(r.left, e)
	}
	r.mu.Unlock()
	// A request settled while the renewal was on its way had its lease
	// removed before the ZADD put it back: remove it again, or the ghost
	// would hold a slot for lease_ttl. (Settle forgets a ticket before its
	// round trip, so one still held here is settled after the renewal.)
	r.mu.Lock()
	gone := map[string][]any{}
	for k, zs := range byKey {
		for _, z := range zs {
			id := z.Member.(string)
			if _, ok := r.held[id]; !ok {
				gone[k] = append(gone[k], id)
			}
		}
	}
	r.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	pipe = r.rdb.Pipeline()
	for k, ids := range gone {
		pipe.ZRem(ctx, k, ids...)
	}
	_, err = pipe.Exec(ctx)
	r.result(context.Background(), OpLease, err)
}

// addSpend queues a charge of usd to scope's name for the day and month.
func (r *Redis) addSpend(ctx context.Context, b *batch, now time.Time, scope, name string, usd float64) {
	d, m := r.keys.spend(scope, name, now)
	b.pipe.IncrByFloat(ctx, d, usd)
	b.pipe.Expire(ctx, d, 48*time.Hour)
	b.pipe.IncrByFloat(ctx, m, usd)
	b.pipe.Expire(ctx, m, 32*24*time.Hour)
}

func parseInt(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func parseFloat(v any) float64 {
	s, _ := v.(string)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
