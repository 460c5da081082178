package proxy

import (
	"net/http"
	"strconv"

	"switchyard/internal/codec"
)

// countLocally answers a token-count operation (Anthropic's count_tokens,
// Gemini's countTokens) for a model that upstreams of other families serve,
// when none of the operation's family does: nothing upstream can count in
// that family's tokenizer, so the gateway estimates (codec.TokenCounter) and
// says so with X-Switchyard-Estimated: true. It reports whether it answered.
func (x *exchange) countLocally() bool {
	ct, ok := x.codec.(codec.TokenCounter)
	if !ok || len(x.cat.servers(x.model, x.key)) == 0 {
		return false
	}
	body := ct.CountBody(ct.Estimate(x.body))
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Switchyard-Estimated", "true")
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
	x.log.Status = http.StatusOK
	return true
}
