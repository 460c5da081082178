package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// These tests drive tool calls, images, cache usage and reasoning through
// the official SDKs, plain and streamed, and round-trip a tool result.

var (
	weatherSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"location": map[string]any{"type": "string"},
			"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		},
		"required": []string{"location", "unit"},
	}
	timeSchema = map[string]any{
		"type":       "object",
		"properties": map[string]any{"timezone": map[string]any{"type": "string"}},
		"required":   []string{"timezone"},
	}
	weatherArgs = map[string]any{"location": "Paris", "unit": "celsius"}
	timeArgs    = map[string]any{"timezone": "test"}
	dataURL     = "data:image/png;base64," + pngBase64
	seeImage    = fmt.Sprintf("I see 1 image (image/png, %d bytes).", len(onePixelPNG))
	longPrompt  = strings.Repeat("You are a careful assistant. ", 200)
)

// sameArgs reports whether the JSON object args holds want.
func sameArgs(t *testing.T, args string, want map[string]any) bool {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal([]byte(args), &got); err != nil {
		t.Errorf("arguments %q: %v", args, err)
		return false
	}
	return fmt.Sprint(got) == fmt.Sprint(want)
}

func TestOpenAIChatFamiliesSDK(t *testing.T) {
	_, url := newServed(t, Options{Seed: 2})
	client := openAIClient(url)
	tool := func(name string, schema map[string]any) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Parameters: schema})
	}
	tools := []openai.ChatCompletionToolUnionParam{tool("get_weather", weatherSchema), tool("get_time", timeSchema)}
	tests := []struct {
		name   string
		params openai.ChatCompletionNewParams
		check  func(t *testing.T, c openai.ChatCompletion)
	}{
		{"tool call", openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}},
			func(t *testing.T, c openai.ChatCompletion) {
				calls := c.Choices[0].Message.ToolCalls
				if c.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" ||
					!sameArgs(t, calls[0].Function.Arguments, weatherArgs) || !strings.HasPrefix(calls[0].ID, "call_") {
					t.Errorf("message = %s", c.Choices[0].Message.RawJSON())
				}
			}},
		{"parallel tool calls", openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Both, in parallel")}},
			func(t *testing.T, c openai.ChatCompletion) {
				calls := c.Choices[0].Message.ToolCalls
				if len(calls) != 2 || calls[1].Function.Name != "get_time" || !sameArgs(t, calls[1].Function.Arguments, timeArgs) || calls[0].ID == calls[1].ID {
					t.Errorf("tool calls = %s", c.Choices[0].Message.RawJSON())
				}
			}},
		{"parallel tool calls disabled", openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: tools, ParallelToolCalls: openai.Bool(false),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Both, in parallel")}},
			func(t *testing.T, c openai.ChatCompletion) {
				if n := len(c.Choices[0].Message.ToolCalls); n != 1 {
					t.Errorf("%d tool calls, want 1", n)
				}
			}},
		{"image", openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("What is it?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL})})}},
			func(t *testing.T, c openai.ChatCompletion) {
				if c.Choices[0].Message.Content != seeImage {
					t.Errorf("content = %q", c.Choices[0].Message.Content)
				}
			}},
		{"cached prompt", openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(longPrompt), openai.UserMessage("Hi")}},
			func(t *testing.T, c openai.ChatCompletion) {
				u := c.Usage
				if u.PromptTokens < cacheMinTokens || u.PromptTokensDetails.CachedTokens != int64(cachedPart(int(u.PromptTokens))) {
					t.Errorf("usage = %s", u.RawJSON())
				}
			}},
		{"reasoning", openai.ChatCompletionNewParams{Model: "o4-mini", ReasoningEffort: shared.ReasoningEffortHigh,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think")}},
			func(t *testing.T, c openai.ChatCompletion) {
				u := c.Usage
				if u.CompletionTokensDetails.ReasoningTokens != 32 || u.CompletionTokens != 32+DefaultCompletionTokens {
					t.Errorf("usage = %s", u.RawJSON())
				}
			}},
		{"reasoning effort on a model that does not reason", openai.ChatCompletionNewParams{Model: "gpt-4o", ReasoningEffort: shared.ReasoningEffortHigh,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think")}},
			func(t *testing.T, c openai.ChatCompletion) {
				if c.Usage.CompletionTokensDetails.ReasoningTokens != 0 {
					t.Errorf("usage = %s", c.Usage.RawJSON())
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole, err := client.Chat.Completions.New(context.Background(), tt.params)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, *whole)
			tt.params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := client.Chat.Completions.NewStreaming(context.Background(), tt.params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("accumulator rejected %s", stream.Current().RawJSON())
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, acc.ChatCompletion)
			if acc.Usage.TotalTokens != whole.Usage.TotalTokens || acc.Choices[0].Message.Content != whole.Choices[0].Message.Content {
				t.Errorf("streamed usage %s content %q, plain %s %q", acc.Usage.RawJSON(), acc.Choices[0].Message.Content,
					whole.Usage.RawJSON(), whole.Choices[0].Message.Content)
			}
		})
	}
}

func TestOpenAIToolRoundTripSDK(t *testing.T) {
	_, url := newServed(t, Options{})
	client := openAIClient(url)
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: weatherSchema})},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
	}
	first, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	call := first.Choices[0].Message.ToolCalls[0]
	params.Messages = append(params.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage(toolAnswer, call.ID))
	second, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Choices[0].Message.Content; got != "The tool returned: "+toolAnswer || second.Choices[0].FinishReason != "stop" {
		t.Errorf("answer %q, finish %q", got, second.Choices[0].FinishReason)
	}
	params.Messages = params.Messages[:2] // the call without its result
	var oerr *openai.Error
	if _, err := client.Chat.Completions.New(context.Background(), params); !errors.As(err, &oerr) || oerr.StatusCode != 400 ||
		!strings.Contains(oerr.Message, call.ID) {
		t.Errorf("unanswered call: %v", err)
	}
}

func TestOpenAIResponsesFamiliesSDK(t *testing.T) {
	_, url := newServed(t, Options{})
	client := openAIClient(url)
	params := responses.ResponseNewParams{
		Model: "o4-mini",
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: weatherSchema}}},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)}},
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
	}
	first, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Output) != 2 || first.Output[0].Type != "reasoning" || first.Output[0].Summary[0].Text == "" ||
		first.Output[1].Type != "function_call" || first.Output[1].Name != "get_weather" || !sameArgs(t, first.Output[1].Arguments.OfString, weatherArgs) {
		t.Fatalf("output = %s", first.RawJSON())
	}
	if first.Usage.OutputTokensDetails.ReasoningTokens != 8 {
		t.Errorf("usage = %s", first.Usage.RawJSON())
	}
	stream := client.Responses.NewStreaming(context.Background(), params)
	var completed responses.Response
	var args strings.Builder
	for stream.Next() {
		switch e := stream.Current().AsAny().(type) {
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			args.WriteString(e.Delta)
		case responses.ResponseCompletedEvent:
			completed = e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if args.String() != first.Output[1].Arguments.OfString || completed.Usage.TotalTokens != first.Usage.TotalTokens {
		t.Errorf("streamed arguments %q usage %s, plain %q %s", args.String(), completed.Usage.RawJSON(), first.Output[1].Arguments.OfString, first.Usage.RawJSON())
	}

	call := first.Output[1]
	output := responses.ResponseInputItemParamOfFunctionCallOutput(toolAnswer)
	output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	params.Input.OfInputItemList = append(params.Input.OfInputItemList,
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name), output)
	second, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := second.OutputText(); got != "The tool returned: "+toolAnswer {
		t.Errorf("answer %q", got)
	}
}

func TestAnthropicFamiliesSDK(t *testing.T) {
	_, url := newServed(t, Options{})
	client := anthropicClient(url)
	tool := func(name string, schema map[string]any) anthropic.ToolUnionParam {
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name,
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema["properties"], Required: schema["required"].([]string)}}}
	}
	tools := []anthropic.ToolUnionParam{tool("get_weather", weatherSchema), tool("get_time", timeSchema)}
	user := func(blocks ...anthropic.ContentBlockParamUnion) []anthropic.MessageParam {
		return []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)}
	}
	cachedSystem := []anthropic.TextBlockParam{{Text: longPrompt, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	tests := []struct {
		name   string
		params anthropic.MessageNewParams
		check  func(t *testing.T, m anthropic.Message)
	}{
		{"tool call", anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: tools,
			Messages: user(anthropic.NewTextBlock("Weather in Paris?"))},
			func(t *testing.T, m anthropic.Message) {
				if m.StopReason != "tool_use" || len(m.Content) != 1 || m.Content[0].Name != "get_weather" ||
					!sameArgs(t, string(m.Content[0].Input), weatherArgs) || !strings.HasPrefix(m.Content[0].ID, "toolu_") {
					t.Errorf("message = %s", m.RawJSON())
				}
			}},
		{"parallel tool use disabled", anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: tools,
			ToolChoice: anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: anthropic.Bool(true)}},
			Messages:   user(anthropic.NewTextBlock("Both, in parallel"))},
			func(t *testing.T, m anthropic.Message) {
				if len(m.Content) != 1 {
					t.Errorf("content = %s", m.RawJSON())
				}
			}},
		{"parallel tool use", anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: tools,
			Messages: user(anthropic.NewTextBlock("Both, in parallel"))},
			func(t *testing.T, m anthropic.Message) {
				if len(m.Content) != 2 || m.Content[1].Name != "get_time" || !sameArgs(t, string(m.Content[1].Input), timeArgs) {
					t.Errorf("content = %s", m.RawJSON())
				}
			}},
		{"image", anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024,
			Messages: user(anthropic.NewTextBlock("What is it?"), anthropic.NewImageBlockBase64("image/png", pngBase64))},
			func(t *testing.T, m anthropic.Message) {
				if m.Content[0].Text != seeImage {
					t.Errorf("text = %q", m.Content[0].Text)
				}
			}},
		{"thinking", anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			Messages: user(anthropic.NewTextBlock("Think"))},
			func(t *testing.T, m anthropic.Message) {
				if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Signature != thinkingSignature(m.Content[0].Thinking) ||
					m.Content[1].Type != "text" || m.Usage.OutputTokens != defaultReasoning+DefaultCompletionTokens {
					t.Errorf("message = %s", m.RawJSON())
				}
			}},
		{"cached system prompt", anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, System: cachedSystem,
			Messages: user(anthropic.NewTextBlock("Hi"))},
			func(t *testing.T, m anthropic.Message) {
				// The plain request writes the cache, the streamed one reads it.
				u := m.Usage
				if cached := u.CacheCreationInputTokens + u.CacheReadInputTokens; cached == 0 || cached%64 != 0 ||
					u.CacheCreationInputTokens*u.CacheReadInputTokens != 0 || u.InputTokens < cached {
					t.Errorf("usage = %s", u.RawJSON())
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := client.Messages.New(context.Background(), tt.params)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, *msg)
			stream := client.Messages.NewStreaming(context.Background(), tt.params)
			var acc anthropic.Message
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, acc)
			if len(acc.Content) != len(msg.Content) || acc.Usage.OutputTokens != msg.Usage.OutputTokens {
				t.Errorf("streamed %s\nplain %s", acc.RawJSON(), msg.RawJSON())
			}
		})
	}
}

func TestAnthropicThinkingToolRoundTripSDK(t *testing.T) {
	_, url := newServed(t, Options{})
	client := anthropicClient(url)
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"location", "unit"}}}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
	}
	stream := client.Messages.NewStreaming(context.Background(), params)
	var first anthropic.Message
	for stream.Next() {
		if err := first.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(first.Content) != 2 || first.Content[0].Type != "thinking" || first.Content[1].Type != "tool_use" {
		t.Fatalf("first answer = %s", first.RawJSON())
	}
	result := anthropic.NewUserMessage(anthropic.NewToolResultBlock(first.Content[1].ID, toolAnswer, false))
	blocks := first.ToParam().OfAssistant.Content
	tests := []struct {
		name      string
		assistant anthropic.MessageParam
		wantErr   string
	}{
		{name: "with its thinking", assistant: first.ToParam()},
		{name: "without its thinking", assistant: anthropic.NewAssistantMessage(blocks[1:]...),
			wantErr: "must start with a thinking block"},
		{name: "with altered thinking", assistant: anthropic.NewAssistantMessage(
			anthropic.NewThinkingBlock(first.Content[0].Signature, first.Content[0].Thinking+" (edited)"), blocks[1]),
			wantErr: "Invalid `signature`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params.Messages = []anthropic.MessageParam{params.Messages[0], tt.assistant, result}
			msg, err := client.Messages.New(context.Background(), params)
			if tt.wantErr != "" {
				var aerr *anthropic.Error
				if !errors.As(err, &aerr) || aerr.StatusCode != 400 || !strings.Contains(aerr.Error(), tt.wantErr) {
					t.Errorf("err = %v, want 400 %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg.StopReason != "end_turn" || msg.Content[len(msg.Content)-1].Text != "The tool returned: "+toolAnswer {
				t.Errorf("answer = %s", msg.RawJSON())
			}
		})
	}
}
