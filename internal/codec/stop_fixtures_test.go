package codec

import "strconv"

// Upstream answers for the stop-reason table (stop_reason_test.go), built
// per protocol: for each way an answer ends, the whole answer and the
// stream the protocol's server sends, text or (for a tool call) one call of
// get_weather.

// stopCase is one way an answer ends.
type stopCase int

// Stop cases, in the order of stopUpstream's wire arrays.
const (
	caseStop stopCase = iota
	caseLength
	caseTool
	caseFilter
)

// stopCases names the cases in subtest names.
var stopCases = [...]string{"stop", "length", "tool call", "content filter"}

// stopArgs are the tool call's arguments.
const stopArgs = `{"city":"Paris"}`

// stopUpstream is one upstream protocol's answers for the table.
type stopUpstream struct {
	name string
	t    Translator
	// wire is the protocol's own stop reason of each case; reason the
	// canonical one it means.
	wire   [4]string
	reason [4]StopReason
	whole  func(c stopCase, wire string) string
	stream func(c stopCase, wire string) []Event
	// terminal is how many of the stream's last events are its terminal
	// event and nothing else: what a stream without it lacks. 0 for
	// Gemini, whose end is the chunk that carries the finishReason.
	terminal int
}

// stopData and stopNamed build an SSE event (or a Bedrock frame's event).
func stopData(d string) Event        { return Event{Data: []byte(d)} }
func stopNamed(name, d string) Event { return Event{Name: []byte(name), Data: []byte(d)} }
func stopQuote(s string) string      { return strconv.Quote(s) }
func stopIf(c stopCase, tool, text string) string {
	if c == caseTool {
		return tool
	}
	return text
}

// stopUpstreams are the upstream wires a translated request takes
// (ForFamily): Chat Completions for the OpenAI family, Anthropic, Gemini,
// Bedrock. Responses is never an upstream wire.
var stopUpstreams = []stopUpstream{
	{
		name:   "openai-chat",
		t:      OpenAIChat.(Translator),
		wire:   [4]string{"stop", "length", "tool_calls", "content_filter"},
		reason: [4]StopReason{StopEnd, StopMaxTokens, StopToolUse, StopContentFilter},
		whole: func(c stopCase, wire string) string {
			msg := stopIf(c, `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":`+stopQuote(stopArgs)+`}}]}`,
				`{"role":"assistant","content":"Hi there"}`)
			return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + msg +
				`,"finish_reason":"` + wire + `"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
		},
		stream: func(c stopCase, wire string) []Event {
			chunk := func(choices string) Event {
				return stopData(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":` + choices + `}`)
			}
			delta := func(d, finish string) Event {
				return chunk(`[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]`)
			}
			evs := []Event{delta(`{"role":"assistant","content":""}`, "null")}
			if c == caseTool {
				evs = append(evs,
					delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null"),
					delta(`{"tool_calls":[{"index":0,"function":{"arguments":`+stopQuote(stopArgs)+`}}]}`, "null"))
			} else {
				evs = append(evs, delta(`{"content":"Hi there"}`, "null"))
			}
			return append(evs, delta(`{}`, `"`+wire+`"`),
				chunk(`[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}`),
				stopData("[DONE]"))
		},
		terminal: 1,
	},
	{
		name:   "anthropic",
		t:      Anthropic.(Translator),
		wire:   [4]string{"end_turn", "max_tokens", "tool_use", "refusal"},
		reason: [4]StopReason{StopEnd, StopMaxTokens, StopToolUse, StopRefusal}, // Anthropic's filter is its refusal
		whole: func(c stopCase, wire string) string {
			content := stopIf(c, `{"type":"tool_use","id":"toolu_1","name":"get_weather","input":`+stopArgs+`}`, `{"type":"text","text":"Hi there"}`)
			return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` + content + `],"stop_reason":"` + wire +
				`","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`
		},
		stream: func(c stopCase, wire string) []Event {
			start := stopIf(c, `{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}`, `{"type":"text","text":""}`)
			delta := stopIf(c, `{"type":"input_json_delta","partial_json":`+stopQuote(stopArgs)+`}`, `{"type":"text_delta","text":"Hi there"}`)
			return []Event{
				stopNamed("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`),
				stopNamed("content_block_start", `{"type":"content_block_start","index":0,"content_block":`+start+`}`),
				stopNamed("content_block_delta", `{"type":"content_block_delta","index":0,"delta":`+delta+`}`),
				stopNamed("content_block_stop", `{"type":"content_block_stop","index":0}`),
				stopNamed("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+wire+`","stop_sequence":null},"usage":{"output_tokens":3}}`),
				stopNamed("message_stop", `{"type":"message_stop"}`),
			}
		},
		terminal: 1,
	},
	{
		name:   "gemini",
		t:      Gemini.(Translator),
		wire:   [4]string{"STOP", "MAX_TOKENS", "STOP", "SAFETY"}, // a call ends with STOP
		reason: [4]StopReason{StopEnd, StopMaxTokens, StopToolUse, StopContentFilter},
		whole: func(c stopCase, wire string) string {
			return `{"candidates":[{"content":{"role":"model","parts":[` + geminiStopPart(c) + `]},"finishReason":"` + wire +
				`","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"modelVersion":"m","responseId":"r1"}`
		},
		stream: func(c stopCase, wire string) []Event {
			return []Event{
				stopData(`{"candidates":[{"content":{"role":"model","parts":[` + geminiStopPart(c) + `]},"index":0}],"modelVersion":"m","responseId":"r1"}`),
				stopData(`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"` + wire +
					`","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"modelVersion":"m","responseId":"r1"}`),
			}
		},
	},
	{
		name:   "bedrock",
		t:      Bedrock.(Translator),
		wire:   [4]string{"end_turn", "max_tokens", "tool_use", "content_filtered"},
		reason: [4]StopReason{StopEnd, StopMaxTokens, StopToolUse, StopContentFilter},
		whole: func(c stopCase, wire string) string {
			content := stopIf(c, `{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":`+stopArgs+`}}`, `{"text":"Hi there"}`)
			return `{"output":{"message":{"role":"assistant","content":[` + content + `]}},"stopReason":"` + wire +
				`","usage":{"inputTokens":5,"outputTokens":3,"totalTokens":8},"metrics":{"latencyMs":1}}`
		},
		stream: func(c stopCase, wire string) []Event {
			evs := []Event{stopNamed(bedrockEvMessageStart, `{"role":"assistant"}`)}
			if c == caseTool {
				evs = append(evs,
					stopNamed(bedrockEvBlockStart, `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather"}}}`),
					stopNamed(bedrockEvBlockDelta, `{"contentBlockIndex":0,"delta":{"toolUse":{"input":`+stopQuote(stopArgs)+`}}}`))
			} else {
				evs = append(evs, stopNamed(bedrockEvBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"Hi there"}}`))
			}
			return append(evs,
				stopNamed(bedrockEvBlockStop, `{"contentBlockIndex":0}`),
				stopNamed(bedrockEvMessageStop, `{"stopReason":"`+wire+`"}`),
				stopNamed(bedrockEvMetadata, `{"usage":{"inputTokens":5,"outputTokens":3,"totalTokens":8},"metrics":{"latencyMs":1}}`))
		},
		terminal: 1,
	},
}

// geminiStopPart is the answer's part: the call or the text.
func geminiStopPart(c stopCase) string {
	return stopIf(c, `{"functionCall":{"name":"get_weather","args":`+stopArgs+`}}`, `{"text":"Hi there"}`)
}
