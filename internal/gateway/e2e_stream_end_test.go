package gateway_test

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// TestTranslatedStreamOpenEnd: an Anthropic client (Claude Code over an
// OpenAI-compatible pool) streams from an openai-compatible upstream whose
// streams end after the finish_reason chunk without data: [DONE] (the
// mock's omit_done, as vLLM may). The gateway takes the stream as complete
// and the client sees the stop reason the upstream gave
// (docs/protocols.md#how-a-stream-ends): tool_use after a tool call, so an
// agent loop runs the tool; max_tokens after finish_reason length; end_turn
// after stop; with the upstream's usage and a stream that ends with
// message_stop.
func TestTranslatedStreamOpenEnd(t *testing.T) {
	_, mockURL := startMock(t, "mock-vllm", mock.Behavior{OmitDone: true})
	tap := startUpstreamTap(t, mockURL)
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("vllm", config.ProviderOpenAICompatible, tap.URL, 0, "llama-3"),
	}})
	sdk := newSDKTap(t, "open-end")
	client := e.anthropicOver(sdk.client())
	user := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(toolPrompt))}
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: toolName,
		InputSchema: anthropic.ToolInputSchemaParam{Properties: toolSchema["properties"], Required: []string{"city"}}}}}
	tests := []struct {
		name   string
		params anthropic.MessageNewParams
		finish string // the upstream's finish_reason
		want   anthropic.StopReason
	}{
		{"tool call", anthropic.MessageNewParams{Model: "llama-3", MaxTokens: 1024, Messages: user, Tools: tools},
			"tool_calls", anthropic.StopReasonToolUse},
		{"length", anthropic.MessageNewParams{Model: "llama-3", MaxTokens: 3, Messages: user},
			"length", anthropic.StopReasonMaxTokens},
		{"stop", anthropic.MessageNewParams{Model: "llama-3", MaxTokens: 1024, Messages: user},
			"stop", anthropic.StopReasonEndTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sendAnthropic(t, client, tt.params, true)
			wire := sdk.take(t)
			up := tap.wait(t, wire.id)

			events := parseSSE(up.body)
			if len(events) == 0 {
				t.Fatalf("the upstream sent no events: %q", up.body)
			}
			finishes := 0
			for _, ev := range events {
				if f := gjson.Get(ev.data, "choices.0.finish_reason").Str; f != "" {
					finishes++
					if f != tt.finish {
						t.Fatalf("the upstream's finish_reason is %q, want %q", f, tt.finish)
					}
				}
			}
			if events[len(events)-1].data == "[DONE]" || finishes != 1 {
				t.Fatalf("the upstream's stream has %d events, %d finish_reason chunks, ending with %q; want one finish and no [DONE]:\n%s",
					len(events), finishes, events[len(events)-1].data, up.body)
			}

			if m.StopReason != tt.want {
				t.Errorf("stop_reason %q, want %q", m.StopReason, tt.want)
			}
			if got := wire.header.Get("X-Switchyard-Translated"); got != "anthropic->openai-chat" {
				t.Errorf("X-Switchyard-Translated %q, want anthropic->openai-chat", got)
			}
			checkStreamShape(t, "anthropic", wire.raw())
			if got, want := (usage{in: m.Usage.InputTokens, out: m.Usage.OutputTokens}), up.reported(t); got != want {
				t.Errorf("usage %+v, want the upstream's %+v", got, want)
			}
			calls := 0
			for _, b := range m.Content {
				if b.Type == "tool_use" && b.Name == toolName && gjson.Get(string(b.Input), "city").Str != "" {
					calls++
				}
			}
			if wantCalls := map[bool]int{true: 1}[tt.want == anthropic.StopReasonToolUse]; calls != wantCalls {
				t.Errorf("%d %s calls with a city in %+v, want %d", calls, toolName, m.Content, wantCalls)
			}
		})
	}
}
