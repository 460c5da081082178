package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The wire taps of the translation tests: sdkTap sits under the SDK clients
// and keeps what the gateway answered byte for byte; upstreamTap sits in
// front of a mock upstream and keeps what the gateway sent it and what it
// answered, so that a test compares the client's answer with the upstream's
// own report rather than with a number it computed.

// exchangeWait bounds how long a test waits for an exchange to finish. It is
// a deadline for a broken gateway, not a delay: a working one is done in
// milliseconds.
const exchangeWait = 10 * time.Second

// tapped is one HTTP exchange an SDK client made through sdkTap.
type tapped struct {
	id      string // the X-Request-Id sdkTap gave the request
	reqBody []byte
	status  int
	header  http.Header

	mu       sync.Mutex // guards body and timedOut
	body     bytes.Buffer
	timedOut bool // the body did not end within exchangeWait of Close
}

// raw returns the response body read so far: all of it once the SDK has
// closed it.
func (tp *tapped) raw() []byte {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return bytes.Clone(tp.body.Bytes())
}

// sdkTap is the http.RoundTripper of the SDK clients here. It gives each
// request a fresh X-Request-Id (which the gateway forwards upstream, so
// upstreamTap can find the same request) and keeps the last exchange.
type sdkTap struct {
	prefix string
	n      atomic.Int64
	tr     *http.Transport

	mu   sync.Mutex // guards last
	last *tapped
}

// newSDKTap returns a tap whose request ids start with prefix; its idle
// connections are closed at the end of the test.
func newSDKTap(t testing.TB, prefix string) *sdkTap {
	s := &sdkTap{prefix: prefix, tr: &http.Transport{}}
	t.Cleanup(s.tr.CloseIdleConnections)
	return s
}

// client is an http.Client over the tap.
func (s *sdkTap) client() *http.Client { return &http.Client{Transport: s} }

// RoundTrip sends req with a new request id and tees the response body.
func (s *sdkTap) RoundTrip(req *http.Request) (*http.Response, error) {
	tp := &tapped{id: s.prefix + "-" + strconv.FormatInt(s.n.Add(1), 10)}
	out := req.Clone(req.Context())
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		tp.reqBody = b
		out.Body = io.NopCloser(bytes.NewReader(b))
	}
	out.Header.Set("X-Request-Id", tp.id)
	resp, err := s.tr.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	tp.status, tp.header = resp.StatusCode, resp.Header.Clone()
	resp.Body = &tapBody{rc: resp.Body, tp: tp}
	s.mu.Lock()
	s.last = tp
	s.mu.Unlock()
	return resp, nil
}

// take returns the last exchange and forgets it; it fails the test when
// there was none.
func (s *sdkTap) take(t testing.TB) *tapped {
	t.Helper()
	s.mu.Lock()
	tp := s.last
	s.last = nil
	s.mu.Unlock()
	if tp == nil {
		t.Fatal("the SDK made no HTTP request")
	}
	return tp
}

// tapBody copies what the SDK reads into its tapped. Close reads the rest
// first (an SDK may stop at the protocol's terminal event), so that a test
// sees whether anything followed it.
type tapBody struct {
	rc io.ReadCloser
	tp *tapped
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.tp.mu.Lock()
	b.tp.body.Write(p[:n])
	b.tp.mu.Unlock()
	return n, err
}

func (b *tapBody) Close() error {
	stuck := time.AfterFunc(exchangeWait, func() {
		b.tp.mu.Lock()
		b.tp.timedOut = true
		b.tp.mu.Unlock()
		_ = b.rc.Close()
	})
	_, _ = io.Copy(io.Discard, b)
	stuck.Stop()
	return b.rc.Close()
}

// upstreamExchange is one request a gateway sent an upstream, and the answer.
type upstreamExchange struct {
	path    string
	reqBody []byte
	status  int
	body    []byte
}

// upstreamTap is a recording reverse proxy in front of a mock upstream,
// flushing every write, that files each finished exchange under the
// request's X-Request-Id.
type upstreamTap struct {
	URL   string
	proxy *httputil.ReverseProxy

	mu   sync.Mutex // guards done
	done map[string]chan upstreamExchange
}

// startUpstreamTap serves a tap in front of target (a mock's base URL) on
// loopback until the end of the test.
func startUpstreamTap(t testing.TB, target string) *upstreamTap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tap := &upstreamTap{done: map[string]chan upstreamExchange{}}
	tap.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Header.Del("Accept-Encoding") // keep the recorded body plain
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(tap)
	t.Cleanup(srv.Close)
	tap.URL = srv.URL
	return tap
}

// ServeHTTP proxies one request and files the exchange once the answer
// has been copied to the gateway whole.
func (u *upstreamTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recordingWriter{ResponseWriter: w}
	u.proxy.ServeHTTP(rec, r)
	u.slot(r.Header.Get("X-Request-Id")) <- upstreamExchange{
		path: r.URL.Path, reqBody: body, status: rec.status, body: rec.buf.Bytes(),
	}
}

// slot is the channel of request id's exchange.
func (u *upstreamTap) slot(id string) chan upstreamExchange {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch, ok := u.done[id]
	if !ok {
		ch = make(chan upstreamExchange, 4)
		u.done[id] = ch
	}
	return ch
}

// wait returns the exchange of request id once it has finished.
func (u *upstreamTap) wait(t testing.TB, id string) upstreamExchange {
	t.Helper()
	select {
	case ex := <-u.slot(id):
		return ex
	case <-time.After(exchangeWait):
		t.Fatalf("the upstream saw no finished request %s within %s", id, exchangeWait)
		return upstreamExchange{}
	}
}

// recordingWriter keeps a copy of what is written through it; it keeps
// Flush working for the reverse proxy.
type recordingWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// usage is token usage in the canonical sense (codec.Usage): in counts
// every prompt token, cached or not.
type usage struct {
	in, out, cacheRead, cacheWrite int64
}

// seenBy is u as a client of protocol proto can see it: only Anthropic
// reports cache writes.
func (u usage) seenBy(proto string) usage {
	if proto != "anthropic" {
		u.cacheWrite = 0
	}
	return u
}

// reported is the usage an upstream reported in its answer, read from its
// own wire format (whole or streamed), independently of the gateway's
// codecs.
func (ex upstreamExchange) reported(t testing.TB) usage {
	t.Helper()
	events := parseSSE(ex.body)
	stream := len(events) > 0 && !gjson.ValidBytes(ex.body)
	var u usage
	switch {
	case strings.HasSuffix(ex.path, "/chat/completions"):
		r := gjson.GetBytes(ex.body, "usage")
		for _, ev := range events {
			if v := gjson.Get(ev.data, "usage"); stream && v.IsObject() {
				r = v
			}
		}
		u = usage{in: r.Get("prompt_tokens").Int(), out: r.Get("completion_tokens").Int(),
			cacheRead: r.Get("prompt_tokens_details.cached_tokens").Int()}
	case strings.HasSuffix(ex.path, "/responses"):
		r := gjson.GetBytes(ex.body, "usage")
		for _, ev := range events {
			if stream && ev.name == "response.completed" {
				r = gjson.Get(ev.data, "response.usage")
			}
		}
		u = usage{in: r.Get("input_tokens").Int(), out: r.Get("output_tokens").Int(),
			cacheRead: r.Get("input_tokens_details.cached_tokens").Int()}
	case strings.HasSuffix(ex.path, "/messages"):
		r := []gjson.Result{gjson.GetBytes(ex.body, "usage")}
		if stream {
			r = nil
			for _, ev := range events {
				switch ev.name {
				case "message_start":
					r = append(r, gjson.Get(ev.data, "message.usage"))
				case "message_delta":
					r = append(r, gjson.Get(ev.data, "usage"))
				}
			}
		}
		for _, v := range r { // later events update what they carry
			for _, f := range []struct {
				name string
				dst  *int64
			}{{"input_tokens", &u.in}, {"output_tokens", &u.out}, {"cache_read_input_tokens", &u.cacheRead}, {"cache_creation_input_tokens", &u.cacheWrite}} {
				if x := v.Get(f.name); x.Exists() {
					*f.dst = x.Int()
				}
			}
		}
		u.in += u.cacheRead + u.cacheWrite
	case strings.Contains(ex.path, ":generateContent") || strings.Contains(ex.path, ":streamGenerateContent"):
		r := gjson.GetBytes(ex.body, "usageMetadata")
		for _, ev := range events {
			if v := gjson.Get(ev.data, "usageMetadata"); stream && v.IsObject() {
				r = v
			}
		}
		u = usage{in: r.Get("promptTokenCount").Int(), out: r.Get("candidatesTokenCount").Int() + r.Get("thoughtsTokenCount").Int(),
			cacheRead: r.Get("cachedContentTokenCount").Int()}
	default:
		t.Fatalf("upstream path %s is of no known protocol", ex.path)
	}
	if u.in <= 0 || u.out <= 0 {
		t.Fatalf("the upstream reported no usage (%+v) in %s", u, ex.body)
	}
	return u
}
