package proxy

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// usageFormat says where an endpoint reports token usage.
type usageFormat int

const (
	// usageOpenAI: usage.prompt_tokens / completion_tokens; in a stream, the
	// final chunk when stream_options.include_usage is set; ends with [DONE].
	usageOpenAI usageFormat = iota
	// usageResponses: usage.input_tokens / output_tokens; in a stream, the
	// response.completed event's response.usage.
	usageResponses
	// usageAnthropic: usage.input_tokens / output_tokens; in a stream,
	// message_start carries input tokens and message_delta the output count.
	usageAnthropic
)

// bodyUsage reads input and output tokens from a JSON response body.
func bodyUsage(f usageFormat, body []byte) (in, out int64) {
	paths := [2]string{"usage.input_tokens", "usage.output_tokens"}
	if f == usageOpenAI {
		paths = [2]string{"usage.prompt_tokens", "usage.completion_tokens"}
	}
	r := gjson.GetManyBytes(body, paths[0], paths[1])
	return r[0].Int(), r[1].Int()
}

// usageScanner follows a stream's events for usage and its terminal event.
type usageScanner struct {
	format   usageFormat
	in, out  int64
	finished bool // the protocol's terminal event was seen
}

// observe inspects one event.
func (u *usageScanner) observe(ev *event) {
	switch u.format {
	case usageOpenAI:
		if bytes.Equal(bytes.TrimSpace(ev.data), []byte("[DONE]")) {
			u.finished = true
			return
		}
		if bytes.Contains(ev.data, []byte(`"usage"`)) {
			r := gjson.GetManyBytes(ev.data, "usage.prompt_tokens", "usage.completion_tokens")
			if r[0].Exists() {
				u.in, u.out = r[0].Int(), r[1].Int()
			}
		}
	case usageResponses:
		typ := string(ev.name)
		if typ == "" {
			typ = gjson.GetBytes(ev.data, "type").Str
		}
		switch typ {
		case "response.completed", "response.incomplete", "response.failed", "error":
			u.finished = true
			r := gjson.GetManyBytes(ev.data, "response.usage.input_tokens", "response.usage.output_tokens")
			if r[0].Exists() {
				u.in, u.out = r[0].Int(), r[1].Int()
			}
		}
	case usageAnthropic:
		switch string(ev.name) {
		case "message_start":
			r := gjson.GetManyBytes(ev.data, "message.usage.input_tokens", "message.usage.output_tokens")
			u.in, u.out = r[0].Int(), r[1].Int()
		case "message_delta":
			r := gjson.GetManyBytes(ev.data, "usage.input_tokens", "usage.output_tokens")
			if r[0].Int() > 0 {
				u.in = r[0].Int()
			}
			if r[1].Exists() {
				u.out = r[1].Int()
			}
		case "message_stop", "error":
			u.finished = true
		}
	}
}
