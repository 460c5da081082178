package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"
)

// The four client protocols of the translation matrix, each driven by its
// official SDK over an sdkTap. A client asks one turn of a conversation and
// returns the answer as the SDK assembled it, in one shape for every
// protocol, so that the matrix checks every cell alike.

// The conversation's pieces.
const (
	toolName   = "get_weather"
	toolResult = "18 degrees and sunny in Paris"
	textPrompt = "Say something friendly."
	toolPrompt = "What is the weather in Paris?"
	imgPrompt  = "What is in this picture?"
)

var (
	// longSystem is the text turn's system prompt: over 1024 tokens, so
	// that every mock family reports part of the prompt as cached.
	longSystem = strings.Repeat("You are a careful assistant who answers in short sentences. ", 80)
	// toolSchema is get_weather's parameters; the mock fills "city" with "Paris".
	toolSchema = map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string", "description": "The city"}},
		"required":   []string{"city"},
	}
	// pngBytes is a 1×1 PNG; the mock answers "I see 1 image (image/png, N bytes)."
	pngBytes, _ = base64.StdEncoding.DecodeString(
		"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
	pngBase64 = base64.StdEncoding.EncodeToString(pngBytes)
	seeImage  = fmt.Sprintf("I see 1 image (image/png, %d bytes).", len(pngBytes))
)

// content is what a cell's conversation is about.
type content string

const (
	contentText  content = "text"
	contentTool  content = "tool"
	contentImage content = "image"
)

// convTurn is one request of a conversation: its content and, for the tool
// result turn, the answer whose tool call it answers.
type convTurn struct {
	content content
	prev    *answer
}

// toolCall is a tool call as the client saw it.
type toolCall struct {
	id, name string
	args     string // a JSON object
}

// answer is one turn's answer as the client's SDK assembled it.
type answer struct {
	text  string
	calls []toolCall
	// stop is the protocol's own stop reason (finish_reason, stop_reason,
	// finishReason, the Responses status).
	stop  string
	usage usage
	wire  *tapped
	// next is the SDK's own form of the assistant turn, for the client to
	// send back with the tool result.
	next any
}

// protocolClient is one client protocol's SDK pointed at the gateway.
type protocolClient interface {
	// protocol is the protocol's name in X-Switchyard-Translated.
	protocol() string
	// ask sends tn to model, streamed or not, and returns the answer.
	ask(t *testing.T, model string, tn convTurn, stream bool) answer
}

// newProtocolClients returns the four clients of gateway e over tap.
func newProtocolClients(t *testing.T, e *env, tap *sdkTap) []protocolClient {
	oa := openai.NewClient(option.WithBaseURL(e.URL+"/v1/"), option.WithAPIKey(testKey),
		option.WithMaxRetries(0), option.WithHTTPClient(tap.client()))
	return []protocolClient{
		chatClient{oa, tap},
		responsesClient{oa, tap},
		anthropicClient{e.anthropicOver(tap.client()), tap},
		geminiClient{e.genAI(t, testKey, tap.client()), tap},
	}
}

// anthropicOver is e.anthropic over an HTTP client.
func (e *env) anthropicOver(hc *http.Client) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(e.URL),
		aoption.WithAPIKey(testKey), aoption.WithMaxRetries(0), aoption.WithHTTPClient(hc))
}

// chatClient speaks OpenAI Chat Completions.
type chatClient struct {
	c   openai.Client
	tap *sdkTap
}

func (chatClient) protocol() string { return "openai-chat" }

func (c chatClient) ask(t *testing.T, model string, tn convTurn, stream bool) answer {
	t.Helper()
	p := openai.ChatCompletionNewParams{Model: model}
	switch tn.content {
	case contentText:
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(longSystem), openai.UserMessage(textPrompt)}
	case contentImage:
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart(imgPrompt),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + pngBase64}),
		})}
	case contentTool:
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: toolName, Description: openai.String("Current weather of a city"), Parameters: toolSchema})}
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage(toolPrompt)}
		if tn.prev != nil {
			p.Messages = append(p.Messages, tn.prev.next.(openai.ChatCompletionMessageParamUnion),
				openai.ToolMessage(toolResult, tn.prev.calls[0].id))
		}
	}
	var cc openai.ChatCompletion
	if stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := c.c.Chat.Completions.NewStreaming(context.Background(), p)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			if !acc.AddChunk(s.Current()) {
				t.Fatalf("the accumulator refused chunk %s", s.Current().RawJSON())
			}
		}
		_ = s.Close()
		if err := s.Err(); err != nil {
			t.Fatalf("chat stream: %v", err)
		}
		cc = acc.ChatCompletion
	} else {
		r, err := c.c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatalf("chat completion: %v", err)
		}
		cc = *r
	}
	if len(cc.Choices) != 1 {
		t.Fatalf("%d choices in %s", len(cc.Choices), cc.RawJSON())
	}
	m := cc.Choices[0].Message
	a := answer{text: m.Content, stop: cc.Choices[0].FinishReason, wire: c.tap.take(t), next: m.ToParam(),
		usage: usage{in: cc.Usage.PromptTokens, out: cc.Usage.CompletionTokens, cacheRead: cc.Usage.PromptTokensDetails.CachedTokens}}
	for _, tc := range m.ToolCalls {
		a.calls = append(a.calls, toolCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	return a
}

// responsesClient speaks the OpenAI Responses API.
type responsesClient struct {
	c   openai.Client
	tap *sdkTap
}

func (responsesClient) protocol() string { return "openai-responses" }

func (c responsesClient) ask(t *testing.T, model string, tn convTurn, stream bool) answer {
	t.Helper()
	p := responses.ResponseNewParams{Model: model}
	var input responses.ResponseInputParam
	switch tn.content {
	case contentText:
		p.Instructions = openai.String(longSystem)
		input = append(input, responses.ResponseInputItemParamOfMessage(textPrompt, responses.EasyInputMessageRoleUser))
	case contentImage:
		input = append(input, responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			responses.ResponseInputContentParamOfInputText(imgPrompt),
			{OfInputImage: &responses.ResponseInputImageParam{Detail: responses.ResponseInputImageDetailAuto,
				ImageURL: openai.String("data:image/png;base64," + pngBase64)}},
		}, responses.EasyInputMessageRoleUser))
	case contentTool:
		p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: toolName, Parameters: toolSchema,
			Strict: openai.Bool(false), Description: openai.String("Current weather of a city")}}}
		input = append(input, responses.ResponseInputItemParamOfMessage(toolPrompt, responses.EasyInputMessageRoleUser))
		if tn.prev != nil {
			call := tn.prev.calls[0]
			out := responses.ResponseInputItemParamOfFunctionCallOutput(toolResult)
			out.OfFunctionCallOutput.CallID = openai.String(call.id)
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(call.args, call.id, call.name), out)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	var r responses.Response
	if stream {
		s := c.c.Responses.NewStreaming(context.Background(), p)
		completed := 0
		for s.Next() {
			if ev, ok := s.Current().AsAny().(responses.ResponseCompletedEvent); ok {
				r = ev.Response
				completed++
			}
		}
		_ = s.Close()
		if err := s.Err(); err != nil {
			t.Fatalf("responses stream: %v", err)
		}
		if completed != 1 {
			t.Fatalf("%d response.completed events", completed)
		}
	} else {
		got, err := c.c.Responses.New(context.Background(), p)
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		r = *got
	}
	stop := string(r.Status)
	if r.IncompleteDetails.Reason != "" {
		stop += ": " + r.IncompleteDetails.Reason
	}
	a := answer{text: r.OutputText(), stop: stop, wire: c.tap.take(t),
		usage: usage{in: r.Usage.InputTokens, out: r.Usage.OutputTokens, cacheRead: r.Usage.InputTokensDetails.CachedTokens}}
	for _, item := range r.Output {
		if item.Type == "function_call" {
			a.calls = append(a.calls, toolCall{id: item.CallID, name: item.Name, args: item.Arguments.OfString})
		}
	}
	return a
}

// anthropicClient speaks Anthropic Messages.
type anthropicClient struct {
	c   anthropic.Client
	tap *sdkTap
}

func (anthropicClient) protocol() string { return "anthropic" }

func (c anthropicClient) ask(t *testing.T, model string, tn convTurn, stream bool) answer {
	t.Helper()
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 1024}
	switch tn.content {
	case contentText:
		p.System = []anthropic.TextBlockParam{{Text: longSystem}}
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(textPrompt))}
	case contentImage:
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(imgPrompt),
			anthropic.NewImageBlockBase64("image/png", pngBase64))}
	case contentTool:
		p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: toolName, Description: anthropic.String("Current weather of a city"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: toolSchema["properties"], Required: []string{"city"}}}}}
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(toolPrompt))}
		if tn.prev != nil {
			p.Messages = append(p.Messages, tn.prev.next.(anthropic.MessageParam),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(tn.prev.calls[0].id, toolResult, false)))
		}
	}
	m := sendAnthropic(t, c.c, p, stream)
	u := m.Usage
	a := answer{stop: string(m.StopReason), wire: c.tap.take(t), next: m.ToParam(),
		usage: usage{in: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, out: u.OutputTokens,
			cacheRead: u.CacheReadInputTokens, cacheWrite: u.CacheCreationInputTokens}}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			a.text += b.Text
		case "tool_use":
			a.calls = append(a.calls, toolCall{id: b.ID, name: b.Name, args: string(b.Input)})
		}
	}
	return a
}

// sendAnthropic sends p with the Anthropic SDK and returns the message,
// accumulated from its events when streamed.
func sendAnthropic(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams, stream bool, opts ...aoption.RequestOption) anthropic.Message {
	t.Helper()
	if !stream {
		m, err := c.Messages.New(context.Background(), p, opts...)
		if err != nil {
			t.Fatalf("message: %v", err)
		}
		return *m
	}
	var m anthropic.Message
	s := c.Messages.NewStreaming(context.Background(), p, opts...)
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatalf("accumulating %s: %v", s.Current().RawJSON(), err)
		}
	}
	_ = s.Close()
	if err := s.Err(); err != nil {
		t.Fatalf("message stream: %v", err)
	}
	return m
}

// geminiClient speaks Gemini generateContent.
type geminiClient struct {
	c   *genai.Client
	tap *sdkTap
}

func (geminiClient) protocol() string { return "gemini" }

func (c geminiClient) ask(t *testing.T, model string, tn convTurn, stream bool) answer {
	t.Helper()
	cfg := &genai.GenerateContentConfig{}
	user := func(parts ...*genai.Part) *genai.Content { return genai.NewContentFromParts(parts, genai.RoleUser) }
	var contents []*genai.Content
	switch tn.content {
	case contentText:
		cfg.SystemInstruction = genai.NewContentFromText(longSystem, genai.RoleUser)
		contents = []*genai.Content{user(genai.NewPartFromText(textPrompt))}
	case contentImage:
		contents = []*genai.Content{user(genai.NewPartFromText(imgPrompt), genai.NewPartFromBytes(pngBytes, "image/png"))}
	case contentTool:
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: toolName, Description: "Current weather of a city",
			Parameters: &genai.Schema{Type: genai.TypeObject, Required: []string{"city"},
				Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString, Description: "The city"}}}}}}}
		contents = []*genai.Content{user(genai.NewPartFromText(toolPrompt))}
		if tn.prev != nil {
			result := genai.NewPartFromFunctionResponse(toolName, map[string]any{"output": toolResult})
			result.FunctionResponse.ID = tn.prev.calls[0].id
			contents = append(contents, tn.prev.next.(*genai.Content), user(result))
		}
	}
	var r *genai.GenerateContentResponse
	if stream {
		r = &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{Content: &genai.Content{Role: genai.RoleModel}}}}
		for chunk, err := range c.c.Models.GenerateContentStream(context.Background(), model, contents, cfg) {
			if err != nil {
				t.Fatalf("gemini stream: %v", err)
			}
			if len(chunk.Candidates) != 1 || chunk.Candidates[0].Content == nil && chunk.Candidates[0].FinishReason == "" {
				t.Fatalf("gemini chunk without one candidate: %+v", chunk)
			}
			cand := chunk.Candidates[0]
			if cand.Content != nil {
				for _, p := range cand.Content.Parts {
					// The API ends some streams with an empty text part;
					// the SDK's Chat leaves such parts out of the history.
					if p.Text != "" || p.FunctionCall != nil || p.InlineData != nil {
						r.Candidates[0].Content.Parts = append(r.Candidates[0].Content.Parts, p)
					}
				}
			}
			if cand.FinishReason != "" {
				r.Candidates[0].FinishReason = cand.FinishReason
			}
			if chunk.UsageMetadata != nil {
				r.UsageMetadata = chunk.UsageMetadata
			}
		}
	} else {
		var err error
		if r, err = c.c.Models.GenerateContent(context.Background(), model, contents, cfg); err != nil {
			t.Fatalf("generate content: %v", err)
		}
	}
	if len(r.Candidates) != 1 || r.Candidates[0].Content == nil || r.UsageMetadata == nil {
		t.Fatalf("gemini answer without one candidate or usage: %+v", r)
	}
	u := r.UsageMetadata
	a := answer{stop: string(r.Candidates[0].FinishReason), wire: c.tap.take(t), next: r.Candidates[0].Content,
		usage: usage{in: int64(u.PromptTokenCount), out: int64(u.CandidatesTokenCount + u.ThoughtsTokenCount),
			cacheRead: int64(u.CachedContentTokenCount)}}
	for _, p := range r.Candidates[0].Content.Parts {
		switch {
		case p.FunctionCall != nil:
			args, err := json.Marshal(p.FunctionCall.Args)
			if err != nil {
				t.Fatal(err)
			}
			a.calls = append(a.calls, toolCall{id: p.FunctionCall.ID, name: p.FunctionCall.Name, args: string(args)})
		case !p.Thought:
			a.text += p.Text
		}
	}
	return a
}
