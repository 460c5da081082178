package mock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
)

// brFrame is one decoded AWS event-stream frame.
type brFrame struct {
	name      string // :event-type, or :exception-type
	exception bool
	data      string
	headers   eventstream.Headers
}

// bedrockFrames decodes a ConverseStream body, failing t on a bad frame.
func bedrockFrames(t testing.TB, body []byte) []brFrame {
	t.Helper()
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(body)
	var out []brFrame
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		f := brFrame{data: string(msg.Payload), headers: msg.Headers}
		if mt := msg.Headers.Get(":message-type"); mt != nil && mt.String() == "exception" {
			f.exception, f.name = true, msg.Headers.Get(":exception-type").String()
		} else {
			f.name = msg.Headers.Get(":event-type").String()
		}
		out = append(out, f)
	}
	return out
}

func bedrockStopName(s string) string {
	return map[string]string{"end_turn": "end", "tool_use": "tool", "max_tokens": "length", "stop_sequence": "stop_sequence"}[s]
}

// bedrockGotUsage reads Converse's usage: inputTokens leaves the cache's out.
func bedrockGotUsage(t *testing.T, u gjson.Result) gotUsage {
	read, write := u.Get("cacheReadInputTokens").Int(), u.Get("cacheWriteInputTokens").Int()
	g := gotUsage{in: u.Get("inputTokens").Int() + read + write, cacheRead: read, cacheWrite: write, out: u.Get("outputTokens").Int(), reasoning: -1}
	if total := u.Get("totalTokens").Int(); total != g.in+g.out {
		t.Errorf("totalTokens %d ≠ input + cache + output in %s", total, u.Raw)
	}
	return g
}

func bedrockAnswer(t *testing.T, body []byte) answer {
	r := gjson.ParseBytes(body)
	a := answer{stop: bedrockStopName(r.Get("stopReason").String()), stopSequence: r.Get("additionalModelResponseFields.stop_sequence").String()}
	for _, b := range r.Get("output.message.content").Array() {
		switch {
		case b.Get("reasoningContent").Exists():
			rt := b.Get("reasoningContent.reasoningText")
			a.thinking += rt.Get("text").String()
			if rt.Get("signature").String() != thinkingSignature(rt.Get("text").String()) {
				t.Errorf("reasoning signature %q does not sign its text", rt.Get("signature"))
			}
		case b.Get("text").Exists():
			a.text += b.Get("text").String()
		case b.Get("toolUse").Exists():
			a.calls = append(a.calls, gotCall{b.Get("toolUse.name").String(), b.Get("toolUse.input").Raw})
			if !strings.HasPrefix(b.Get("toolUse.toolUseId").String(), "tooluse_") {
				t.Errorf("toolUseId %s", b.Get("toolUse.toolUseId"))
			}
		}
	}
	a.usage = bedrockGotUsage(t, r.Get("usage"))
	return a
}

// bedrockStreamAnswer rebuilds the answer from the frames and checks the
// grammar: messageStart first, blocks in index order one at a time (a tool
// call's opened by contentBlockStart), messageStop then metadata last,
// every frame a JSON event of content type application/json.
func bedrockStreamAnswer(t *testing.T, body []byte) answer {
	frames := bedrockFrames(t, body)
	var a answer
	open, next := -1, 0
	var sig string
	for i, f := range frames {
		ev := gjson.Parse(f.data)
		if f.exception || f.headers.Get(":content-type").String() != "application/json" || !gjson.Valid(f.data) {
			t.Fatalf("frame %d is not a JSON event: %+v", i, f)
		}
		if idx := ev.Get("contentBlockIndex"); idx.Exists() && f.name != "contentBlockStop" {
			if open == -1 && idx.Int() == int64(next) {
				open = next
			}
			if idx.Int() != int64(open) {
				t.Fatalf("%s for block %d while %d is open", f.name, idx.Int(), open)
			}
		}
		switch f.name {
		case "messageStart":
			if i != 0 || ev.Get("role").String() != "assistant" {
				t.Errorf("messageStart %d: %s", i, f.data)
			}
		case "contentBlockStart":
			a.calls = append(a.calls, gotCall{name: ev.Get("start.toolUse.name").String()})
		case "contentBlockDelta":
			d := ev.Get("delta")
			switch {
			case d.Get("reasoningContent.text").Exists():
				a.thinking += d.Get("reasoningContent.text").String()
			case d.Get("reasoningContent.signature").Exists():
				sig = d.Get("reasoningContent.signature").String()
			case d.Get("text").Exists():
				a.text += d.Get("text").String()
			case d.Get("toolUse").Exists():
				a.calls[len(a.calls)-1].args += d.Get("toolUse.input").String()
			}
		case "contentBlockStop":
			if ev.Get("contentBlockIndex").Int() != int64(open) {
				t.Fatalf("contentBlockStop %s while %d is open", f.data, open)
			}
			open, next = -1, next+1
		case "messageStop":
			a.stop = bedrockStopName(ev.Get("stopReason").String())
			a.stopSequence = ev.Get("additionalModelResponseFields.stop_sequence").String()
		case "metadata":
			a.usage = bedrockGotUsage(t, ev.Get("usage"))
		}
	}
	if n := len(frames); n < 2 || frames[n-2].name != "messageStop" || frames[n-1].name != "metadata" {
		t.Errorf("the stream does not end with messageStop and metadata")
	}
	if a.thinking != "" && sig != thinkingSignature(a.thinking) {
		t.Errorf("signature delta %q does not sign the streamed thinking", sig)
	}
	return a
}

// brSigned builds a Converse request to url+path signed with SigV4 by keyID
// and secret at signing time at.
func brSigned(t testing.TB, url, path, body, keyID, secret, service string, at time.Time) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Client-Header", "  spaced   value ")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestBedrockAuth(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	s, url := newServed(t, Options{Clock: clk, AWSAccessKeyID: "AKIDMOCK", AWSSecretAccessKey: "mock-secret", APIKey: "bedrock-api-key"})
	const path = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.anthropic.claude-v1%3A0/converse"
	body := `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`
	tests := []struct {
		name     string
		req      func() *http.Request
		status   int
		errType  string
		contains string
	}{
		{"a good signature", func() *http.Request { return brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now) }, 200, "", ""},
		{"a signature 4 minutes old", func() *http.Request {
			return brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now.Add(-4*time.Minute))
		}, 200, "", ""},
		{"a wrong secret", func() *http.Request { return brSigned(t, url, path, body, "AKIDMOCK", "wrong", "bedrock", now) },
			403, "InvalidSignatureException", "does not match the signature you provided"},
		{"another key id", func() *http.Request { return brSigned(t, url, path, body, "AKIDOTHER", "mock-secret", "bedrock", now) },
			403, "UnrecognizedClientException", "security token included in the request is invalid"},
		{"a stale date", func() *http.Request {
			return brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now.Add(-6*time.Minute))
		}, 403, "InvalidSignatureException", "Signature expired: 20260501T115400Z is now earlier than 20260501T115500Z (20260501T120000Z - 5 min.)"},
		{"a date in the future", func() *http.Request {
			return brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now.Add(6*time.Minute))
		}, 403, "InvalidSignatureException", "Signature not yet current"},
		{"another service", func() *http.Request { return brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "s3", now) },
			403, "InvalidSignatureException", "scoped to correct service: 'bedrock'"},
		{"a body changed after signing", func() *http.Request {
			req := brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now)
			other := strings.Replace(body, "Hi", "Ho", 1)
			req.Body, req.ContentLength = http.NoBody, int64(len(other))
			req.Body = brReadCloser(other)
			return req
		}, 403, "InvalidSignatureException", "does not match"},
		{"a signed header changed after signing", func() *http.Request {
			req := brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now)
			req.Header.Set("X-Client-Header", "other")
			return req
		}, 403, "InvalidSignatureException", "does not match"},
		{"an unsigned header added after signing", func() *http.Request {
			req := brSigned(t, url, path, body, "AKIDMOCK", "mock-secret", "bedrock", now)
			req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			return req
		}, 200, "", ""},
		{"the Bedrock API key", func() *http.Request { return brBearer(t, url+path, body, "bedrock-api-key") }, 200, "", ""},
		{"a wrong API key", func() *http.Request { return brBearer(t, url+path, body, "nope") }, 403, "UnrecognizedClientException", ""},
		{"no credentials", func() *http.Request { return brBearer(t, url+path, body, "") }, 403, "MissingAuthenticationTokenException", "Missing Authentication Token"},
		{"a malformed signature", func() *http.Request {
			req := brBearer(t, url+path, body, "")
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDMOCK")
			return req
		}, 400, "IncompleteSignatureException", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(tt.req())
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, buf.Bytes())
			}
			if tt.status == 200 {
				return
			}
			if got := resp.Header.Get("x-amzn-ErrorType"); got != tt.errType+bedrockErrorTypeSuffix {
				t.Errorf("x-amzn-ErrorType %q, want %s", got, tt.errType)
			}
			if msg := gjson.GetBytes(buf.Bytes(), "message").String(); !strings.Contains(msg, tt.contains) {
				t.Errorf("message %q, want one containing %q", msg, tt.contains)
			}
		})
	}
	if got := s.Stats().LastPath; !strings.Contains(got, "inference-profile/us.anthropic") {
		t.Errorf("the ARN's slash is not in the path: %s", got)
	}
}

func brReadCloser(s string) *brReadCloserString { return &brReadCloserString{strings.NewReader(s)} }

type brReadCloserString struct{ *strings.Reader }

func (brReadCloserString) Close() error { return nil }

// brBearer builds a Converse request carrying key as a Bedrock API key ("" for none).
func brBearer(t testing.TB, url, body, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

func TestBedrockOpenMockAcceptsAnyCredentials(t *testing.T) {
	_, url := newServed(t, Options{})
	body := `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`
	for _, req := range []*http.Request{
		brBearer(t, url+"/model/m/converse", body, ""),
		brBearer(t, url+"/model/m/converse", body, "anything"),
		brSigned(t, url, "/model/m/converse", body, "AKID", "secret", "bedrock", time.Now()),
	} {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("x-amzn-RequestId") == "" || resp.Header.Get("Retry-After") != "" {
			t.Errorf("%s: status %d headers %v", req.Header.Get("Authorization"), resp.StatusCode, resp.Header)
		}
	}
}

func TestBedrockValidation(t *testing.T) {
	s := New(Options{})
	user := `{"role":"user","content":[{"text":"Hi"}]}`
	weather := `"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}]}`
	use := `{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{}}}]}`
	tests := []struct {
		name, body, contains string
	}{
		{"not JSON", `{`, "Malformed input request"},
		{"no messages", `{"messages":[]}`, "must start with a user message"},
		{"assistant first", `{"messages":[{"role":"assistant","content":[{"text":"Hi"}]}]}`, "must start with a user message"},
		{"roles do not alternate", `{"messages":[` + user + `,` + user + `]}`, "must alternate between user and assistant"},
		{"empty content", `{"messages":[{"role":"user","content":[]}]}`, "content field in the Message object at messages.0 is empty"},
		{"blank text", `{"messages":[{"role":"user","content":[{"text":" \n"}]}]}`, "ContentBlock object at messages.0.content.0 is blank"},
		{"image format", `{"messages":[{"role":"user","content":[{"image":{"format":"bmp","source":{"bytes":"AAAA"}}}]}]}`, "enum value set: [png, jpeg, gif, webp]"},
		{"image bytes", `{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"%%%"}}}]}]}`, "is not valid base64"},
		{"tool blocks without toolConfig", `{"messages":[` + user + `,` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"x"}]}}]}]}`,
			"toolConfig field must be defined"},
		{"a result that answers nothing", `{"messages":[` + user + `,` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_2","content":[{"text":"x"}]}}]}],` + weather + `}`,
			"toolUseId tooluse_2 that matches no toolUse"},
		{"a use left unanswered", `{"messages":[` + user + `,` + use + `,` + user + `],` + weather + `}`, "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_1"},
		{"a blank tool result", `{"messages":[` + user + `,` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":""}]}}]}],` + weather + `}`,
			"ToolResultContentBlock object at messages.2.content.0.toolResult.content.0 is blank"},
		{"a tool name", `{"messages":[` + user + `],"toolConfig":{"tools":[{"toolSpec":{"name":"get weather","inputSchema":{"json":{}}}}]}}`, "toolSpec.name"},
		{"a tool schema", `{"messages":[` + user + `],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{}}}]}}`, "not a valid JSON Schema"},
		{"a tool choice naming no tool", `{"messages":[` + user + `],"toolConfig":{"tools":[],"toolChoice":{"tool":{"name":"f"}}}}`, "not one of toolConfig.tools"},
		{"max tokens", `{"messages":[` + user + `],"inferenceConfig":{"maxTokens":0}}`, "inferenceConfig.maxTokens"},
		{"temperature", `{"messages":[` + user + `],"inferenceConfig":{"temperature":1.5}}`, "inferenceConfig.temperature"},
		{"thinking budget", `{"messages":[` + user + `],"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":100}}}`, "greater than or equal to 1024"},
		{"thinking above max tokens", `{"messages":[` + user + `],"inferenceConfig":{"maxTokens":2000},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2000}}}`,
			"`max_tokens` must be greater than `thinking.budget_tokens`"},
		{"thinking with a temperature", `{"messages":[` + user + `],"inferenceConfig":{"temperature":0.5},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`,
			"`temperature` may only be set to 1"},
		{"thinking with a forced tool", `{"messages":[` + user + `],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}],"toolChoice":{"any":{}}},` +
			`"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`, "Thinking may not be enabled when tool_choice forces tool use"},
		{"thinking, a tool turn without it", `{"messages":[` + user + `,` + use + `,{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"x"}]}}]}],` + weather +
			`,"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`, "must start with a thinking block"},
		{"a forged reasoning signature", `{"messages":[` + user + `,{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"t","signature":"forged"}}},{"text":"a"}]},` + user + `]}`,
			"Invalid `signature` in `thinking` block"},
		{"five cache points", `{"messages":[{"role":"user","content":[{"text":"a"},{"cachePoint":{"type":"default"}},{"text":"b"},{"cachePoint":{"type":"default"}},{"text":"c"},{"cachePoint":{"type":"default"}},{"text":"d"},{"cachePoint":{"type":"default"}},{"text":"e"},{"cachePoint":{"type":"default"}}]}]}`,
			"exceeds the maximum of 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := direct(s, http.MethodPost, "/model/anthropic.claude-3-haiku/converse", tt.body)
			if res.status != http.StatusBadRequest || res.header.Get("x-amzn-ErrorType") != "ValidationException"+bedrockErrorTypeSuffix {
				t.Fatalf("status %d type %q: %s", res.status, res.header.Get("x-amzn-ErrorType"), res.body)
			}
			if msg := res.get("message").String(); !strings.Contains(msg, tt.contains) {
				t.Errorf("message %q, want one containing %q", msg, tt.contains)
			}
		})
	}
}

// TestBedrockCachePoints: the first request of a cachePoint prefix writes
// the cache, the next reads it, as Anthropic's cache_control does.
func TestBedrockCachePoints(t *testing.T) {
	s := New(Options{})
	body := `{"system":[{"text":"` + strings.Repeat("You are careful. ", 60) + `"},{"cachePoint":{"type":"default"}}],` +
		`"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`
	first := direct(s, http.MethodPost, "/model/m/converse", body)
	second := direct(s, http.MethodPost, "/model/m/converse", body)
	w, r := first.get("usage.cacheWriteInputTokens").Int(), second.get("usage.cacheReadInputTokens").Int()
	if w == 0 || r != w || first.get("usage.cacheReadInputTokens").Exists() || second.get("usage.cacheWriteInputTokens").Exists() {
		t.Errorf("first usage %s, second %s", first.get("usage").Raw, second.get("usage").Raw)
	}
}

func TestBedrockFaults(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`
	tests := []struct {
		name    string
		b       Behavior
		calls   int // requests sent; the last is checked
		status  int
		errType string
		message string
	}{
		{"forced throttling", Behavior{ForceStatus: 429}, 1, 429, "ThrottlingException", "Too many requests, please wait before trying again."},
		{"forced unavailability", Behavior{ForceStatus: 503}, 1, 503, "ServiceUnavailableException", "Bedrock is unable to process your request."},
		{"forced model error", Behavior{ForceStatus: 424}, 1, 424, "ModelErrorException", ""},
		{"server errors", Behavior{ErrorRate: 1}, 1, 500, "InternalServerException", "The system encountered an unexpected error"},
		{"its own RPM", Behavior{RPM: 1}, 2, 429, "ThrottlingException", "Too many requests, please wait before trying again."},
		{"its own TPM", Behavior{TPM: 20}, 1, 429, "ThrottlingException", "Too many tokens, please wait before trying again."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Behavior: tt.b})
			var res result
			for range tt.calls {
				res = direct(s, http.MethodPost, "/model/m/converse", body)
			}
			if res.status != tt.status || res.header.Get("x-amzn-ErrorType") != tt.errType+bedrockErrorTypeSuffix || res.header.Get("Retry-After") != "" {
				t.Fatalf("status %d headers %v", res.status, res.header)
			}
			if msg := res.get("message").String(); !strings.HasPrefix(msg, tt.message) || len(res.get("@keys").Array()) > 1 {
				t.Errorf("body %s, want a message starting %q", res.body, tt.message)
			}
		})
	}
}

func TestBedrockStreamException(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`
	tests := []struct {
		name   string
		b      Behavior
		events int // frames before the exception; -1 for none
	}{
		{"first", Behavior{StreamException: "throttlingException"}, 0},
		{"after the message start and a delta", Behavior{StreamException: "modelStreamErrorException", StreamExceptionAfter: 2}, 2},
		{"after the end: none", Behavior{StreamException: "internalServerException", StreamExceptionAfter: 1000}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Behavior: tt.b})
			rec := serveDirect(s, http.MethodPost, "/model/m/converse-stream", body)
			if rec.Code != 200 || rec.Header().Get("Content-Type") != bedrockStreamContentType {
				t.Fatalf("status %d, %v", rec.Code, rec.Header())
			}
			frames := bedrockFrames(t, rec.Body.Bytes())
			last := frames[len(frames)-1]
			if tt.events < 0 {
				if last.exception || last.name != "metadata" {
					t.Errorf("last frame %+v", last)
				}
				return
			}
			if len(frames) != tt.events+1 || !last.exception || last.name != tt.b.StreamException ||
				!gjson.Valid(last.data) || !gjson.Get(last.data, "message").Exists() {
				t.Errorf("%d frames, last %+v", len(frames), last)
			}
		})
	}
}

func TestBedrockRoutes(t *testing.T) {
	s := New(Options{})
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse", 200},
		{http.MethodPost, "/model/m/converse-stream", 200},
		{http.MethodPost, "/model/m/invoke", 404},
		{http.MethodPost, "/model/converse", 404},
		{http.MethodGet, "/model/m/converse", 405},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := direct(s, tt.method, tt.path, `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`)
			if res.status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.status, tt.status, res.body)
			}
			if tt.status != 200 && (!res.get("message").Exists() || res.header.Get("x-amzn-ErrorType") == "") {
				t.Errorf("error not in Bedrock's shape: %v %s", res.header, res.body)
			}
		})
	}
	if st := s.Stats(); st.ByEndpoint["converse"] != 2 || st.ByEndpoint["converse-stream"] != 1 {
		t.Errorf("by endpoint %v", st.ByEndpoint)
	}
}

func TestBedrockInvalidStream(t *testing.T) {
	s := New(Options{Behavior: Behavior{InvalidBody: true}})
	rec := serveDirect(s, http.MethodPost, "/model/m/converse-stream", `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`)
	frames := bedrockFrames(t, rec.Body.Bytes())
	if len(frames) != 1 || gjson.Valid(frames[0].data) {
		t.Errorf("frames %+v", frames)
	}
}
