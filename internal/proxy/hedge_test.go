package proxy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
	"switchyard/internal/state"
)

// gated is an OpenAI-compatible streaming upstream that answers only as
// the test says: it reports each request on got, writes (and flushes)
// each string sent on release, ends the answer when release is closed,
// and reports on gone a request whose context ended first (the gateway
// cancelled the attempt).
type gated struct {
	t       *testing.T
	got     chan struct{}
	release chan string
	gone    chan struct{}
	stop    chan struct{} // closed when the test ends: every handler returns
	once    sync.Once
}

// end makes every handler of g return; the test's cleanup calls it before
// any server closes (a gateway closing waits for its requests, which wait
// for g).
func (g *gated) end() { g.once.Do(func() { close(g.stop) }) }

func newGated(t *testing.T) (*gated, string) {
	g := &gated{t: t, got: make(chan struct{}, 8), release: make(chan string), gone: make(chan struct{}, 8), stop: make(chan struct{})}
	url := upstreamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.got <- struct{}{}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // headers alone are not a first byte
		for {
			select {
			case s, ok := <-g.release:
				if !ok {
					return
				}
				if s == "drop" { // cut the connection mid-answer
					panic(http.ErrAbortHandler)
				}
				_, _ = w.Write([]byte(s))
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				g.gone <- struct{}{}
				return
			case <-g.stop:
				return
			}
		}
	}))
	t.Cleanup(g.end)
	return g, url
}

// send hands the upstream's handler s to write ("drop" cuts the
// connection), failing the test if no request is there to take it.
func (g *gated) send(s ...string) {
	g.t.Helper()
	for _, v := range s {
		select {
		case g.release <- v:
		case <-time.After(5 * time.Second):
			g.t.Fatalf("no request at the upstream to send %q to", v)
		}
	}
}

const (
	hedgeStreamBody = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	chunkEvent      = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
	doneEvent       = "data: [DONE]\n\n"
)

// recv waits for one value on ch, failing the test after 5 s of real time
// (a deadlock guard, never a timing assertion).
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// waitTimers waits until the fake clock has n timers pending: the request
// loop is then waiting on them.
func (f *fixture) waitTimers(n int) {
	f.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); f.clock.Pending() != n; {
		if time.Now().After(deadline) {
			f.t.Fatalf("fake clock has %d timers pending, want %d", f.clock.Pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// hedgeCount reads switchyard_hedges_total{result} of the fixture's server.
func (f *fixture) hedgeCount(result string) float64 {
	f.t.Helper()
	mfs, err := f.srv.opts.Metrics.Registry().Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_hedges_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// hedgeFixture is a route hedged after 300 ms over a primary (tier 0) and a
// secondary (tier 1), both gated.
func hedgeFixture(t *testing.T, edit func(p, s *config.Upstream)) (f *fixture, primary, secondary *gated) {
	primary, pURL := newGated(t)
	secondary, sURL := newGated(t)
	p := upstreamCfg("primary", config.ProviderOpenAI, pURL, "gpt-4o")
	s := upstreamCfg("secondary", config.ProviderOpenAI, sURL, "gpt-4o")
	s.Priority = 1
	if edit != nil {
		edit(&p, &s)
	}
	d := config.Default().Defaults
	d.Hedge = config.Hedge{Delay: "300ms", Max: 1, Budget: 1}
	f = newFixture(t, []config.Upstream{p, s}, fixtureOpts{defaults: &d})
	t.Cleanup(primary.end)
	t.Cleanup(secondary.end)
	return f, primary, secondary
}

// Timers pending while a hedged request waits for its first attempt: the
// request's deadline, the attempt's first-byte timeout and the race's wait
// for the hedge delay.
const raceTimers = 3

// hedgeToSecondary sends a streamed request to a hedgeFixture, waits for
// it at the primary, lets the hedge delay pass on the fake clock and waits
// for the hedge at the secondary; the response comes on the channel.
func hedgeToSecondary(t *testing.T, f *fixture, primary, secondary *gated) <-chan *http.Response {
	t.Helper()
	resc := make(chan *http.Response, 1)
	go func() { resc <- f.post("/v1/chat/completions", hedgeStreamBody) }()
	recv(t, primary.got, "request at the primary")
	f.waitTimers(raceTimers)
	f.clock.Advance(300 * time.Millisecond)
	recv(t, secondary.got, "hedge at the secondary")
	return resc
}

// TestHedgeWinnerAndLoser: the primary has sent nothing by the hedge delay,
// so the secondary races it and answers first. The client gets the
// secondary's stream; the primary's attempt is cancelled at once (its
// upstream sees the request end), gives its slot back and is logged as
// cancelled, not failed: its breaker hears nothing. Times are the fake
// clock's, exactly.
func TestHedgeWinnerAndLoser(t *testing.T) {
	f, primary, secondary := hedgeFixture(t, func(p, _ *config.Upstream) { p.MaxConcurrency = 1 })
	resc := hedgeToSecondary(t, f, primary, secondary)
	secondary.send(chunkEvent)
	resp := recv(t, resc, "response")
	recv(t, primary.gone, "cancel of the primary's attempt")
	secondary.send(doneEvent)
	close(secondary.release)
	body := readAll(t, resp)

	if got := resp.Header.Get("X-Switchyard-Upstream") + " " + resp.Header.Get("X-Switchyard-Hedged"); got != "secondary 2" {
		t.Errorf("upstream and hedged %q, want %q", got, "secondary 2")
	}
	if !strings.Contains(body, `"content":"hi"`) || !strings.HasSuffix(body, doneEvent) {
		t.Errorf("body %q, want the secondary's whole stream", body)
	}
	l := f.logs.next(t)
	if len(l.Tried) != 2 {
		t.Fatalf("tried %+v, want two attempts", l.Tried)
	}
	p, h := l.Tried[0], l.Tried[1]
	if p.Upstream != "primary" || p.Hedge || p.Won || p.Outcome != "canceled" || p.Detail != "hedge lost" || p.Start != 0 || p.End != 300*time.Millisecond {
		t.Errorf("primary's attempt %+v, want cancelled (hedge lost) after exactly 300ms", p)
	}
	if h.Upstream != "secondary" || !h.Hedge || !h.Won || h.Outcome != "success" || h.Start != 300*time.Millisecond || h.FirstByte != 0 {
		t.Errorf("hedge %+v, want the secondary, started at 300ms, won", h)
	}
	if v := f.srv.opts.State.Upstream("primary", 0); v.InFlight != 0 || v.Breaker.State != health.Closed || v.Stats.ConsecutiveFailures != 0 {
		t.Errorf("primary after the race: %d in flight, breaker %s, %d failures; want its slot back and no failure",
			v.InFlight, v.Breaker.State, v.Stats.ConsecutiveFailures)
	}
	if won, lost := f.hedgeCount(metrics.HedgeWon), f.hedgeCount(metrics.HedgeLost); won != 1 || lost != 0 {
		t.Errorf("hedges won %v, lost %v; want 1 and 0", won, lost)
	}
}

// TestHedgeSkipped: a hedge that is due but may not run — the route's
// hedge budget is spent, or the next candidate has no free slot — is
// counted as skipped, and the first attempt goes on alone to its answer.
func TestHedgeSkipped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(p, s *config.Upstream)
		before func(t *testing.T, f *fixture)
		result string
	}{
		{"budget spent", nil, func(t *testing.T, f *fixture) {
			b := f.srv.Catalog().route("gpt-4o").hedges
			for b.TryRetry() { // the budget's own floor: its minimum per window
			}
		}, metrics.HedgeSkippedBudget},
		{"next candidate full", func(_, s *config.Upstream) { s.MaxConcurrency = 1 }, func(t *testing.T, f *fixture) {
			lease, err := f.srv.opts.State.Admit(t.Context(), state.Admission{Upstream: "secondary", MaxConcurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lease.Done(outcome.Outcome{Class: outcome.Success}, state.Ending{}) })
		}, metrics.HedgeSkippedLimits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, primary, secondary := hedgeFixture(t, tc.edit)
			tc.before(t, f)
			resc := make(chan *http.Response, 1)
			go func() { resc <- f.post("/v1/chat/completions", hedgeStreamBody) }()
			recv(t, primary.got, "request at the primary")
			f.waitTimers(raceTimers)
			f.clock.Advance(300 * time.Millisecond)
			f.waitTimers(raceTimers - 1) // the hedge delay has passed
			// The race notes the skipped hedge once it wakes; the primary's
			// first byte sent before that could win the race's select instead.
			for deadline := time.Now().Add(5 * time.Second); f.hedgeCount(tc.result) == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the race never skipped the hedge as %s", tc.result)
				}
			}
			primary.send(chunkEvent)
			primary.send(doneEvent)
			close(primary.release)
			resp := recv(t, resc, "response")
			readAll(t, resp)
			if u, h := resp.Header.Get("X-Switchyard-Upstream"), resp.Header.Get("X-Switchyard-Hedged"); u != "primary" || h != "" {
				t.Errorf("served by %q, hedged %q; want the primary alone", u, h)
			}
			if l := f.logs.next(t); len(l.Tried) != 1 || l.Tried[0].Start+l.Tried[0].FirstByte != 300*time.Millisecond {
				t.Errorf("tried %+v, want the primary's one attempt, first byte at 300ms", l.Tried)
			}
			if n := f.hedgeCount(tc.result); n != 1 {
				t.Errorf("hedges %s = %v, want 1", tc.result, n)
			}
			select {
			case <-secondary.got:
				t.Error("the secondary was sent a hedge")
			default:
			}
		})
	}
}

// TestSSECommentIsNotAFirstByte: an SSE comment is not the first byte. A
// primary that sends ": keep-alive" and then drops fails over (no commit,
// no stream_interrupted); in a hedged race, the primary's comment does not
// win against the secondary's first data event.
func TestSSECommentIsNotAFirstByte(t *testing.T) {
	t.Run("comment then drop fails over", func(t *testing.T) {
		primary, pURL := newGated(t)
		secondary, sURL := newGated(t)
		s := upstreamCfg("secondary", config.ProviderOpenAI, sURL, "gpt-4o")
		s.Priority = 1
		f := newFixture(t, []config.Upstream{upstreamCfg("primary", config.ProviderOpenAI, pURL, "gpt-4o"), s}, fixtureOpts{})
		t.Cleanup(primary.end)
		t.Cleanup(secondary.end)
		resc := make(chan *http.Response, 1)
		go func() { resc <- f.post("/v1/chat/completions", hedgeStreamBody) }()
		recv(t, primary.got, "request at the primary")
		primary.send(": keep-alive\n\n")
		primary.send("drop")
		recv(t, secondary.got, "failover to the secondary")
		secondary.send(chunkEvent)
		secondary.send(doneEvent)
		close(secondary.release)
		resp := recv(t, resc, "response")
		body := readAll(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Upstream") != "secondary" || resp.Header.Get("X-Switchyard-Attempts") != "2" {
			t.Errorf("status %d from %q after %q attempts, want 200 from the secondary after 2", resp.StatusCode,
				resp.Header.Get("X-Switchyard-Upstream"), resp.Header.Get("X-Switchyard-Attempts"))
		}
		if strings.Contains(body, "keep-alive") || strings.Contains(body, "error") || !strings.HasSuffix(body, doneEvent) {
			t.Errorf("body %q, want the secondary's stream alone", body)
		}
		if l := f.logs.next(t); len(l.Tried) != 2 || l.Tried[0].Outcome != "server_error" || l.ErrorClass != "" {
			t.Errorf("log %+v, want a failed primary then a success", l)
		}
	})
	t.Run("comment does not win a race", func(t *testing.T) {
		f, primary, secondary := hedgeFixture(t, nil)
		resc := make(chan *http.Response, 1)
		go func() { resc <- f.post("/v1/chat/completions", hedgeStreamBody) }()
		recv(t, primary.got, "request at the primary")
		primary.send(": keep-alive\n\n")
		f.waitTimers(raceTimers)
		f.clock.Advance(300 * time.Millisecond)
		recv(t, secondary.got, "hedge at the secondary")
		secondary.send(chunkEvent)
		resp := recv(t, resc, "response")
		recv(t, primary.gone, "cancel of the primary's attempt")
		secondary.send(doneEvent)
		close(secondary.release)
		readAll(t, resp)
		if u := resp.Header.Get("X-Switchyard-Upstream"); u != "secondary" {
			t.Errorf("served by %q, want the secondary: a comment is no first byte", u)
		}
	})
}

// TestDrainWaitsForRaceLosers: an attempt still unwinding when its race
// ends gives its lease back on its own goroutine after the handler
// returned; Drain waits for it, so shutdown leaves no slot behind.
func TestDrainWaitsForRaceLosers(t *testing.T) {
	f, primary, secondary := hedgeFixture(t, func(p, _ *config.Upstream) { p.MaxConcurrency = 1 })
	resc := hedgeToSecondary(t, f, primary, secondary)
	secondary.send(chunkEvent, doneEvent)
	close(secondary.release)
	readAll(t, recv(t, resc, "response"))
	recv(t, primary.gone, "cancel of the primary's attempt")
	if err := f.srv.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := f.srv.opts.State.Upstream("primary", 0); v.InFlight != 0 {
		t.Errorf("primary has %d in flight after Drain, want 0", v.InFlight)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f.srv.attempts.Add(1) // one that never ends
	defer f.srv.attempts.Done()
	if err := f.srv.Drain(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain with an attempt left and ctx ended = %v, want context.Canceled", err)
	}
}

// TestNewTransportWithoutDefault: a program that replaced
// http.DefaultTransport with another RoundTripper still gets a tuned
// transport, not a panic.
func TestNewTransportWithoutDefault(t *testing.T) {
	saved := http.DefaultTransport
	http.DefaultTransport = roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	defer func() { http.DefaultTransport = saved }()
	tr := NewTransport()
	if tr.MaxIdleConnsPerHost != 256 || tr.Proxy == nil || tr.DialContext == nil {
		t.Errorf("transport %+v, want the tuned pools over the default dialer and proxy", tr)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
