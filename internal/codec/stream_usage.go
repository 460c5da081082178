package codec

import (
	"bytes"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// StreamUsage is a protocol whose streams report usage only when the
// request asks for it: OpenAI Chat Completions and Completions, with
// stream_options.include_usage. The proxy asks for it on every passthrough
// stream, so that tokens, TPM and cost are counted, and drops from the
// client's stream the usage chunk the client did not ask for
// (docs/protocols.md#usage-and-cache-tokens).
type StreamUsage interface {
	// AskUsage returns a streamed request's body asking for usage, and
	// whether it had to add the ask (the client had not asked).
	AskUsage(body []byte) ([]byte, bool, error)
	// UsageOnly reports whether ev is the chunk that carries only the
	// usage: no choices.
	UsageOnly(ev *Event) bool
}

var _ StreamUsage = openAI{}

// AskUsage sets stream_options.include_usage unless it is already true.
func (openAI) AskUsage(body []byte) ([]byte, bool, error) {
	if peekJSON(body, "stream_options.include_usage").Type == gjson.True {
		return body, false, nil
	}
	b, err := sjson.SetBytes(body, "stream_options.include_usage", true)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// UsageOnly reports a chunk with a usage object and no choice: the last
// one include_usage adds. The chunks before it carry "usage":null, which
// the client gets as the upstream sent it (a null usage is what the
// protocol's schema allows on any chunk).
//
// It runs on every event of such a stream, so a chunk whose "usage" is not
// an object is turned down by a byte scan, before any JSON is parsed
// (BenchmarkUsageOnly).
func (openAI) UsageOnly(ev *Event) bool {
	d := ev.Data
	i := bytes.LastIndex(d, []byte(`"usage"`))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(d[i+len(`"usage"`):], " \t\r\n:")
	if len(rest) == 0 || rest[0] != '{' || peekJSON(d, "choices.0").Exists() {
		return false
	}
	return peekJSON(d, "usage").IsObject()
}
