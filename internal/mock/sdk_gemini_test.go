package mock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// These tests prove the Gemini wire format by letting Google's SDK parse it.

func geminiClient(t *testing.T, url, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url, APIVersion: "v1beta"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGeminiSDK(t *testing.T) {
	s, url := newServed(t, Options{Seed: 8, APIKey: "g-key"})
	client := geminiClient(t, url, "g-key")
	schema := func(props map[string]*genai.Schema, required ...string) *genai.Schema {
		return &genai.Schema{Type: genai.TypeObject, Properties: props, Required: required}
	}
	tools := []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
		{Name: "get_weather", Parameters: schema(map[string]*genai.Schema{
			"location": {Type: genai.TypeString},
			"unit":     {Type: genai.TypeString, Enum: []string{"celsius", "fahrenheit"}},
		}, "location", "unit")},
		{Name: "get_time", Parameters: schema(map[string]*genai.Schema{"timezone": {Type: genai.TypeString}}, "timezone")},
	}}}
	text := func(s string) []*genai.Content { return []*genai.Content{genai.NewContentFromText(s, genai.RoleUser)} }
	tests := []struct {
		name     string
		contents []*genai.Content
		config   *genai.GenerateContentConfig
		check    func(t *testing.T, r *genai.GenerateContentResponse)
	}{
		{"text", text("Hello"), nil, func(t *testing.T, r *genai.GenerateContentResponse) {
			u := r.UsageMetadata
			if n := len(strings.Fields(r.Text())); n != DefaultCompletionTokens || r.Candidates[0].FinishReason != genai.FinishReasonStop ||
				u.CandidatesTokenCount != DefaultCompletionTokens || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount || r.ModelVersion != "gemini-2.5-flash" {
				t.Errorf("%d words, response %+v usage %+v", n, r.Candidates[0], u)
			}
		}},
		{"function call", text("Weather in Paris?"), &genai.GenerateContentConfig{Tools: tools}, func(t *testing.T, r *genai.GenerateContentResponse) {
			calls := r.FunctionCalls()
			if len(calls) != 1 || calls[0].Name != "get_weather" || fmt.Sprint(calls[0].Args) != fmt.Sprint(weatherArgs) || calls[0].ID == "" {
				t.Errorf("calls = %+v", calls)
			}
		}},
		{"parallel function calls", text("Both, in parallel"), &genai.GenerateContentConfig{Tools: tools}, func(t *testing.T, r *genai.GenerateContentResponse) {
			if calls := r.FunctionCalls(); len(calls) != 2 || calls[1].Name != "get_time" || fmt.Sprint(calls[1].Args) != fmt.Sprint(timeArgs) {
				t.Errorf("calls = %+v", calls)
			}
		}},
		{"allowed function", text("Time?"), &genai.GenerateContentConfig{Tools: tools, ToolConfig: &genai.ToolConfig{
			FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"get_time"}}}},
			func(t *testing.T, r *genai.GenerateContentResponse) {
				if calls := r.FunctionCalls(); len(calls) != 1 || calls[0].Name != "get_time" {
					t.Errorf("calls = %+v", calls)
				}
			}},
		{"calling off", text("Weather?"), &genai.GenerateContentConfig{Tools: tools, ToolConfig: &genai.ToolConfig{
			FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}}},
			func(t *testing.T, r *genai.GenerateContentResponse) {
				if r.FunctionCalls() != nil || r.Text() == "" {
					t.Errorf("response = %+v", r.Candidates[0].Content)
				}
			}},
		{"function response", []*genai.Content{
			genai.NewContentFromText("Weather in Paris?", genai.RoleUser),
			genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionCall("get_weather", weatherArgs)}, genai.RoleModel),
			genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse("get_weather", map[string]any{"output": toolAnswer})}, genai.RoleUser),
		}, &genai.GenerateContentConfig{Tools: tools}, func(t *testing.T, r *genai.GenerateContentResponse) {
			if got := r.Text(); got != "The tool returned: "+toolAnswer {
				t.Errorf("text = %q", got)
			}
		}},
		{"image", []*genai.Content{genai.NewContentFromParts([]*genai.Part{genai.NewPartFromText("What is it?"),
			genai.NewPartFromBytes(onePixelPNG, "image/png")}, genai.RoleUser)}, nil,
			func(t *testing.T, r *genai.GenerateContentResponse) {
				if r.Text() != seeImage {
					t.Errorf("text = %q", r.Text())
				}
			}},
		{"thoughts", text("Think"), &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true}},
			func(t *testing.T, r *genai.GenerateContentResponse) {
				parts := r.Candidates[0].Content.Parts
				if !parts[0].Thought || parts[len(parts)-1].Thought || r.UsageMetadata.ThoughtsTokenCount != defaultReasoning ||
					r.UsageMetadata.TotalTokenCount != r.UsageMetadata.PromptTokenCount+r.UsageMetadata.CandidatesTokenCount+defaultReasoning {
					t.Errorf("parts %+v usage %+v", parts, r.UsageMetadata)
				}
			}},
		{"thinking off", text("Think"), &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr[int32](0)}},
			func(t *testing.T, r *genai.GenerateContentResponse) {
				if r.Candidates[0].Content.Parts[0].Thought || r.UsageMetadata.ThoughtsTokenCount != 0 {
					t.Errorf("parts %+v usage %+v", r.Candidates[0].Content.Parts, r.UsageMetadata)
				}
			}},
		{"thinking budget without thoughts", text("Think"), &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](512)}},
			func(t *testing.T, r *genai.GenerateContentResponse) {
				if r.Candidates[0].Content.Parts[0].Thought || r.UsageMetadata.ThoughtsTokenCount != defaultReasoning {
					t.Errorf("parts %+v usage %+v", r.Candidates[0].Content.Parts, r.UsageMetadata)
				}
			}},
		{"stop sequence", []*genai.Content{
			genai.NewContentFromText("Weather in Paris?", genai.RoleUser),
			genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionCall("get_weather", weatherArgs)}, genai.RoleModel),
			genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse("get_weather", map[string]any{"output": toolAnswer})}, genai.RoleUser),
		}, &genai.GenerateContentConfig{Tools: tools, StopSequences: []string{"Sunny"}}, func(t *testing.T, r *genai.GenerateContentResponse) {
			if r.Text() != "The tool returned: " || r.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Errorf("text %q finish %q", r.Text(), r.Candidates[0].FinishReason)
			}
		}},
		{"cached prompt", text("Hi"), &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText(longPrompt, genai.RoleUser)},
			func(t *testing.T, r *genai.GenerateContentResponse) {
				u := r.UsageMetadata
				if u.PromptTokenCount < cacheMinTokens || u.CachedContentTokenCount != int32(cachedPart(int(u.PromptTokenCount))) {
					t.Errorf("usage = %+v", u)
				}
			}},
		{"max output tokens", text("Be brief"), &genai.GenerateContentConfig{MaxOutputTokens: 2}, func(t *testing.T, r *genai.GenerateContentResponse) {
			if len(strings.Fields(r.Text())) != 2 || r.Candidates[0].FinishReason != genai.FinishReasonMaxTokens {
				t.Errorf("text %q finish %q", r.Text(), r.Candidates[0].FinishReason)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole, err := client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", tt.contents, tt.config)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, whole)
			if st := s.Stats(); st.LastPath != "/v1beta/models/gemini-2.5-flash:generateContent" || st.LastHeaders.Get("x-goog-api-key") != "g-key" {
				t.Errorf("last request %s %v", st.LastPath, st.LastHeaders)
			}
			// The stream's chunks, merged, say what the whole answer says.
			merged := &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{Content: &genai.Content{}}}}
			for chunk, err := range client.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", tt.contents, tt.config) {
				if err != nil {
					t.Fatal(err)
				}
				c := chunk.Candidates[0]
				merged.Candidates[0].Content.Parts = append(merged.Candidates[0].Content.Parts, c.Content.Parts...)
				if c.FinishReason != "" {
					merged.Candidates[0].FinishReason = c.FinishReason
				}
				merged.UsageMetadata, merged.ModelVersion = chunk.UsageMetadata, chunk.ModelVersion
			}
			tt.check(t, merged)
			if merged.Text() != whole.Text() || !reflect.DeepEqual(merged.UsageMetadata, whole.UsageMetadata) {
				t.Errorf("streamed %q %+v, plain %q %+v", merged.Text(), merged.UsageMetadata, whole.Text(), whole.UsageMetadata)
			}
		})
	}
}

func TestGeminiSDKErrors(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		key      string
		contents []*genai.Content
		code     int
		status   string
		check    func(t *testing.T, e genai.APIError)
	}{
		{name: "wrong key", opts: Options{APIKey: "right"}, key: "wrong", code: 400, status: "INVALID_ARGUMENT",
			check: func(t *testing.T, e genai.APIError) {
				if len(e.Details) == 0 || e.Details[0]["reason"] != "API_KEY_INVALID" {
					t.Errorf("details = %v", e.Details)
				}
			}},
		{name: "rate limited", opts: Options{Behavior: Behavior{ForceStatus: 429}}, code: 429, status: "RESOURCE_EXHAUSTED",
			check: func(t *testing.T, e genai.APIError) {
				for _, d := range e.Details {
					if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" && d["retryDelay"] == "1s" {
						return
					}
				}
				t.Errorf("no RetryInfo of 1s in %v", e.Details)
			}},
		{name: "overloaded", opts: Options{Behavior: Behavior{ForceStatus: 503}}, code: 503, status: "UNAVAILABLE"},
		{name: "bad role", contents: []*genai.Content{{Role: "assistant", Parts: []*genai.Part{{Text: "x"}}}}, code: 400, status: "INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newServed(t, tt.opts)
			key := tt.key
			if key == "" {
				key = "k"
			}
			contents := tt.contents
			if contents == nil {
				contents = []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}
			}
			_, err := geminiClient(t, url, key).Models.GenerateContent(context.Background(), "gemini-2.5-flash", contents, nil)
			var e genai.APIError
			if !errors.As(err, &e) || e.Code != tt.code || e.Status != tt.status {
				t.Fatalf("err = %#v, want %d %s", err, tt.code, tt.status)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

func TestGeminiSDKModelsTokensEmbeddings(t *testing.T) {
	_, url := newServed(t, Options{Seed: 3, Models: []string{"gemini-2.0-flash", "gemini-2.5-flash"}})
	client := geminiClient(t, url, "k")
	ctx := context.Background()
	m, err := client.Models.Get(ctx, "gemini-2.5-flash", nil)
	if err != nil || m.Name != "models/gemini-2.5-flash" || m.OutputTokenLimit != geminiOutputLimit {
		t.Errorf("get = %+v, %v", m, err)
	}
	page, err := client.Models.List(ctx, &genai.ListModelsConfig{})
	if err != nil || len(page.Items) != 2 || page.Items[0].Name != "models/gemini-2.0-flash" {
		t.Errorf("list = %+v, %v", page, err)
	}
	contents := []*genai.Content{genai.NewContentFromText("count me", genai.RoleUser)}
	n, err := client.Models.CountTokens(ctx, "gemini-2.5-flash", contents, nil)
	if err != nil || n.TotalTokens < 1 {
		t.Errorf("count = %+v, %v", n, err)
	}
	emb, err := client.Models.EmbedContent(ctx, "gemini-embedding-001", []*genai.Content{
		genai.NewContentFromText("alpha", genai.RoleUser), genai.NewContentFromText("beta", genai.RoleUser),
	}, &genai.EmbedContentConfig{OutputDimensionality: genai.Ptr[int32](16)})
	if err != nil || len(emb.Embeddings) != 2 || len(emb.Embeddings[0].Values) != 16 {
		t.Fatalf("embed = %+v, %v", emb, err)
	}
	if want := embedding(3, "alpha", 16); fmt.Sprint(emb.Embeddings[0].Values) != fmt.Sprint(float32s(want)) {
		t.Errorf("alpha = %v, want %v", emb.Embeddings[0].Values, want)
	}
}

func float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
