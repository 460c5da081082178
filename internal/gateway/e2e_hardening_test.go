package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// hardeningToken is the admin token of the hardening gateways.
const hardeningToken = "admin-hardening-token"

// startHardeningGateway serves a gateway with one OpenAI mock, the admin API
// on the main listener and the default 10 MiB body limit.
func startHardeningGateway(t *testing.T) *env {
	t.Helper()
	_, url := startMock(t, "oa", mock.Behavior{})
	return startGateway(t, spec{
		upstreams: []config.Upstream{upstreamAt("oa", config.ProviderOpenAI, url, 0, "gpt-4o")},
		edit:      func(c *config.Config) { c.Admin.Token = hardeningToken },
	})
}

// rawExchange writes req on a fresh connection to addr while reading the
// answer, so a server that answers before reading everything (413, 431) is
// seen; the connection has a 30 s deadline. A write error is ignored: the
// server may hang up on an oversized request once it has answered.
func rawExchange(t *testing.T, addr string, req io.Reader) result {
	t.Helper()
	got, _ := rawExchangeProto(t, addr, req)
	return got
}

// rawExchangeProto is rawExchange that also returns the answer's protocol
// version ("HTTP/1.1").
func rawExchangeProto(t *testing.T, addr string, req io.Reader) (result, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(c, req) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // the server may close right after a short answer
	return result{status: resp.StatusCode, header: resp.Header, body: b}, resp.Proto
}

// chatRequest is a raw HTTP/1.1 chat request with body, framed with
// Content-Length or, when chunked, as one chunk.
func chatRequest(body []byte, chunked bool) io.Reader {
	var head bytes.Buffer
	head.WriteString("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + testKey +
		"\r\nContent-Type: application/json\r\nConnection: close\r\n")
	if !chunked {
		fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", len(body))
		return io.MultiReader(&head, bytes.NewReader(body))
	}
	fmt.Fprintf(&head, "Transfer-Encoding: chunked\r\n\r\n%x\r\n", len(body))
	return io.MultiReader(&head, bytes.NewReader(body), strings.NewReader("\r\n0\r\n\r\n"))
}

// oversizedChat is a chat body of exactly n bytes.
func oversizedChat(n int) []byte {
	prefix := `{"model":"gpt-4o","messages":[{"role":"user","content":"`
	suffix := `"}]}`
	return []byte(prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix)
}

// TestRawConnectionHardening drives malformed and hostile requests through
// raw TCP connections and checks each answer, that the gateway keeps serving
// afterwards, and that oversized bodies do not pile up in the heap.
func TestRawConnectionHardening(t *testing.T) {
	e := startHardeningGateway(t)
	maxBody := config.Default().Defaults.MaxBodyBytes

	manyHeaders := func() io.Reader {
		var b bytes.Buffer
		b.WriteString("GET /healthz HTTP/1.1\r\nHost: gw\r\n")
		value := strings.Repeat("v", 1100)
		for i := range 1000 { // 1,000 headers, about 1.1 MB: over MaxHeaderBytes (1 MiB)
			fmt.Fprintf(&b, "X-Filler-%d: %s\r\n", i, value)
		}
		b.WriteString("\r\n")
		return &b
	}
	get := func(target string) func() io.Reader {
		return func() io.Reader {
			return strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + hardeningToken + "\r\nConnection: close\r\n\r\n")
		}
	}
	validChat := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	badUTF8 := []byte("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\xfd\"}]}")

	http10 := func(path, body string) func() io.Reader {
		return func() io.Reader {
			return strings.NewReader(fmt.Sprintf("POST %s HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, testKey, len(body), body))
		}
	}

	// Traversal under /admin has its own matrix: TestBadInputAdminTraversal
	// (e2e_badinput_test.go); the same inputs over HTTP/1.1 and h2c clients
	// are in TestBadInputMatrix.
	tests := []struct {
		name      string
		req       func() io.Reader
		statuses  []int  // any of these
		openAI    string // when set, the body must be an OpenAI error with this code
		anthropic string // when set, the body must be an Anthropic error with this type
		json404   bool   // the body must be a JSON document
		proto     string // when set, the answer's protocol version
	}{
		{name: "HTTP/1.0 healthz", req: func() io.Reader { return strings.NewReader("GET /healthz HTTP/1.0\r\n\r\n") }, statuses: []int{200}},
		{name: "HTTP/1.0 chat", req: func() io.Reader {
			return strings.NewReader(fmt.Sprintf("POST /v1/chat/completions HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testKey, len(validChat), validChat))
		}, statuses: []int{200}},
		{name: "HTTP/1.0 malformed JSON", req: http10("/v1/chat/completions", `{"model":`), statuses: []int{400}, openAI: "invalid_json", proto: "HTTP/1.0"},
		{name: "HTTP/1.0 anthropic wrong model type", req: http10("/v1/messages", `{"model":7,"max_tokens":5}`), statuses: []int{400}, anthropic: "invalid_request_error", proto: "HTTP/1.0"},
		{name: "HTTP/1.0 max_body_bytes+1", req: func() io.Reader { return http10("/v1/chat/completions", string(oversizedChat(int(maxBody)+1)))() },
			statuses: []int{413}, openAI: "request_too_large", proto: "HTTP/1.0"},
		// net/http does not do the h2c upgrade dance (only prior knowledge):
		// the request is answered over HTTP/1.1 as if the header were absent.
		{name: "HTTP/1.1 Upgrade h2c", req: func() io.Reader {
			return strings.NewReader(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testKey, len(validChat), validChat))
		}, statuses: []int{200}, proto: "HTTP/1.1"},
		{name: "1000 headers over MaxHeaderBytes", req: manyHeaders, statuses: []int{431}},
		{name: "invalid UTF-8 in JSON", req: func() io.Reader { return chatRequest(badUTF8, false) }, statuses: []int{400}, openAI: "invalid_json"},
		{name: "max_body_bytes+1 content-length", req: func() io.Reader { return chatRequest(oversizedChat(int(maxBody)+1), false) }, statuses: []int{413}, openAI: "request_too_large"},
		{name: "max_body_bytes+1 chunked", req: func() io.Reader { return chatRequest(oversizedChat(int(maxBody)+1), true) }, statuses: []int{413}, openAI: "request_too_large"},
		{name: "max_body_bytes exactly", req: func() io.Reader { return chatRequest(oversizedChat(int(maxBody)), false) }, statuses: []int{200}},
		{name: "encoded slash in an upstream name", req: get("/admin/api/upstreams/..%2f..%2fx"), statuses: []int{404}},
		{name: "etc passwd", req: get("/etc/passwd"), statuses: []int{404}, json404: true},
		{name: "unknown v1 endpoint", req: get("/v1/nope"), statuses: []int{404}, json404: true},
		{name: "unknown root endpoint", req: get("/nope"), statuses: []int{404}, json404: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, proto := rawExchangeProto(t, e.Addr, tc.req())
			ok := false
			for _, s := range tc.statuses {
				ok = ok || got.status == s
			}
			if !ok {
				t.Fatalf("status %d, want one of %v (%.300s)", got.status, tc.statuses, got.body)
			}
			if bytes.Contains(got.body, []byte("root:")) {
				t.Fatalf("a file leaked: %.300s", got.body)
			}
			if tc.proto != "" && proto != tc.proto {
				t.Errorf("answered over %s, want %s", proto, tc.proto)
			}
			if tc.openAI != "" {
				checkErrorShape(t, got.body, got.header, openAIError, tc.openAI)
			}
			if tc.anthropic != "" {
				checkErrorShape(t, got.body, got.header, anthropicError, tc.anthropic)
			}
			if tc.json404 && !gjson.ValidBytes(got.body) {
				t.Fatalf("404 body is not JSON: %.300s", got.body)
			}
			// Whatever the row did, the gateway still serves.
			if r := rawRequest(t, http.MethodGet, e.URL+"/healthz", nil); r.status != http.StatusOK {
				t.Fatalf("healthz after the row: %d", r.status)
			}
		})
	}

	t.Run("heap bounded after 50 oversized bodies", func(t *testing.T) {
		body := oversizedChat(int(maxBody) + 1)
		for i := range 50 {
			if got := rawExchange(t, e.Addr, chatRequest(body, i%2 == 1)); got.status != http.StatusRequestEntityTooLarge {
				t.Fatalf("request %d: status %d, want 413", i, got.status)
			}
		}
		assertHeapBounded(t)
	})
}

// TestRawChunkedBodyNeverEnds: a chunked body that never ends holds only its
// own request; others are served meanwhile, and once the client hangs up
// the request ends, so graceful shutdown does not wait for it.
func TestRawChunkedBodyNeverEnds(t *testing.T) {
	e := startHardeningGateway(t)
	c, err := net.Dial("tcp", e.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + testKey +
		"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := `{"model":"gpt-4o","messages":[`
	if _, err := fmt.Fprintf(c, "%s%x\r\n%s\r\n", head, len(chunk), chunk); err != nil {
		t.Fatal(err)
	}
	// The stalled request is in the handler's body read now (or soon):
	// other clients are served meanwhile.
	for i := range 5 {
		if r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`); r.status != http.StatusOK {
			t.Fatalf("request %d beside the stalled body: %d %s", i, r.status, r.body)
		}
	}
	// Nothing answers the stalled request while its body is open.
	if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatalf("the stalled request got an answer before its body ended")
	}
	c.Close()
	// With the client gone the handler's read fails and the connection
	// ends, so Shutdown returns well before its 10 s grace.
	done := make(chan error, 1)
	go func() { done <- e.Shutdown() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the stalled request still holds the server 8 s after its client hung up")
	}
}
