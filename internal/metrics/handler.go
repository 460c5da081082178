package metrics

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns the GET /metrics handler: the Prometheus exposition of the
// private registry (text or OpenMetrics by content negotiation). Each
// authorised scrape calls Refresh first.
//
// With a non-empty token (config metrics.token) a request must carry
// "Authorization: Bearer <token>"; any other request gets 401 with a
// WWW-Authenticate challenge. The comparison is constant-time: both sides are
// hashed with SHA-256 and the digests compared with crypto/subtle, so neither
// the token's bytes nor its length leak through timing. Scrapes, rejected
// ones included, are counted in promhttp_metric_handler_requests_total.
func (m *Metrics) Handler(token string) http.Handler {
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:          m.reg,
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.Refresh()
		prom.ServeHTTP(w, r)
	})
	if token != "" {
		h = requireBearer(token, h)
	}
	return promhttp.InstrumentMetricHandler(m.reg, h)
}

// requireBearer answers 401 unless the request carries the bearer token.
func requireBearer(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r.Header.Get("Authorization"))
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchyard metrics"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the credentials of an "Authorization: Bearer …" header (the
// scheme is case-insensitive) and whether the header had that form.
func bearer(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(h[len(scheme):]), true
}
