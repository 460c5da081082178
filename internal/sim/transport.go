package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// errRefused is a simulated upstream's refused connection.
var errRefused = errors.New("connection refused")

// simHost is the host of every simulated upstream's base_url; the first
// path segment names the upstream (its index).
const simHost = "http://upstream.sim/"

// transport is the gateway's upstream transport in a run: each upstream's
// provider model answers in virtual time, in the provider's wire format,
// with its rate-limit headers. It blocks the calling task until the answer
// (or its first event) is due, or the attempt is cancelled.
type transport struct{ r *run }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := t.r
	if req.URL.Path == "/"+tokenPath {
		return answerNow(req, http.StatusOK, "application/json", tokenAnswer), nil
	}
	u := r.upstreamOf(req.URL.Path)
	q := r.sched.current()
	ctx := req.Context()
	if u == nil || q == nil {
		return nil, errRefused
	}
	now := r.sched.now
	a := u.prov.receive(now, q.stream, q.prompt, q.maxTok, q.out)
	w := wireOf(req.URL.Path)
	if a.kind == answerOK && q.shared > 0 {
		u.prov.promptCache(&a, now, cacheKey{q.phase, q.shared}, q.sharedTok, w.family)
	}
	switch a.kind {
	case answerRefused:
		if err := r.sched.sleep(ctx, a.first); err != nil {
			return nil, err
		}
		return nil, errRefused
	case answerHang:
		r.sched.Wait(ctx, nil, 0)
		return nil, context.Cause(ctx)
	}
	if err := r.sched.sleep(ctx, a.first); err != nil {
		return nil, context.Cause(ctx)
	}
	resp := answerNow(req, a.status, w.contentType(false), nil)
	for k, v := range u.prov.headers(r.sched.now) {
		resp.Header[k] = v
	}
	var body []byte
	switch a.kind {
	case answer429:
		body = w.rateLimited(resp.Header, a.limitType, u.prov.retryAfter(r.sched.now, a.limitType))
	case answerError:
		body = w.serverError(a.status)
	default:
		if q.stream {
			resp.Header.Set("Content-Type", w.contentType(true))
			first, rest := w.streamBody(q.model, a.usage())
			resp.Body = &streamReader{r: r, ctx: ctx, first: first, rest: rest, until: now + a.total}
			return resp, nil
		}
		body = w.wholeBody(q.model, epoch.Add(now), a.usage())
	}
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// answerNow is a response to req with status, Content-Type ct and body.
func answerNow(req *http.Request, status int, ct string, body []byte) *http.Response {
	return &http.Response{
		StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req,
		Header: http.Header{"Content-Type": {ct}}, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body)),
	}
}

// upstreamOf returns the upstream a simulated URL path names.
func (r *run) upstreamOf(path string) *upstreamSim {
	seg, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	i, err := strconv.Atoi(seg)
	if err != nil || i < 0 || i >= len(r.ups) {
		return nil
	}
	return r.ups[i]
}

// streamReader yields a stream's first event at once and the rest when
// the provider has generated it (until), unless the attempt is cancelled
// first.
type streamReader struct {
	r           *run
	ctx         context.Context
	first, rest []byte
	until       time.Duration
}

func (s *streamReader) Read(p []byte) (int, error) {
	if len(s.first) > 0 {
		n := copy(p, s.first)
		s.first = s.first[n:]
		return n, nil
	}
	if s.until > s.r.sched.now {
		if err := s.r.sched.sleep(s.ctx, s.until-s.r.sched.now); err != nil {
			return 0, context.Cause(s.ctx)
		}
	}
	if len(s.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

func (s *streamReader) Close() error { return nil }
