package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandlerAuth(t *testing.T) {
	const token = "s3cret-metrics-token"
	tests := []struct {
		name   string
		token  string // configured
		header string // Authorization sent; "" sends none
		want   int
	}{
		{"no token configured, no header", "", "", http.StatusOK},
		{"no token configured, any header", "", "Bearer whatever", http.StatusOK},
		{"missing header", token, "", http.StatusUnauthorized},
		{"wrong token", token, "Bearer wrong", http.StatusUnauthorized},
		{"prefix of token", token, "Bearer " + token[:len(token)-1], http.StatusUnauthorized},
		{"token with suffix", token, "Bearer " + token + "x", http.StatusUnauthorized},
		{"empty bearer", token, "Bearer ", http.StatusUnauthorized},
		{"wrong scheme", token, "Basic " + token, http.StatusUnauthorized},
		{"bare token", token, token, http.StatusUnauthorized},
		{"right token", token, "Bearer " + token, http.StatusOK},
		{"scheme case-insensitive", token, "bearer " + token, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTest(t)
			m.Request("openai-main", "gpt-4o", 200, false, time.Second)
			srv := httptest.NewServer(m.Handler(tt.token))
			defer srv.Close()
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d; body %q", resp.StatusCode, tt.want, body)
			}
			hasSeries := strings.Contains(string(body),
				`switchyard_requests_total{code_class="2xx",model="gpt-4o",stream="false",upstream="openai-main"} 1`)
			switch tt.want {
			case http.StatusOK:
				if !hasSeries {
					t.Errorf("body lacks the recorded series:\n%s", body)
				}
			case http.StatusUnauthorized:
				if hasSeries {
					t.Error("401 leaked metrics")
				}
				if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			}
		})
	}
}

// TestHandlerRefreshesAndCountsScrapes checks that a scrape picks up a name
// added since the last refresh, and that Handler may be called twice on one
// Metrics.
func TestHandlerRefreshesAndCountsScrapes(t *testing.T) {
	ups := list("a")
	m := New(ups.get, nil, WithRefreshInterval(0))
	h1, h2 := m.Handler(""), m.Handler("t")
	ups.set("a", "b")

	rec := httptest.NewRecorder()
	h1.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d", rec.Code)
	}
	m.Attempt("b", OutcomeSuccess)
	equalValues(t, "attempts", values(t, m.Registry(), "switchyard_upstream_attempts_total"),
		map[string]float64{"outcome=success,upstream=b": 1})

	rec = httptest.NewRecorder()
	h2.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401", rec.Code)
	}
	equalValues(t, "scrapes", values(t, m.Registry(), "promhttp_metric_handler_requests_total"),
		map[string]float64{"code=200": 1, "code=401": 1, "code=500": 0, "code=503": 0})
}
