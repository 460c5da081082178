package codec

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"switchyard/internal/mock"
)

// TestOpenAIAgainstMockUpstream sends translated requests (EncodeRequest)
// to the mock upstream, which validates them as OpenAI does, and reads its
// answers back (DecodeResponse and the stream decoder), for Chat and
// Responses, plain and streamed: a tool call, parallel calls, the turn
// that answers them, an image, and reasoning.
func TestOpenAIAgainstMockUpstream(t *testing.T) {
	srv := httptest.NewServer(mock.New(mock.Options{Seed: 1}))
	defer srv.Close()
	weather := Tool{Name: "get_weather", Description: "Weather of a city", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	clock := Tool{Name: "get_time", Schema: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}}}`)}
	user := func(text string) Message { return Message{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: text}}} }
	tests := []struct {
		name  string
		req   Request
		model string // default gpt-4o
		check func(t *testing.T, r *Response)
	}{
		{
			name: "one tool call",
			req:  Request{System: []Part{{Kind: PartText, Text: "Be brief."}}, Messages: []Message{user("Weather in Paris?")}, Tools: []Tool{weather, clock}, MaxTokens: 200},
			check: func(t *testing.T, r *Response) {
				if r.StopReason != StopToolUse || countKind(r.Parts, PartToolCall) != 1 || r.Parts[len(r.Parts)-1].Name != "get_weather" {
					t.Fatalf("want one get_weather call, got %+v", r)
				}
			},
		},
		{
			name: "parallel calls",
			req:  Request{Messages: []Message{user("Weather and time in Paris, in parallel")}, Tools: []Tool{weather, clock}},
			check: func(t *testing.T, r *Response) {
				if r.StopReason != StopToolUse || countKind(r.Parts, PartToolCall) != 2 {
					t.Fatalf("want two calls, got %+v", r)
				}
			},
		},
		{
			name: "the turn that answers a call",
			req: Request{Tools: []Tool{weather}, Messages: []Message{
				user("Weather in Paris?"),
				{Role: RoleAssistant, Parts: []Part{{Kind: PartThinking, Text: "dropped"}, {Kind: PartToolCall, ID: "toolu_01", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
				{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ID: "toolu_01", Content: []Part{{Kind: PartText, Text: "18C and sunny"}}}}},
			}},
			check: func(t *testing.T, r *Response) {
				if r.StopReason != StopEnd || !strings.Contains(joinText(r.Parts, ""), "18C and sunny") {
					t.Fatalf("want the tool's result echoed, got %+v", r)
				}
			},
		},
		{
			name: "an image",
			req: Request{Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "What is this?"},
				{Kind: PartImage, MediaType: "image/png", Data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}}}},
			check: func(t *testing.T, r *Response) {
				if !strings.HasPrefix(joinText(r.Parts, ""), "I see 1 image (image/png") {
					t.Fatalf("the mock did not see the image: %+v", r)
				}
			},
		},
		{
			name:  "reasoning from a thinking budget",
			req:   Request{Messages: []Message{user("Think, then say hi.")}, Thinking: &Thinking{BudgetTokens: 4000}, MaxTokens: 500},
			model: "o4-mini", // the mock reasons only for reasoning models
			check: func(t *testing.T, r *Response) {
				if r.Usage.Reasoning == 0 || r.Usage.Output < r.Usage.Reasoning {
					t.Fatalf("want reasoning tokens in the usage, got %+v", r.Usage)
				}
			},
		},
	}
	for _, up := range []Translator{OpenAIChat.(Translator), OpenAIResponses.(Translator)} {
		for _, tt := range tests {
			t.Run(up.Name()+"/"+tt.name, func(t *testing.T) {
				req, model := tt.req, tt.model
				if model == "" {
					model = "gpt-4o"
				}
				whole := callMock(t, srv.URL, up, &req, model)
				tt.check(t, whole)
				req.Stream = true
				streamed := callMock(t, srv.URL, up, &req, model)
				tt.check(t, streamed)
				streamed.ID, streamed.Created = whole.ID, whole.Created
				for i := range streamed.Parts { // the mock numbers each answer's call ids
					if i < len(whole.Parts) && streamed.Parts[i].Kind == PartToolCall {
						streamed.Parts[i].ID = whole.Parts[i].ID
					}
				}
				oaiSameValue(t, "streamed answer", streamed, whole)
			})
		}
	}
}

// callMock encodes r with up, posts it to the mock, and decodes the answer
// (a stream when r.Stream), checking the canonical sequence.
func callMock(t *testing.T, base string, up Translator, r *Request, model string) *Response {
	t.Helper()
	body, err := up.EncodeRequest(r, model, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+"/v1/"+up.Op(r.Stream), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the mock refused %s: %d %+v", body, res.StatusCode, up.DecodeError(res.StatusCode, answer))
	}
	if !r.Stream {
		resp, err := up.DecodeResponse(answer)
		if err != nil {
			t.Fatalf("DecodeResponse: %v\n%s", err, answer)
		}
		return resp
	}
	dec := up.NewStreamDecoder()
	chunks, err := oaiDecodeSSE(dec, answer)
	if err != nil {
		t.Fatalf("decoding the stream: %v\n%s", err, answer)
	}
	if err := oaiCheckChunks(chunks, true); err != nil || !dec.Done() {
		t.Fatalf("canonical sequence: %v (done %v)\n%s", err, dec.Done(), answer)
	}
	return oaiCollect(chunks)
}

// countKind counts the parts of kind k.
func countKind(parts []Part, k PartKind) int {
	n := 0
	for i := range parts {
		if parts[i].Kind == k {
			n++
		}
	}
	return n
}
