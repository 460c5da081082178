package mock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

const messagesBody = `{"model":"claude-3-5-haiku","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`

func TestForceStatus(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		method     string
		path       string
		body       string
		header     []string
		errPath    string
		errType    string
		retryAfter string
		quiet      bool // Behavior.NoRetryAfter
	}{
		{name: "openai 500", status: 500, method: "POST", path: "/v1/chat/completions", body: chatBody, errPath: "error.type", errType: "server_error"},
		{name: "openai 503", status: 503, method: "POST", path: "/v1/chat/completions", body: chatBody, errPath: "error.type", errType: "server_error"},
		{name: "openai 429", status: 429, method: "POST", path: "/v1/chat/completions", body: chatBody, errPath: "error.code", errType: "rate_limit_exceeded", retryAfter: "1"},
		{name: "openai 401", status: 401, method: "POST", path: "/v1/embeddings", body: `{"model":"e","input":"x"}`, errPath: "error.code", errType: "invalid_api_key"},
		{name: "openai 400 even for a valid body", status: 400, method: "POST", path: "/v1/responses", body: `{"model":"m","input":"x"}`, errPath: "error.type", errType: "invalid_request_error"},
		{name: "models 500", status: 500, method: "GET", path: "/v1/models", errPath: "error.type", errType: "server_error"},
		{name: "anthropic 529", status: 529, method: "POST", path: "/v1/messages", body: messagesBody, errPath: "error.type", errType: "overloaded_error"},
		{name: "anthropic 429", status: 429, method: "POST", path: "/v1/messages", body: messagesBody, errPath: "error.type", errType: "rate_limit_error", retryAfter: "1"},
		{name: "openai 429 naming no wait", status: 429, method: "POST", path: "/v1/chat/completions", body: chatBody, errPath: "error.code", errType: "rate_limit_exceeded", quiet: true},
		{name: "anthropic 429 naming no wait", status: 429, method: "POST", path: "/v1/messages", body: messagesBody, errPath: "error.type", errType: "rate_limit_error", quiet: true},
		{name: "anthropic 401", status: 401, method: "POST", path: "/v1/messages", body: messagesBody, errPath: "error.type", errType: "authentication_error"},
		{name: "anthropic 500", status: 500, method: "POST", path: "/v1/messages", body: messagesBody, errPath: "error.type", errType: "api_error"},
		{name: "anthropic models 503", status: 503, method: "GET", path: "/v1/models", header: []string{"anthropic-version", "2023-06-01"}, errPath: "error.type", errType: "api_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newServed(t, Options{Name: "forced", Behavior: Behavior{ForceStatus: tt.status, NoRetryAfter: tt.quiet}})
			for range 3 {
				res := do(t, tt.method, url+tt.path, tt.body, tt.header...)
				if res.status != tt.status {
					t.Fatalf("status = %d, want %d", res.status, tt.status)
				}
				if got := res.get(tt.errPath).String(); got != tt.errType {
					t.Errorf("%s = %q, want %q: %s", tt.errPath, got, tt.errType, res.body)
				}
				if got := res.header.Get("Retry-After"); got != tt.retryAfter {
					t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
				}
				if res.header.Get(HeaderUpstream) != "forced" {
					t.Errorf("missing %s", HeaderUpstream)
				}
			}
			if got := s.Stats().ByStatus[tt.status]; got != 3 {
				t.Errorf("by status = %v", s.Stats().ByStatus)
			}
		})
	}
}

func TestForceStatusSDK(t *testing.T) {
	_, url := newServed(t, Options{Behavior: Behavior{ForceStatus: 503}})
	oc := openAIClient(url)
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 503 || oerr.Type != "server_error" {
		t.Errorf("openai error = %v", err)
	}
	ac := anthropicClient(url)
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude-3-5-haiku", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
	})
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 503 {
		t.Errorf("anthropic error = %v", err)
	}
}

func TestErrorRateSeeded(t *testing.T) {
	const n = 1000
	run := func(seed int64, rate float64) []int {
		s := New(Options{Seed: seed, Behavior: Behavior{ErrorRate: rate, CompletionTokens: 1}})
		codes := make([]int, n)
		for i := range codes {
			rec := direct(s, http.MethodPost, "/v1/chat/completions", chatBody)
			codes[i] = rec.status
			if rec.status == 500 && rec.get("error.type").String() != "server_error" {
				t.Fatalf("500 body = %s", rec.body)
			}
		}
		return codes
	}
	count := func(codes []int) int {
		k := 0
		for _, c := range codes {
			if c == 500 {
				k++
			} else if c != 200 {
				t.Fatalf("unexpected status %d", c)
			}
		}
		return k
	}
	tests := []struct {
		rate     float64
		min, max int // tolerance: ±5 points (≥ 3.4σ for 1,000 draws at 0.3)
	}{
		{0, 0, 0},
		{0.1, 50, 150},
		{0.3, 250, 350},
		{1, n, n},
	}
	for _, tt := range tests {
		codes := run(42, tt.rate)
		if k := count(codes); k < tt.min || k > tt.max {
			t.Errorf("rate %v: %d errors in %d, want %d–%d", tt.rate, k, n, tt.min, tt.max)
		}
		if again := run(42, tt.rate); !slices.Equal(codes, again) {
			t.Errorf("rate %v: the same seed gave another sequence", tt.rate)
		}
	}
	if a, b := run(1, 0.5), run(2, 0.5); slices.Equal(a, b) {
		t.Error("different seeds gave the same sequence")
	}
	anth := New(Options{Behavior: Behavior{ErrorRate: 1}})
	if rec := direct(anth, http.MethodPost, "/v1/messages", messagesBody); rec.status != 500 || rec.get("error.type").String() != "api_error" {
		t.Errorf("anthropic: %d %s", rec.status, rec.body)
	}
}

func TestDropAfterEventsRaw(t *testing.T) {
	tests := []struct {
		name string
		path string
		body string
		drop int
	}{
		{"chat", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[]}`, 3},
		{"chat after the first event", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[]}`, 1},
		{"messages", "/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":100,"stream":true,"messages":[]}`, 4},
		{"responses", "/v1/responses", `{"model":"gpt-4o","stream":true,"input":"x"}`, 5},
		{"gemini", "/v1beta/models/g:streamGenerateContent?alt=sse&key=k", `{"contents":[{"parts":[{"text":"x"}]}]}`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newServed(t, Options{Behavior: Behavior{DropAfterEvents: tt.drop}})
			resp, err := http.Post(url+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			data, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("read error = %v, want an unexpected EOF", err)
			}
			if got := strings.Count(string(data), "data: "); got != tt.drop {
				t.Errorf("%d events before the cut, want %d", got, tt.drop)
			}
			if strings.Contains(string(data), "[DONE]") || strings.Contains(string(data), "message_stop") ||
				strings.Contains(string(data), "response.completed") {
				t.Errorf("the stream finished: %s", data)
			}
			if s.Stats().ByStatus[200] != 1 {
				t.Errorf("by status = %v", s.Stats().ByStatus)
			}
		})
	}
}

func TestDropAfterEventsSDK(t *testing.T) {
	_, url := newServed(t, Options{Behavior: Behavior{DropAfterEvents: 3, CompletionTokens: 10}})
	oc := openAIClient(url)
	stream := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	n := 0
	for stream.Next() {
		n++
	}
	if !errors.Is(stream.Err(), io.ErrUnexpectedEOF) || n != 3 {
		t.Errorf("openai: %d chunks, err %v; want 3 and an unexpected EOF", n, stream.Err())
	}
	ac := anthropicClient(url)
	astream := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-3-5-haiku", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
	})
	for astream.Next() {
	}
	if !errors.Is(astream.Err(), io.ErrUnexpectedEOF) {
		t.Errorf("anthropic: err %v, want an unexpected EOF", astream.Err())
	}
}

func TestHangUntilClientCancels(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			s := New(Options{Behavior: Behavior{Hang: true}})
			hanging := make(chan struct{}, 1)
			done := make(chan struct{}, 1)
			s.hangHook = func() { hanging <- struct{}{} }
			s.doneHook = func() { done <- struct{}{} }
			url := serve(t, s)

			ctx, cancel := context.WithCancel(context.Background())
			body := `{"model":"gpt-4o","messages":[]}`
			if stream {
				body = `{"model":"gpt-4o","stream":true,"messages":[]}`
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			<-hanging
			if st := s.Stats(); st.InFlight != 1 {
				t.Errorf("in flight = %d while hanging", st.InFlight)
			}
			select {
			case err := <-errc:
				t.Fatalf("the request returned while hanging: %v", err)
			default:
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("client error = %v, want context.Canceled", err)
			}
			<-done // the handler returns once the client is gone
			st := s.Stats()
			if st.InFlight != 0 || st.Canceled != 1 || len(st.ByStatus) != 0 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestInvalidBody(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		body   string
		stream bool
	}{
		{"chat", "/v1/chat/completions", chatBody, false},
		{"chat stream", "/v1/chat/completions", `{"model":"gpt-4o","stream":true}`, true},
		{"messages", "/v1/messages", messagesBody, false},
		{"messages stream", "/v1/messages", `{"model":"c","stream":true,"max_tokens":5}`, true},
		{"responses stream", "/v1/responses", `{"model":"gpt-4o","stream":true,"input":"x"}`, true},
		{"gemini", "/v1beta/models/g:generateContent?key=k", `{"contents":[{"parts":[{"text":"x"}]}]}`, false},
		{"gemini stream", "/v1beta/models/g:streamGenerateContent?alt=sse&key=k", `{"contents":[{"parts":[{"text":"x"}]}]}`, true},
		{"models", "/v1/models", "", false},
	}
	_, url := newServed(t, Options{Behavior: Behavior{InvalidBody: true}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := http.MethodPost
			if tt.body == "" {
				method = http.MethodGet
			}
			res := do(t, method, url+tt.path, tt.body)
			if res.status != http.StatusOK {
				t.Fatalf("status = %d", res.status)
			}
			if !tt.stream {
				if json.Valid(res.body) {
					t.Errorf("body is valid JSON: %s", res.body)
				}
				return
			}
			for _, f := range parseSSE(t, res.body) {
				if json.Valid([]byte(f.data)) {
					t.Errorf("event data is valid JSON: %s", f.data)
				}
			}
		})
	}

	t.Run("sdks reject it", func(t *testing.T) {
		oc := openAIClient(url)
		chat := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
		if _, err := oc.Chat.Completions.New(context.Background(), chat); err == nil {
			t.Error("openai chat: no error")
		}
		stream := oc.Chat.Completions.NewStreaming(context.Background(), chat)
		for stream.Next() {
		}
		if stream.Err() == nil {
			t.Error("openai chat stream: no error")
		}
		rstream := oc.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")},
		})
		for rstream.Next() {
		}
		if rstream.Err() == nil {
			t.Error("responses stream: no error")
		}
		ac := anthropicClient(url)
		msg := anthropic.MessageNewParams{Model: "c", MaxTokens: 5, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}}
		if _, err := ac.Messages.New(context.Background(), msg); err == nil {
			t.Error("anthropic: no error")
		}
		astream := ac.Messages.NewStreaming(context.Background(), msg)
		for astream.Next() {
		}
		if astream.Err() == nil {
			t.Error("anthropic stream: no error")
		}
	})
}

func TestControlAPI(t *testing.T) {
	s, url := newServed(t, Options{Name: "ctl", Behavior: Behavior{Latency: 250 * time.Millisecond, RPM: 7}})
	get := func() Behavior {
		t.Helper()
		res := do(t, http.MethodGet, url+"/_mock/behavior", "")
		if res.status != 200 || res.header.Get(HeaderUpstream) != "ctl" {
			t.Fatalf("GET behavior: %d %v", res.status, res.header)
		}
		var b Behavior
		if err := json.Unmarshal(res.body, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	res := do(t, http.MethodGet, url+"/_mock/behavior", "")
	if got := res.get("latency").String(); got != "250ms" || res.get("ttft").String() != "0s" || res.get("rpm").Int() != 7 {
		t.Errorf("GET behavior = %s", res.body)
	}

	steps := []struct {
		name   string
		method string
		body   string
		want   int
		after  Behavior
	}{
		{"patch merges", "PATCH", `{"ttft":"1.5s","error_rate":0.25}`, 200,
			Behavior{Latency: 250 * time.Millisecond, TTFT: 1500 * time.Millisecond, ErrorRate: 0.25, RPM: 7}},
		{"patch with nanoseconds", "PATCH", `{"latency":1000000}`, 200,
			Behavior{Latency: time.Millisecond, TTFT: 1500 * time.Millisecond, ErrorRate: 0.25, RPM: 7}},
		{"put replaces", "PUT", `{"tps":20,"hang":false,"drop_after_events":3,"completion_tokens":4,"invalid_body":true,"force_status":503,"tpm":100}`, 200,
			Behavior{TPS: 20, DropAfterEvents: 3, CompletionTokens: 4, InvalidBody: true, ForceStatus: 503, TPM: 100}},
		{"bad json", "PATCH", `{"tps":`, 400, Behavior{TPS: 20, DropAfterEvents: 3, CompletionTokens: 4, InvalidBody: true, ForceStatus: 503, TPM: 100}},
		{"unknown field", "PATCH", `{"latancy":"1s"}`, 400, Behavior{TPS: 20, DropAfterEvents: 3, CompletionTokens: 4, InvalidBody: true, ForceStatus: 503, TPM: 100}},
		{"bad duration", "PATCH", `{"latency":"soon"}`, 400, Behavior{TPS: 20, DropAfterEvents: 3, CompletionTokens: 4, InvalidBody: true, ForceStatus: 503, TPM: 100}},
		{"out of bounds", "PUT", `{"error_rate":1.5}`, 400, Behavior{TPS: 20, DropAfterEvents: 3, CompletionTokens: 4, InvalidBody: true, ForceStatus: 503, TPM: 100}},
		{"empty body", "PUT", ``, 400, Behavior{TPS: 20, DropAfterEvents: 3, CompletionTokens: 4, InvalidBody: true, ForceStatus: 503, TPM: 100}},
		{"put empty object", "PUT", `{}`, 200, Behavior{}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res := do(t, st.method, url+"/_mock/behavior", st.body)
			if res.status != st.want {
				t.Fatalf("status = %d, want %d: %s", res.status, st.want, res.body)
			}
			if st.want == 400 && res.get("error.message").String() == "" {
				t.Errorf("400 without a message: %s", res.body)
			}
			if got := get(); got != st.after {
				t.Errorf("behavior = %+v, want %+v", got, st.after)
			}
			if st.want == 200 && s.Behavior() != st.after {
				t.Errorf("Server.Behavior() = %+v", s.Behavior())
			}
		})
	}

	t.Run("behavior applies at once", func(t *testing.T) {
		do(t, http.MethodPatch, url+"/_mock/behavior", `{"force_status":418}`)
		if res := do(t, http.MethodPost, url+"/v1/chat/completions", chatBody); res.status != 418 {
			t.Errorf("status = %d, want 418", res.status)
		}
		do(t, http.MethodPatch, url+"/_mock/behavior", `{"force_status":0}`)
	})

	t.Run("stats and reset", func(t *testing.T) {
		s.ResetStats()
		do(t, http.MethodPost, url+"/v1/chat/completions", chatBody, "Authorization", "Bearer up-key")
		do(t, http.MethodPost, url+"/v1/chat/completions", `{bad`)
		res := do(t, http.MethodGet, url+"/_mock/stats", "")
		if res.status != 200 || res.get("requests").Int() != 2 || res.get("by_status.200").Int() != 1 ||
			res.get("by_status.400").Int() != 1 || res.get("last_body").String() != `{bad` ||
			res.get("by_endpoint.chat/completions").Int() != 2 || res.get("in_flight").Int() != 0 {
			t.Errorf("stats = %s", res.body)
		}
		if st := s.Stats(); st.LastMethod != "POST" || st.LastPath != "/v1/chat/completions" || st.MaxInFlight != 1 {
			t.Errorf("Stats() = %+v", st)
		}
		if res := do(t, http.MethodPost, url+"/_mock/reset", ""); res.status != http.StatusNoContent || res.header.Get(HeaderUpstream) != "ctl" {
			t.Errorf("reset: %d", res.status)
		}
		if st := s.Stats(); st.Requests != 0 || len(st.ByStatus) != 0 || st.LastBody != "" || st.LastHeaders != nil {
			t.Errorf("after reset: %+v", st)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			method, path string
			want         int
		}{
			{"DELETE", "/_mock/behavior", 405},
			{"POST", "/_mock/stats", 405},
			{"GET", "/_mock/reset", 405},
			{"GET", "/_mock/nope", 404},
		} {
			res := do(t, c.method, url+c.path, "")
			if res.status != c.want || res.header.Get(HeaderUpstream) != "ctl" || res.get("error.message").String() == "" {
				t.Errorf("%s %s: %d %s", c.method, c.path, res.status, res.body)
			}
		}
		if st := s.Stats(); st.Requests != 0 {
			t.Errorf("control requests were counted: %+v", st)
		}
	})
}

func TestBehaviorJSON(t *testing.T) {
	b := Behavior{
		Latency: 250 * time.Millisecond, TTFT: 2 * time.Second, TPS: 12.5, ErrorRate: 0.1, ForceStatus: 503,
		RPM: 60, TPM: 1000, Hang: true, DropAfterEvents: 4, CompletionTokens: 32, InvalidBody: true, TokenStatus: 500,
		StreamException: "throttlingException", StreamExceptionAfter: 2, NoRetryAfter: true,
		EmptyBody: true, StallAfterHeaders: true, MalformedStream: true, StreamError: 529, StreamErrorAfter: 3, OmitDone: true,
		KeepAliveFirst: true,
	}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"latency":"250ms","ttft":"2s","tps":12.5,"error_rate":0.1,"force_status":503,"rpm":60,"tpm":1000,` +
		`"hang":true,"drop_after_events":4,"completion_tokens":32,"invalid_body":true,"token_status":500,` +
		`"stream_exception":"throttlingException","stream_exception_after":2,"no_retry_after":true,` +
		`"empty_body":true,"stall_after_headers":true,"malformed_stream":true,"stream_error":529,"stream_error_after":3,"omit_done":true,"keep_alive_first":true}`
	var gotMap, wantMap map[string]any
	_ = json.Unmarshal(data, &gotMap)
	_ = json.Unmarshal([]byte(want), &wantMap)
	if len(gotMap) != len(wantMap) {
		t.Errorf("JSON = %s\nwant %s", data, want)
	}
	for k, v := range wantMap {
		if gotMap[k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, gotMap[k], v, data)
		}
	}
	var back Behavior
	if err := json.Unmarshal(data, &back); err != nil || back != b {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	// Behavior inside another struct, by value and pointer.
	type wrapper struct {
		B  Behavior  `json:"b"`
		BP *Behavior `json:"bp"`
	}
	data, _ = json.Marshal(wrapper{B: b, BP: &b})
	if !strings.Contains(string(data), `"b":{"latency":"250ms"`) || !strings.Contains(string(data), `"bp":{"latency":"250ms"`) {
		t.Errorf("nested = %s", data)
	}

	merged := Behavior{Latency: time.Second, RPM: 5}
	if err := json.Unmarshal([]byte(`{"ttft":"10ms","latency":null}`), &merged); err != nil {
		t.Fatal(err)
	}
	if merged != (Behavior{Latency: time.Second, TTFT: 10 * time.Millisecond, RPM: 5}) {
		t.Errorf("merge = %+v", merged)
	}
	for _, bad := range []string{`{"latency":"fast"}`, `{"latency":1.5}`, `{"ttft":true}`, `{"rpm":"5"}`} {
		var x Behavior
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestBehaviorValidate(t *testing.T) {
	tests := []struct {
		name  string
		b     Behavior
		field string // "" = valid
	}{
		{"zero", Behavior{}, ""},
		{"full", Behavior{Latency: time.Second, TTFT: time.Second, TPS: 10, ErrorRate: 1, ForceStatus: 599, RPM: 1, TPM: 1, DropAfterEvents: 1, CompletionTokens: 1}, ""},
		{"negative latency", Behavior{Latency: -1}, "latency"},
		{"negative ttft", Behavior{TTFT: -1}, "ttft"},
		{"negative tps", Behavior{TPS: -1}, "tps"},
		{"error rate above 1", Behavior{ErrorRate: 1.01}, "error_rate"},
		{"error rate negative", Behavior{ErrorRate: -0.1}, "error_rate"},
		{"status 200", Behavior{ForceStatus: 200}, "force_status"},
		{"status 600", Behavior{ForceStatus: 600}, "force_status"},
		{"negative rpm", Behavior{RPM: -1}, "rpm"},
		{"negative tpm", Behavior{TPM: -1}, "tpm"},
		{"negative drop", Behavior{DropAfterEvents: -1}, "drop_after_events"},
		{"too many tokens", Behavior{CompletionTokens: maxCompletionTokens + 1}, "completion_tokens"},
		{"token status 400", Behavior{TokenStatus: 400}, ""},
		{"token status 200", Behavior{TokenStatus: 200}, "token_status"},
		{"token status 600", Behavior{TokenStatus: 600}, "token_status"},
		{"stream exception", Behavior{StreamException: "modelStreamErrorException", StreamExceptionAfter: 3}, ""},
		{"unknown stream exception", Behavior{StreamException: "ThrottlingException"}, "stream_exception"},
		{"negative stream exception after", Behavior{StreamExceptionAfter: -1}, "stream_exception_after"},
		{"stream error", Behavior{StreamError: 529, StreamErrorAfter: 2}, ""},
		{"stream error 200", Behavior{StreamError: 200}, "stream_error"},
		{"stream error 600", Behavior{StreamError: 600}, "stream_error"},
		{"negative stream error after", Behavior{StreamErrorAfter: -1}, "stream_error_after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.field == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidBehavior) || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("error = %v, want one naming %s", err, tt.field)
			}
		})
	}
}

func TestUpstreamHeaderEverywhere(t *testing.T) {
	s := New(Options{Name: "everywhere", Behavior: Behavior{RPM: 1}})
	url := serve(t, s)
	reqs := []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", chatBody},              // 200
		{"POST", "/v1/chat/completions", chatBody},              // 429
		{"POST", "/v1/chat/completions", `{`},                   // 400
		{"GET", "/v1/models", ""},                               // 200
		{"GET", "/nowhere", ""},                                 // 404
		{"GET", "/_mock/stats", ""},                             // control
		{"POST", "/v1/embeddings", `{"model":"e","input":"x"}`}, // 429
	}
	for _, r := range reqs {
		res := do(t, r.method, url+r.path, r.body)
		if got := res.header.Get(HeaderUpstream); got != "everywhere" {
			t.Errorf("%s %s (%d): %s = %q", r.method, r.path, res.status, HeaderUpstream, got)
		}
	}
	if got := s.Stats().ByStatus; got[200] != 2 || got[429] != 2 || got[400] != 1 || got[404] != 1 {
		t.Errorf("by status = %v", got)
	}
}
