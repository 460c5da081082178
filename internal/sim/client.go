package sim

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/outcome"
	"switchyard/internal/state"
	"switchyard/internal/store"
)

// Client-visible outcomes, the labels of the report: the answer's status
// and the request log's error class.
const (
	clientOK          = "200"
	clientInterrupted = "200 stream_interrupted"
)

// simKey is the client key the simulator sends when the scenario names none:
// it may use every model and upstream.
const simKey = "simulator"

// begin starts a client request as a task: it goes through the gateway's
// real handler, and its session's next turn is scheduled when it ends.
func (r *run) begin(q *request) {
	r.reqs++
	q.id = r.reqs
	r.sched.spawn(q, func() {
		r.serve(q)
		r.complete(q)
	})
}

// serve sends q to the gateway's handler as its client would.
func (r *run) serve(q *request) {
	path, c := "/v1/chat/completions", r.family[q.model]
	anthropic := r.sc.Protocol == ProtocolAnthropic || (r.sc.Protocol == "" && c.anthropic)
	if anthropic {
		path = "/v1/messages"
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://gateway"+path, bytes.NewReader(r.body(q, anthropic)))
	if err != nil {
		panic(fmt.Sprintf("sim: building a request: %v", err))
	}
	req.Header["Authorization"] = r.auth
	req.Header["Content-Type"] = jsonType
	if q.sess != nil {
		req.Header["Session_id"] = []string{q.sess.id}
	}
	w := &responseWriter{r: r, q: q, h: make(http.Header, 8)}
	q.firstAt = -1
	r.srv.ServeHTTP(w, req)
}

var jsonType = []string{"application/json"}

// body is q's JSON body: bodyLen bytes (or a few more, for a tiny
// prompt), so that the gateway's token estimate (body bytes/4 +
// max_tokens) is the prompt's. A request with a shared prompt opens with
// it as its system prompt (Anthropic's top-level system, OpenAI's system
// message): 4 bytes per token, the same bytes in every request that
// shares it.
func (r *run) body(q *request, anthropic bool) []byte {
	b := make([]byte, 0, q.bodyLen+32)
	b = append(b, `{"model":`...)
	b = strconv.AppendQuote(b, q.model)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, q.stream)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, q.maxTok, 10)
	switch {
	case q.shared > 0 && anthropic:
		b = append(b, `,"system":"`...)
		b = r.sharedPrompt(b, q)
		b = append(b, `","messages":[{"role":"user","content":"`...)
	case q.shared > 0:
		b = append(b, `,"messages":[{"role":"system","content":"`...)
		b = r.sharedPrompt(b, q)
		b = append(b, `"},{"role":"user","content":"`...)
	default:
		b = append(b, `,"messages":[{"role":"user","content":"`...)
	}
	// The request's own prompt starts with its number: the simulated
	// clients send distinct prompts, which prefix-cache affinity
	// (docs/routing.md#prefix-cache-affinity) does not bind together
	// (a shared prompt before it does).
	b = strconv.AppendUint(b, q.id, 10)
	b = append(b, ' ')
	tail := `"}]}`
	if pad := int(q.bodyLen) - len(b) - len(tail); pad > 0 {
		b = append(b, bytes.Repeat([]byte{'x'}, pad)...)
	}
	return append(b, tail...)
}

// sharedPrompt appends the text of q's shared prompt: its phase and
// index first, so that prompts differ from their first bytes, then padding
// to 4 bytes per token.
func (r *run) sharedPrompt(b []byte, q *request) []byte {
	start := len(b)
	b = append(b, "You are assistant "...)
	b = strconv.AppendInt(b, int64(q.phase), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(q.shared), 10)
	b = append(b, ". "...)
	if pad := int(4*q.sharedTok) - (len(b) - start); pad > 0 {
		b = append(b, bytes.Repeat([]byte{'s'}, pad)...)
	}
	return b
}

// complete records the client-visible outcome and continues the session.
func (r *run) complete(q *request) {
	label := strconv.Itoa(q.log.Status)
	if q.log.ErrorClass != "" {
		label += " " + q.log.ErrorClass
	}
	var ttft time.Duration // a stream's first event at the client
	if label == clientOK && q.stream && q.firstAt >= 0 {
		ttft = q.firstAt - q.start
	}
	r.rec.request(q, r.sched.now, label, ttft)
	r.nextTurn(q)
}

// responseWriter is the client's end of the connection: it notes when the
// first byte arrives and discards the rest.
type responseWriter struct {
	r      *run
	q      *request
	h      http.Header
	status int
}

func (w *responseWriter) Header() http.Header { return w.h }

func (w *responseWriter) WriteHeader(status int) { w.status = status }

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.q.firstAt < 0 {
		w.q.firstAt = w.r.sched.now
	}
	return len(b), nil
}

// Flush is a no-op: nothing is buffered.
func (w *responseWriter) Flush() {}

// logSink takes each request's log as the gateway enqueues it.
type logSink struct{ r *run }

func (l logSink) Enqueue(log store.RequestLog) bool {
	if q := l.r.sched.current(); q != nil {
		q.log = log
	}
	return true
}

// recordingStats is the gateway's live statistics, which also tell the
// recorder about every attempt: Dispatched right before it is sent,
// Observe when it ended.
type recordingStats struct {
	*state.Memory
	r *run
}

var _ state.Stats = recordingStats{}

func (s recordingStats) Dispatched(upstream string, now time.Time) {
	s.Memory.Dispatched(upstream, now)
	if u, q := s.r.byUp[upstream], s.r.sched.current(); u != nil && q != nil {
		q.dispatched(u.idx, s.r.sched.now)
	}
}

func (s recordingStats) Observe(upstream string, o outcome.Outcome, now time.Time) {
	s.Memory.Observe(upstream, o, now)
	u, q := s.r.byUp[upstream], s.r.sched.current()
	if u == nil || q == nil {
		return
	}
	s.r.rec.attempt(u.idx, q.sentTo(u.idx), o.Class)
	// Usage is billed whenever the upstream reported it, as the gateway
	// does: a success, or an attempt cancelled after its first event.
	if o.Class == outcome.Success || o.InputTokens > 0 || o.OutputTokens > 0 {
		s.r.rec.usage(u.idx, o.Class == outcome.Success, &o, u.cost(&o, q.model))
	}
}

// decision counts each plan's session-affinity result; prefix bindings
// (docs/routing.md#prefix-cache-affinity) are not sessions.
func (r *run) decision(d *balancer.Decision) {
	if d.Affinity.Source != affinity.PrefixSource {
		r.rec.plan(d.Affinity.Result)
	}
}

// goTask runs f, an attempt a hedged request races, as a task of the
// scheduler serving the running task's request. An attempt launched while
// another of its request still runs is a hedge; one launched when none
// does is the first attempt or a failover (the race takes each attempt as
// its task ends, before it launches the next).
func (r *run) goTask(f func()) {
	q := r.sched.current()
	if q == nil {
		r.sched.spawn(nil, f)
		return
	}
	if q.racing > 0 {
		q.hedges++
	}
	q.racing++
	r.sched.spawn(q, func() {
		f()
		q.racing--
	})
}
