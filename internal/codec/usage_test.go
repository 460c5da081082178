package codec

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestUsageRecorded reads the usage of recorded provider answers, whole
// and streamed, in each protocol's shape: Input counts every prompt
// token, the prompt cache's reads and writes included (canon.go's Usage),
// as the request log, the token metrics and the cost need them
// (docs/protocols.md#usage-and-cache-tokens).
func TestUsageRecorded(t *testing.T) {
	tests := []struct {
		name    string
		c       Codec
		fixture string // under testdata; .sse and .txt (Bedrock frames) are streams
		want    Usage
	}{
		{"openai chat, cached", OpenAIChat, "openai/chat_text.json", Usage{Input: 1117, Output: 9, CacheRead: 1024}},
		{"openai chat stream, cached", OpenAIChat, "openai/chat_text.sse", Usage{Input: 1117, Output: 9, CacheRead: 1024}},
		{"openai completions stream", OpenAICompletions, "usage/openai-completions.sse", Usage{Input: 5, Output: 2}},
		{"openai embeddings", OpenAIEmbeddings, "usage/openai-embeddings.json", Usage{Input: 8}},
		{"openai responses, cached", OpenAIResponses, "openai/resp_text.json", Usage{Input: 1290, Output: 11, CacheRead: 1152}},
		{"openai responses stream, cached", OpenAIResponses, "openai/resp_text.sse", Usage{Input: 1290, Output: 11, CacheRead: 1152}},
		{"anthropic, cache read and write", Anthropic, "anthropic-message.json", Usage{Input: 472 + 2048 + 128, Output: 187, CacheRead: 2048, CacheWrite: 128}},
		{"anthropic stream, usage in message_start", Anthropic, "anthropic-stream.sse", Usage{Input: 472 + 2048 + 128, Output: 187, CacheRead: 2048, CacheWrite: 128}},
		{"anthropic, cache write", Anthropic, "usage/anthropic-cache-write.json", Usage{Input: 14 + 2304, Output: 9, CacheWrite: 2304}},
		{"anthropic stream, usage restated in message_delta", Anthropic, "usage/anthropic-cache-write.sse", Usage{Input: 14 + 2304, Output: 9, CacheWrite: 2304}},
		{"gemini, cached", Gemini, "gemini-response.json", Usage{Input: 1290, Output: 41 + 96, CacheRead: 1024}},
		{"gemini stream, cached", Gemini, "gemini-stream.sse", Usage{Input: 1290, Output: 41 + 96, CacheRead: 1024}},
		{"bedrock, cache read", Bedrock, "bedrock-response.json", Usage{Input: 412 + 1024, Output: 118, CacheRead: 1024}},
		{"bedrock stream, cache read", Bedrock, "bedrock-stream.txt", Usage{Input: 412 + 1024, Output: 118, CacheRead: 1024}},
		{"bedrock, cache write", Bedrock, "usage/bedrock-cache-write.json", Usage{Input: 14 + 2304, Output: 9, CacheWrite: 2304}},
		{"bedrock stream, cache write", Bedrock, "usage/bedrock-cache-write-stream.txt", Usage{Input: 14 + 2304, Output: 9, CacheWrite: 2304}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Usage
			switch {
			case strings.HasSuffix(tc.fixture, ".json"):
				got = tc.c.Usage(agFixture(t, tc.fixture))
			default:
				s := observeFixture(t, tc.c, tc.fixture)
				if !s.Finished {
					t.Error("the stream did not finish")
				}
				got = s.SoFar()
			}
			got.Reasoning = 0 // not billed apart: part of Output
			if got != tc.want {
				t.Errorf("usage %+v, want %+v", got, tc.want)
			}
		})
	}
}

// observeFixture follows a recorded stream with c's Observe: SSE, or
// Bedrock's event-stream frames one a line.
func observeFixture(t *testing.T, c Codec, name string) StreamState {
	t.Helper()
	var s StreamState
	if strings.HasSuffix(name, ".txt") {
		evs, err := brEvents(brFixtureFrames(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			c.Observe(&s, &evs[i])
		}
		return s
	}
	r := NewEventReader(bytes.NewReader(agFixture(t, name)))
	defer r.Release()
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return s
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Data) > 0 {
			c.Observe(&s, ev)
		}
	}
}
