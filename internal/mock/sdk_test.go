package mock

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// These tests prove the wire format by letting the official SDKs parse it.

func TestOpenAIChatCompletionSDK(t *testing.T) {
	tests := []struct {
		name       string
		completion int   // Behavior.CompletionTokens
		maxTokens  int64 // request max_tokens, 0 = unset
		wantWords  int
		wantFinish string
	}{
		{name: "default length", wantWords: DefaultCompletionTokens, wantFinish: "stop"},
		{name: "configured length", completion: 5, wantWords: 5, wantFinish: "stop"},
		{name: "cut by max_tokens", completion: 10, maxTokens: 3, wantWords: 3, wantFinish: "length"},
		{name: "max_tokens above answer", completion: 4, maxTokens: 100, wantWords: 4, wantFinish: "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newServed(t, Options{Name: "oa-1", Seed: 7, Behavior: Behavior{CompletionTokens: tt.completion}})
			client := openAIClient(url)
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-4o-2024-08-06",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello, mock!")},
			}
			if tt.maxTokens > 0 {
				params.MaxTokens = openai.Int(tt.maxTokens)
			}
			var raw *http.Response
			got, err := client.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") {
				t.Errorf("object, id = %q, %q", got.Object, got.ID)
			}
			if got.Model != "gpt-4o-2024-08-06" {
				t.Errorf("model = %q, want the request's model echoed", got.Model)
			}
			if len(got.Choices) != 1 {
				t.Fatalf("choices = %d, want 1", len(got.Choices))
			}
			ch := got.Choices[0]
			if n := len(strings.Fields(ch.Message.Content)); n != tt.wantWords {
				t.Errorf("content has %d words, want %d: %q", n, tt.wantWords, ch.Message.Content)
			}
			if ch.FinishReason != tt.wantFinish || ch.Message.Role != "assistant" {
				t.Errorf("finish_reason, role = %q, %q", ch.FinishReason, ch.Message.Role)
			}
			st := s.Stats()
			wantPrompt := int64(len(st.LastBody) / 4)
			if got.Usage.PromptTokens != wantPrompt || got.Usage.CompletionTokens != int64(tt.wantWords) ||
				got.Usage.TotalTokens != wantPrompt+int64(tt.wantWords) {
				t.Errorf("usage = %+v, want prompt %d completion %d", got.Usage, wantPrompt, tt.wantWords)
			}
			if h := raw.Header.Get(HeaderUpstream); h != "oa-1" {
				t.Errorf("%s = %q", HeaderUpstream, h)
			}
			if st.LastPath != "/v1/chat/completions" || st.LastHeaders.Get("Authorization") != "Bearer sk-test-openai" {
				t.Errorf("last request = %s %v", st.LastPath, st.LastHeaders)
			}
		})
	}
}

func TestOpenAIChatCompletionDeterministic(t *testing.T) {
	ask := func(seed int64, prompt string) string {
		_, url := newServed(t, Options{Seed: seed})
		client := openAIClient(url)
		got, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return got.Choices[0].Message.Content
	}
	a, b := ask(1, "same"), ask(1, "same")
	if a != b {
		t.Errorf("same seed and prompt gave %q and %q", a, b)
	}
	if c := ask(2, "same"); c == a {
		t.Errorf("another seed gave the same answer %q", c)
	}
	if d := ask(1, "different"); d == a {
		t.Errorf("another prompt gave the same answer %q", d)
	}
}

func TestOpenAIChatStreamSDK(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "include_usage"}[includeUsage], func(t *testing.T) {
			_, url := newServed(t, Options{Seed: 3, Behavior: Behavior{CompletionTokens: 6}})
			client := openAIClient(url)
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
			}
			whole, err := client.Chat.Completions.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if includeUsage {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			var acc openai.ChatCompletionAccumulator
			var chunks []openai.ChatCompletionChunk
			for stream.Next() {
				chunk := stream.Current()
				chunks = append(chunks, chunk)
				if !acc.AddChunk(chunk) {
					t.Fatalf("accumulator rejected chunk %s", chunk.RawJSON())
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if got := acc.Choices[0].Message.Content; got != whole.Choices[0].Message.Content {
				t.Errorf("streamed %q, non-streamed %q", got, whole.Choices[0].Message.Content)
			}
			if acc.Choices[0].FinishReason != "stop" || acc.Model != "gpt-4o-mini" || chunks[0].Object != "chat.completion.chunk" {
				t.Errorf("finish %q model %q object %q", acc.Choices[0].FinishReason, acc.Model, chunks[0].Object)
			}
			if chunks[0].Choices[0].Delta.Role != "assistant" {
				t.Errorf("first chunk delta = %s, want the assistant role", chunks[0].Choices[0].Delta.RawJSON())
			}
			// role chunk + 6 tokens + finish chunk (+ usage chunk)
			want := 1 + 6 + 1
			if includeUsage {
				want++
			}
			if len(chunks) != want {
				t.Fatalf("%d chunks, want %d", len(chunks), want)
			}
			last := chunks[len(chunks)-1]
			if includeUsage {
				// The same request costs the same streamed or not.
				if len(last.Choices) != 0 || last.Usage.CompletionTokens != 6 ||
					last.Usage.PromptTokens != whole.Usage.PromptTokens ||
					last.Usage.TotalTokens != last.Usage.PromptTokens+6 {
					t.Errorf("last chunk = %s, want empty choices and usage", last.RawJSON())
				}
				for _, c := range chunks[:len(chunks)-1] {
					if !c.JSON.Usage.Valid() && c.JSON.Usage.Raw() != "null" {
						t.Errorf("chunk %s lacks \"usage\": null", c.RawJSON())
					}
				}
			} else {
				for _, c := range chunks {
					if len(c.Choices) == 0 || c.JSON.Usage.Valid() {
						t.Errorf("chunk %s: without include_usage every chunk has a choice and no usage", c.RawJSON())
					}
				}
			}
		})
	}
}

func TestOpenAICompletionsSDK(t *testing.T) {
	_, url := newServed(t, Options{Behavior: Behavior{CompletionTokens: 5}})
	client := openAIClient(url)
	params := openai.CompletionNewParams{
		Model:  "gpt-3.5-turbo-instruct",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
	}
	whole, err := client.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Object != "text_completion" || whole.Model != "gpt-3.5-turbo-instruct" ||
		len(strings.Fields(whole.Choices[0].Text)) != 5 || whole.Usage.CompletionTokens != 5 ||
		whole.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion = %s", whole.RawJSON())
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Completions.NewStreaming(context.Background(), params)
	var text strings.Builder
	var last openai.Completion
	n := 0
	for stream.Next() {
		last = stream.Current()
		n++
		if len(last.Choices) > 0 {
			text.WriteString(last.Choices[0].Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != whole.Choices[0].Text {
		t.Errorf("streamed %q, non-streamed %q", text.String(), whole.Choices[0].Text)
	}
	// 5 tokens, the finish event, the usage event
	if n != 5+2 || len(last.Choices) != 0 || last.Usage.CompletionTokens != 5 ||
		last.Usage.TotalTokens != last.Usage.PromptTokens+5 {
		t.Errorf("%d events, last %s", n, last.RawJSON())
	}
}

func TestOpenAIEmbeddingsSDK(t *testing.T) {
	_, url := newServed(t, Options{Seed: 11})
	client := openAIClient(url)
	tests := []struct {
		name   string
		input  openai.EmbeddingNewParamsInputUnion
		format openai.EmbeddingNewParamsEncodingFormat
		dims   int64
		want   int // embeddings
	}{
		{name: "single string", input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("alpha")}, want: 1},
		{name: "strings", input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta", "alpha"}}, want: 3},
		{name: "strings base64", input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta", "alpha"}},
			format: openai.EmbeddingNewParamsEncodingFormatBase64, want: 3},
		{name: "tokens", input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2, 3}}, want: 1},
		{name: "token arrays", input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1}, {2, 3}}}, want: 2},
		{name: "dimensions", input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("alpha")}, dims: 32, want: 1},
	}
	alpha := embedding(11, "alpha", defaultEmbeddingDims)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: tt.input, EncodingFormat: tt.format}
			if tt.dims > 0 {
				params.Dimensions = openai.Int(tt.dims)
			}
			got, err := client.Embeddings.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if got.Object != "list" || got.Model != "text-embedding-3-small" || len(got.Data) != tt.want {
				t.Fatalf("response = %s", got.RawJSON())
			}
			if got.Usage.PromptTokens < 1 || got.Usage.TotalTokens != got.Usage.PromptTokens {
				t.Errorf("usage = %+v", got.Usage)
			}
			wantDims := defaultEmbeddingDims
			if tt.dims > 0 {
				wantDims = int(tt.dims)
			}
			for i, e := range got.Data {
				if e.Index != int64(i) || e.Object != "embedding" || len(e.Embedding) != wantDims {
					t.Fatalf("data[%d] = index %d object %q %d dims", i, e.Index, e.Object, len(e.Embedding))
				}
				var norm float64
				for _, x := range e.Embedding {
					norm += x * x
				}
				if math.Abs(norm-1) > 1e-5 {
					t.Errorf("data[%d] norm² = %v, want a unit vector", i, norm)
				}
			}
			if tt.want == 3 {
				if !slices.Equal(got.Data[0].Embedding, alpha) || !slices.Equal(got.Data[2].Embedding, alpha) {
					t.Errorf("the same input must give the same vector: %v %v, want %v", got.Data[0].Embedding, got.Data[2].Embedding, alpha)
				}
				if slices.Equal(got.Data[0].Embedding, got.Data[1].Embedding) {
					t.Errorf("different inputs gave the same vector")
				}
			}
		})
	}
}

func TestOpenAIResponsesSDK(t *testing.T) {
	s, url := newServed(t, Options{Seed: 5, Behavior: Behavior{CompletionTokens: 4}})
	client := openAIClient(url)
	params := responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me something")},
	}
	whole, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	prompt := int64(len(s.Stats().LastBody) / 4)
	if whole.Object != "response" || whole.Status != "completed" || whole.Model != "gpt-4o" ||
		len(strings.Fields(whole.OutputText())) != 4 {
		t.Fatalf("response = %s", whole.RawJSON())
	}
	if whole.Usage.InputTokens != prompt || whole.Usage.OutputTokens != 4 || whole.Usage.TotalTokens != prompt+4 {
		t.Errorf("usage = %+v, want input %d output 4", whole.Usage, prompt)
	}

	stream := client.Responses.NewStreaming(context.Background(), params)
	var types []string
	var text strings.Builder
	var completed responses.ResponseCompletedEvent
	for i := int64(0); stream.Next(); i++ {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber != i {
			t.Errorf("event %d has sequence_number %d", i, ev.SequenceNumber)
		}
		switch e := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			text.WriteString(e.Delta)
		case responses.ResponseCompletedEvent:
			completed = e
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed",
	}
	if !slices.Equal(types, want) {
		t.Errorf("event types = %v\nwant %v", types, want)
	}
	if text.String() != whole.OutputText() || completed.Response.OutputText() != whole.OutputText() {
		t.Errorf("streamed %q, completed %q, non-streamed %q", text.String(), completed.Response.OutputText(), whole.OutputText())
	}
	if completed.Response.Usage.OutputTokens != 4 || completed.Response.Usage.TotalTokens != completed.Response.Usage.InputTokens+4 {
		t.Errorf("completed usage = %+v", completed.Response.Usage)
	}
}

func TestModelsSDK(t *testing.T) {
	_, url := newServed(t, Options{Models: []string{"gpt-4o", "claude-3-5-haiku"}})
	t.Run("openai", func(t *testing.T) {
		client := openAIClient(url)
		page, err := client.Models.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
			if m.Object != "model" {
				t.Errorf("object = %q", m.Object)
			}
		}
		if !slices.Equal(ids, []string{"gpt-4o", "claude-3-5-haiku"}) {
			t.Errorf("ids = %v", ids)
		}
		m, err := client.Models.Get(context.Background(), "gpt-4o")
		if err != nil || m.ID != "gpt-4o" {
			t.Errorf("get = %+v, %v", m, err)
		}
		if _, err := client.Models.Get(context.Background(), "nope"); err == nil {
			t.Error("an unknown model must answer 404")
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		client := anthropicClient(url)
		page, err := client.Models.List(context.Background(), anthropic.ModelListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
			if m.Type != "model" {
				t.Errorf("type = %q", m.Type)
			}
		}
		if !slices.Equal(ids, []string{"gpt-4o", "claude-3-5-haiku"}) {
			t.Errorf("ids = %v", ids)
		}
	})
}

func TestAnthropicMessagesSDK(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int64
		wantWords int
		wantStop  anthropic.StopReason
	}{
		{name: "end_turn", maxTokens: 1024, wantWords: 7, wantStop: anthropic.StopReasonEndTurn},
		{name: "max_tokens", maxTokens: 2, wantWords: 2, wantStop: anthropic.StopReasonMaxTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newServed(t, Options{Name: "ant", Seed: 9, Behavior: Behavior{CompletionTokens: 7}})
			client := anthropicClient(url)
			params := anthropic.MessageNewParams{
				Model:     "claude-3-5-haiku-20241022",
				MaxTokens: tt.maxTokens,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi Claude"))},
			}
			msg, err := client.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			prompt := int64(len(st.LastBody) / 4)
			if msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-3-5-haiku-20241022" ||
				len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.StopReason != tt.wantStop {
				t.Fatalf("message = %s", msg.RawJSON())
			}
			if n := len(strings.Fields(msg.Content[0].Text)); n != tt.wantWords {
				t.Errorf("%d words, want %d", n, tt.wantWords)
			}
			if msg.Usage.InputTokens != prompt || msg.Usage.OutputTokens != int64(tt.wantWords) {
				t.Errorf("usage = %+v, want input %d output %d", msg.Usage, prompt, tt.wantWords)
			}
			if st.LastPath != "/v1/messages" || st.LastHeaders.Get("Authorization") != "Bearer sk-ant-test" ||
				st.LastHeaders.Get("anthropic-version") == "" {
				t.Errorf("last request = %s %v", st.LastPath, st.LastHeaders)
			}

			stream := client.Messages.NewStreaming(context.Background(), params)
			var acc anthropic.Message
			var types []string
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				if err := acc.Accumulate(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			want := []string{"message_start", "content_block_start"} // the SDK skips ping
			for range tt.wantWords {
				want = append(want, "content_block_delta")
			}
			want = append(want, "content_block_stop", "message_delta", "message_stop")
			if !slices.Equal(types, want) {
				t.Errorf("event types = %v\nwant %v", types, want)
			}
			if acc.Content[0].Text != msg.Content[0].Text || acc.StopReason != tt.wantStop || acc.Model != msg.Model {
				t.Errorf("accumulated %q stop %q, non-streamed %q", acc.Content[0].Text, acc.StopReason, msg.Content[0].Text)
			}
			if acc.Usage.InputTokens != msg.Usage.InputTokens {
				t.Errorf("streamed input_tokens = %d, want %d as non-streamed", acc.Usage.InputTokens, msg.Usage.InputTokens)
			}
			if acc.Usage.OutputTokens != int64(tt.wantWords) {
				t.Errorf("streamed output_tokens = %d, want %d", acc.Usage.OutputTokens, tt.wantWords)
			}
		})
	}
}

// TestAnthropicCountTokensSDK: the SDK's countTokens gets Anthropic's
// {"input_tokens"} for a message list, and Anthropic's 400 without one.
func TestAnthropicCountTokensSDK(t *testing.T) {
	tests := []struct {
		name     string
		messages []anthropic.MessageParam
		wantErr  string
	}{
		{"a message", []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How many tokens is this?"))}, ""},
		{"no messages", []anthropic.MessageParam{}, "messages: Field required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newServed(t, Options{Name: "ant", Seed: 9})
			client := anthropicClient(url)
			n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
				Model: "claude-3-5-haiku-20241022", Messages: tt.messages,
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(len(s.Stats().LastBody) / 4); n.InputTokens != want || n.InputTokens == 0 {
				t.Errorf("input_tokens = %d, want %d (body bytes / 4)", n.InputTokens, want)
			}
		})
	}
}
