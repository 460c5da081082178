package mock

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/auth/credentials"
	"google.golang.org/genai"
)

// TestVertexGeminiSDK proves the Vertex wire format and token exchange by
// letting Google's SDK, on its Vertex AI backend with the service
// account's credentials, talk to the mock.
func TestVertexGeminiSDK(t *testing.T) {
	s, base := vertexServed(t, Options{Behavior: Behavior{CompletionTokens: 5}}, nil)
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{
		CredentialsJSON: testAccount().JSON("p1", TokenURI(base)),
		Scopes:          []string{vertexScope},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "p1", Location: "us-east5", Credentials: creds,
		HTTPOptions: genai.HTTPOptions{BaseURL: base},
	})
	if err != nil {
		t.Fatal(err)
	}
	contents := []*genai.Content{genai.NewContentFromText("Hello", genai.RoleUser)}
	r, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(r.Text())); n != 5 || r.UsageMetadata.CandidatesTokenCount != 5 || r.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("%d words, %+v, usage %+v", n, r.Candidates[0], r.UsageMetadata)
	}
	var words []string
	var last *genai.GenerateContentResponse
	for chunk, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, nil) {
		if err != nil {
			t.Fatal(err)
		}
		words = append(words, strings.Fields(chunk.Text())...)
		last = chunk
	}
	if len(words) != 5 || last == nil || last.UsageMetadata.CandidatesTokenCount != 5 {
		t.Errorf("streamed %q, last chunk %+v", words, last)
	}
	st := s.Stats()
	if st.TokensIssued != 1 || !strings.HasPrefix(st.LastPath, "/v1beta1/projects/p1/locations/us-east5/publishers/google/models/gemini-2.5-flash:") {
		t.Errorf("%d tokens issued, last path %s", st.TokensIssued, st.LastPath)
	}
}
