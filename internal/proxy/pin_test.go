package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/state"
)

// accountsTransport answers Responses requests as accounts that keep their
// responses do: the host names the account, every answer a new id of its
// own, and a previous_response_id another account issued is a 404.
type accountsTransport struct {
	seq atomic.Int64
}

func (a *accountsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	acct := strings.TrimSuffix(req.URL.Host, ".invalid")
	h := http.Header{"Content-Type": {"application/json"}}
	answer := func(status int, b string) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(b)), ContentLength: int64(len(b)), Request: req}, nil
	}
	if prev := gjson.GetBytes(body, "previous_response_id").Str; prev != "" && !strings.HasPrefix(prev, "resp_"+acct+"_") {
		return answer(404, `{"error":{"message":"Previous response with id '`+prev+`' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`)
	}
	return answer(200, fmt.Sprintf(`{"id":"resp_%s_%d","object":"response","status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":2}}`, acct, a.seq.Add(1)))
}

// newAccountsServer is a Server over three accounts u0–u2 serving gpt-4o.
func newAccountsServer(tb testing.TB) *Server {
	tb.Helper()
	d := config.Default()
	var ups []config.Upstream
	for i := range 3 {
		name := fmt.Sprintf("u%d", i)
		ups = append(ups, upstreamCfg(name, config.ProviderOpenAI, "http://"+name+".invalid/v1", "gpt-4o"))
	}
	cat, err := NewCatalog(CatalogInput{Upstreams: ups, Keys: []config.Key{{Name: "k", Key: testKey}}, Defaults: d.Defaults,
		Affinity: d.Affinity, Seed: 1, Now: clock.Real{}.Now})
	if err != nil {
		tb.Fatal(err)
	}
	return New(Options{Clock: clock.Real{}, State: state.NewLocal(state.LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(d.Circuit, clock.Real{})}),
		Transport: &accountsTransport{}, Logs: discardLogs{}}, cat)
}

// postResponses sends a Responses request continuing prev ("" for none).
func postResponses(srv *Server, prev string) *httptest.ResponseRecorder {
	body := `{"model":"gpt-4o","input":"hi"`
	if prev != "" {
		body += `,"previous_response_id":"` + prev + `"`
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body+"}"))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	return w
}

// TestResponsesPinnedChain: each turn of a chain continues the last and
// goes to the account that answered the first.
func TestResponsesPinnedChain(t *testing.T) {
	srv := newAccountsServer(t)
	prev, home := "", ""
	for i := range 30 {
		w := postResponses(srv, prev)
		up := w.Header().Get("X-Switchyard-Upstream")
		if w.Code != 200 || (home != "" && up != home) {
			t.Fatalf("turn %d: %d from %s, want 200 from %s: %s", i, w.Code, up, home, w.Body)
		}
		home, prev = up, gjson.GetBytes(w.Body.Bytes(), "id").Str
	}
}

// BenchmarkServeHTTPResponses is BenchmarkServeHTTP's three-upstream case
// for the Responses API: a request starting a chain (its answer pinned)
// and one continuing it (looked up and pinned to its account, the others
// filtered), so that the difference is what pinning costs in memory.
func BenchmarkServeHTTPResponses(b *testing.B) {
	for _, name := range []string{"new-chain", "continued"} {
		b.Run(name, func(b *testing.B) {
			srv := newAccountsServer(b)
			prev := ""
			if name == "continued" {
				prev = gjson.GetBytes(postResponses(srv, "").Body.Bytes(), "id").Str
			}
			body := []byte(`{"model":"gpt-4o","input":"hi"}`)
			if prev != "" {
				body = []byte(`{"model":"gpt-4o","input":"hi","previous_response_id":"` + prev + `"}`)
			}
			b.ReportAllocs()
			benchPost(b, srv, "/v1/responses", body)
		})
	}
}
