package sim

import (
	"context"
	"errors"
	"fmt"
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
	u := r.upstreamOf(req.URL.Path)
	q := r.sched.current()
	ctx := req.Context()
	if u == nil || q == nil {
		return nil, errRefused
	}
	now := r.sched.now
	a := u.prov.receive(now, q.stream, q.prompt, q.maxTok, q.out)
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
	limitType := ""
	if a.kind == answer429 {
		limitType = a.limitType
	}
	resp := &http.Response{
		StatusCode: a.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req,
		Header: u.prov.headers(r.sched.now, limitType).Clone(),
	}
	resp.Header.Set("Content-Type", "application/json")
	anthropic := strings.HasSuffix(req.URL.Path, "/messages")
	var body []byte
	switch a.kind {
	case answer429:
		body = u.prov.rateLimitBody(limitType)
	case answerError:
		body = []byte(`{"error":{"message":"simulated server error","type":"server_error"}}`)
	default:
		if q.stream {
			resp.Header.Set("Content-Type", "text/event-stream")
			first, rest := streamBody(anthropic, a.in, a.out)
			resp.Body = &streamReader{r: r, ctx: ctx, first: first, rest: rest, until: now + a.total}
			return resp, nil
		}
		body = wholeBody(anthropic, a.in, a.out)
	}
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp, nil
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

// wholeBody is a non-streaming answer with its usage.
func wholeBody(anthropic bool, in, out int64) []byte {
	if anthropic {
		return fmt.Appendf(nil, `{"type":"message","content":[],"usage":{"input_tokens":%d,"output_tokens":%d}}`, in, out)
	}
	return fmt.Appendf(nil, `{"object":"chat.completion","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, in, out)
}

// streamBody is a stream's first event and the rest of it, usage included.
func streamBody(anthropic bool, in, out int64) (first, rest []byte) {
	if anthropic {
		return fmt.Appendf(nil, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":%d,\"output_tokens\":0}}}\n\n", in),
			fmt.Appendf(nil, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":%d}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", out)
	}
	return []byte("data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"),
		fmt.Appendf(nil, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", in, out)
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
