package gateway_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// bedrockAnswer is the ids one Bedrock-served answer carries, and the
// request id the gateway gave it.
type bedrockAnswer struct {
	id, item, requestID string
}

// TestBedrockAnswerIDs: Converse answers carry no id, so the gateway mints
// one per answer from the request's id (docs/protocols.md#answer-ids): two
// answers, whole or streamed, to OpenAI Chat, Anthropic and Responses
// clients have distinct ids of their protocol's shape, and a Responses
// answer's output item is named after its response.
func TestBedrockAnswerIDs(t *testing.T) {
	_, url := startBedrockMock(t, "bedrock-a", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{bedrockUpstreamAt("bedrock-a", url, bedrockSecret, 0)}})
	ctx := context.Background()
	const prompt = "Say something about trains."
	clients := []struct {
		name   string
		prefix string // the id's prefix
		ask    func(t *testing.T, stream bool) bedrockAnswer
	}{
		{"openai-chat", "chatcmpl-", func(t *testing.T, stream bool) bedrockAnswer {
			c := e.openAI(testKey)
			var raw *http.Response
			if !stream {
				r, err := c.Chat.Completions.New(ctx, chatParams(bedrockModel, prompt), option.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				return bedrockAnswer{id: r.ID, requestID: raw.Header.Get("X-Request-Id")}
			}
			s := c.Chat.Completions.NewStreaming(ctx, chatParams(bedrockModel, prompt), option.WithResponseInto(&raw))
			ids := map[string]bool{}
			for s.Next() {
				ids[s.Current().ID] = true
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if len(ids) != 1 {
				t.Errorf("the stream's chunks carry ids %v, want one", ids)
			}
			var a bedrockAnswer
			for id := range ids {
				a.id = id
			}
			a.requestID = raw.Header.Get("X-Request-Id")
			return a
		}},
		{"anthropic", "msg_", func(t *testing.T, stream bool) bedrockAnswer {
			c := e.anthropic(testKey)
			params := anthropic.MessageNewParams{Model: bedrockModel, MaxTokens: 256,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
			var raw *http.Response
			if !stream {
				r, err := c.Messages.New(ctx, params, aoption.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				return bedrockAnswer{id: r.ID, requestID: raw.Header.Get("X-Request-Id")}
			}
			s := c.Messages.NewStreaming(ctx, params, aoption.WithResponseInto(&raw))
			var msg anthropic.Message
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return bedrockAnswer{id: msg.ID, requestID: raw.Header.Get("X-Request-Id")}
		}},
		{"openai-responses", "resp_", func(t *testing.T, stream bool) bedrockAnswer {
			c := e.openAI(testKey)
			p := responses.ResponseNewParams{Model: bedrockModel,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
			var raw *http.Response
			if !stream {
				r, err := c.Responses.New(ctx, p, option.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Output) != 1 {
					t.Fatalf("output %+v, want one message", r.Output)
				}
				return bedrockAnswer{id: r.ID, item: r.Output[0].ID, requestID: raw.Header.Get("X-Request-Id")}
			}
			s := c.Responses.NewStreaming(ctx, p, option.WithResponseInto(&raw))
			var a, created bedrockAnswer
			for s.Next() {
				switch ev := s.Current(); ev.Type {
				case "response.created":
					created.id = ev.Response.ID
				case "response.output_item.added":
					created.item = ev.Item.ID
				case "response.completed":
					a.id = ev.Response.ID
					if len(ev.Response.Output) == 1 {
						a.item = ev.Response.Output[0].ID
					}
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if created.id != a.id || created.item != a.item {
				t.Errorf("the stream began as %+v and completed as %+v", created, a)
			}
			a.requestID = raw.Header.Get("X-Request-Id")
			return a
		}},
	}
	seen := map[string]string{} // id → the subtest that got it
	for _, c := range clients {
		for _, stream := range []bool{false, true} {
			name := c.name + "/plain"
			if stream {
				name = c.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				shape := regexp.MustCompile(`^` + regexp.QuoteMeta(c.prefix) + `[0-9a-f]{32}$`)
				for i := range 2 {
					a := c.ask(t, stream)
					if !shape.MatchString(a.id) {
						t.Errorf("answer %d: id %q, want %s and 32 hex digits", i, a.id, c.prefix)
					}
					if stem := strings.TrimPrefix(a.requestID, "req_"); !strings.HasSuffix(a.id, stem) {
						t.Errorf("answer %d: id %q is not made from request id %q", i, a.id, a.requestID)
					}
					if c.prefix == "resp_" {
						if want := "msg_" + strings.TrimPrefix(a.id, "resp_") + "_0"; a.item != want {
							t.Errorf("answer %d: output item %q, want %q", i, a.item, want)
						}
					}
					if prev, dup := seen[a.id]; dup {
						t.Errorf("answer %d: id %q was already given to %s", i, a.id, prev)
					}
					seen[a.id] = name
				}
			})
		}
	}
}
