package mock

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// serve starts s on a loopback httptest server closed at the end of the test.
func serve(t testing.TB, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

// newServed builds a mock from opts and serves it.
func newServed(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	s := New(opts)
	return s, serve(t, s)
}

func openAIClient(url string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(url+"/v1/"),
		option.WithAPIKey("sk-test-openai"),
		option.WithMaxRetries(0),
	)
}

func anthropicClient(url string) anthropic.Client {
	return anthropic.NewClient(
		aoption.WithBaseURL(url),
		aoption.WithAPIKey("sk-ant-test"),
		aoption.WithMaxRetries(0),
	)
}

// result is a finished raw HTTP exchange.
type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) get(path string) gjson.Result { return gjson.GetBytes(r.body, path) }

// do sends a request through a real connection and reads the whole answer.
func do(t testing.TB, method, url, body string, header ...string) result {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: data}
}

// serveDirect runs one request through the handler without a network.
func serveDirect(s *Server, method, path, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// direct runs one request through the handler and returns what it answered.
func direct(s *Server, method, path, body string, header ...string) result {
	rec := serveDirect(s, method, path, body, header...)
	return result{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// sseFrame is one parsed server-sent event.
type sseFrame struct {
	event string
	data  string
}

// parseSSE splits an event stream into frames; it fails the test on a frame
// that is not "event:"/"data:" lines.
func parseSSE(t testing.TB, body []byte) []sseFrame {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("event stream does not end with a blank line: %q", tail(body))
	}
	var frames []sseFrame
	for _, raw := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		var f sseFrame
		for _, line := range strings.Split(raw, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected line %q in frame %q", line, raw)
			}
		}
		frames = append(frames, f)
	}
	return frames
}

func tail(b []byte) []byte {
	if len(b) > 80 {
		return b[len(b)-80:]
	}
	return b
}

// timedRecorder is a ResponseWriter that records when headers and each
// flush happened, for timing tests inside a synctest bubble.
type timedRecorder struct {
	mu       sync.Mutex // guards every field
	header   http.Header
	status   int
	headerAt time.Time
	buf      bytes.Buffer
	flushes  []timedFlush
}

type timedFlush struct {
	at   time.Time
	data string // bytes written since the previous flush
}

func newTimedRecorder() *timedRecorder { return &timedRecorder{header: http.Header{}} }

func (r *timedRecorder) Header() http.Header { return r.header }

func (r *timedRecorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status, r.headerAt = code, time.Now()
	}
}

func (r *timedRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status, r.headerAt = http.StatusOK, time.Now()
	}
	return r.buf.Write(b)
}

func (r *timedRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes = append(r.flushes, timedFlush{at: time.Now(), data: r.buf.String()})
	r.buf.Reset()
}

func (r *timedRecorder) snapshot() (int, time.Time, []timedFlush) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.headerAt, append([]timedFlush(nil), r.flushes...)
}
