package proxy

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"switchyard/internal/codec"
)

// countLocally answers Anthropic's count_tokens for a model that upstreams
// of other families serve, when no Anthropic-family upstream does: nothing
// upstream can count in Anthropic's tokenizer, so the gateway estimates
// (about four bytes of text per token, plus a few per message and tool) and
// says so with X-Switchyard-Estimated: true. It reports whether it answered.
func (x *exchange) countLocally() bool {
	if x.codec != codec.AnthropicCountTokens || len(x.cat.servers(x.model, x.key)) == 0 {
		return false
	}
	n := estimateTokens(x.body)
	body := []byte(`{"input_tokens":` + strconv.FormatInt(n, 10) + `}`)
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Switchyard-Estimated", "true")
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
	x.log.Status = http.StatusOK
	return true
}

// estimateTokens estimates the input tokens of an Anthropic Messages
// request: its text (system, messages, tool definitions) at four bytes a
// token, plus 4 per message and 16 per tool for the framing.
func estimateTokens(body []byte) int64 {
	var bytes, n int64
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			bytes += int64(len(v.Str))
		case v.IsObject() || v.IsArray():
			v.ForEach(func(_, c gjson.Result) bool { walk(c); return true })
		}
	}
	r := gjson.GetManyBytes(body, "system", "messages", "tools")
	walk(r[0])
	walk(r[1])
	walk(r[2])
	n = (bytes+3)/4 + 4*int64(len(r[1].Array())) + 16*int64(len(r[2].Array()))
	return max(n, 1)
}
