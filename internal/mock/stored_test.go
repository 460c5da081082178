package mock

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// respBody is a Responses request, continuing prev when it is not "".
func respBody(prev string, extra string) string {
	b := `{"model":"gpt-4o","input":"hello"` + extra
	if prev != "" {
		b += `,"previous_response_id":"` + prev + `"`
	}
	return b + "}"
}

// TestResponseIDsUniquePerMock: two mocks of the same name and seed (two
// accounts) never issue the same ids, and one mock never twice.
func TestResponseIDsUniquePerMock(t *testing.T) {
	_, a := newServed(t, Options{Name: "acct", Seed: 7})
	_, b := newServed(t, Options{Name: "acct", Seed: 7})
	seen := map[string]string{}
	for i := range 20 {
		for name, url := range map[string]string{"a": a, "b": b} {
			res := do(t, http.MethodPost, url+"/v1/responses", respBody("", ""))
			id := res.get("id").String()
			if res.status != http.StatusOK || !strings.HasPrefix(id, "resp_") {
				t.Fatalf("request %d to %s: %d, id %q: %s", i, name, res.status, id, res.body)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("id %s issued by %s and %s", id, other, name)
			}
			seen[id] = name
		}
	}
}

// TestPreviousResponseNotFound: a Responses request continuing a response
// this mock did not issue gets OpenAI's 404, plain or streamed; one it
// issued (plain or streamed) is answered.
func TestPreviousResponseNotFound(t *testing.T) {
	_, url := newServed(t, Options{Name: "a"})
	_, other := newServed(t, Options{Name: "b"})
	own := do(t, http.MethodPost, url+"/v1/responses", respBody("", "")).get("id").String()
	foreign := do(t, http.MethodPost, other+"/v1/responses", respBody("", "")).get("id").String()
	streamed := do(t, http.MethodPost, url+"/v1/responses", respBody("", `,"stream":true`))
	i := strings.Index(string(streamed.body), `"id":"resp_`)
	if i < 0 {
		t.Fatalf("no response id in the stream: %s", streamed.body)
	}
	ownStreamed := strings.SplitN(string(streamed.body[i+len(`"id":"`):]), `"`, 2)[0]
	tests := []struct {
		name, prev, extra string
		want              int
	}{
		{"own", own, "", http.StatusOK},
		{"own, streamed", own, `,"stream":true`, http.StatusOK},
		{"own streamed one", ownStreamed, "", http.StatusOK},
		{"another mock's", foreign, "", http.StatusNotFound},
		{"another mock's, streamed", foreign, `,"stream":true`, http.StatusNotFound},
		{"invented", "resp_0123456789abcdef", "", http.StatusNotFound},
		{"none", "", "", http.StatusOK},
		{"null", "", `,"previous_response_id":null`, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, http.MethodPost, url+"/v1/responses", respBody(tt.prev, tt.extra))
			if res.status != tt.want {
				t.Fatalf("status %d, want %d: %s", res.status, tt.want, res.body)
			}
			if tt.want != http.StatusNotFound {
				return
			}
			want := `{"error":{"code":"previous_response_not_found","message":"Previous response with id '` + tt.prev +
				`' not found.","param":"previous_response_id","type":"invalid_request_error"}}`
			if got := strings.TrimSpace(string(res.body)); got != want {
				t.Errorf("body %s, want %s", got, want)
			}
		})
	}
}

// TestPreviousResponseSDK: with the official SDK, a chain of responses on
// one mock goes on; its id sent to another mock is a 404 the SDK reports
// with OpenAI's code.
func TestPreviousResponseSDK(t *testing.T) {
	_, a := newServed(t, Options{Name: "a"})
	_, b := newServed(t, Options{Name: "b"})
	ctx := context.Background()
	ca, cb := openAIClient(a), openAIClient(b)
	params := func(prev string) responses.ResponseNewParams {
		p := responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		return p
	}
	prev := ""
	for turn := range 3 {
		r, err := ca.Responses.New(ctx, params(prev))
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if r.PreviousResponseID != prev || r.ID == prev {
			t.Fatalf("turn %d: id %q previous %q, want a new id continuing %q", turn, r.ID, r.PreviousResponseID, prev)
		}
		prev = r.ID
	}
	_, err := cb.Responses.New(ctx, params(prev))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "previous_response_not_found" || apiErr.Param != "previous_response_id" {
		t.Fatalf("another account continuing %s: %v, want 404 previous_response_not_found", prev, err)
	}
}

// TestResponseConversation: a response in a conversation names it, given
// as an id or as an object.
func TestResponseConversation(t *testing.T) {
	_, url := newServed(t, Options{})
	tests := []struct{ name, extra, want string }{
		{"id", `,"conversation":"conv_1"`, "conv_1"},
		{"object", `,"conversation":{"id":"conv_2"}`, "conv_2"},
		{"none", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stream := range []string{"", `,"stream":true`} {
				res := do(t, http.MethodPost, url+"/v1/responses", respBody("", tt.extra+stream))
				got := res.get("conversation.id").String()
				if stream != "" {
					got = ""
					if i := strings.Index(string(res.body), `"conversation":{"id":"`); i >= 0 {
						got = strings.SplitN(string(res.body[i+len(`"conversation":{"id":"`):]), `"`, 2)[0]
					}
				}
				if res.status != http.StatusOK || got != tt.want {
					t.Errorf("stream %v: status %d, conversation %q, want %q", stream != "", res.status, got, tt.want)
				}
			}
		})
	}
}
