package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// Translation at the edges of the matrix (docs/protocols.md): failover from one
// family to another within a request, the byte-for-byte passthrough within
// a family, a feature only some families can express, and count_tokens.

// TestTranslationFailoverAcrossFamilies: an Anthropic client whose
// Anthropic upstream answers 529 overloaded is served by the OpenAI
// upstream of the same pool in the same request, as one coherent answer in
// the client's protocol.
func TestTranslationFailoverAcrossFamilies(t *testing.T) {
	const model = "claude-sonnet-4-5"
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			antMock, antURL := startMock(t, "mock-anthropic", mock.Behavior{ForceStatus: 529})
			_, oaURL := startMock(t, "mock-openai", mock.Behavior{CompletionTokens: 12})
			oaTap := startUpstreamTap(t, oaURL)
			e := startGateway(t, spec{upstreams: []config.Upstream{
				upstreamAt("anthropic", config.ProviderAnthropic, antURL, 0, model),
				upstreamAt("openai", config.ProviderOpenAI, oaTap.URL, 1, model),
			}})
			sdk := newSDKTap(t, "failover")
			a := anthropicClient{e.anthropicOver(sdk.client()), sdk}.ask(t, model, convTurn{content: contentText}, stream)
			checkAnswer(t, "anthropic", contentText, 0, &a)
			h := a.wire.header
			if h.Get("X-Switchyard-Upstream") != "openai" || h.Get("X-Switchyard-Attempts") != "2" ||
				h.Get("X-Switchyard-Translated") != "anthropic->openai-chat" {
				t.Errorf("served by %q in %q attempts, translated %q; want openai in 2, anthropic->openai-chat",
					h.Get("X-Switchyard-Upstream"), h.Get("X-Switchyard-Attempts"), h.Get("X-Switchyard-Translated"))
			}
			if st := antMock.Stats(); st.Requests != 1 || st.ByStatus[529] != 1 {
				t.Errorf("the Anthropic upstream saw %d requests, statuses %v; want one answered 529", st.Requests, st.ByStatus)
			}
			reported := oaTap.wait(t, a.wire.id).reported(t)
			if a.usage != reported.seenBy("anthropic") {
				t.Errorf("usage %+v, the OpenAI upstream reported %+v", a.usage, reported)
			}
			if stream {
				checkStreamShape(t, "anthropic", a.wire.raw()) // one message_start … message_stop
			}
			logs := e.RequestLogs()
			if len(logs) != 1 || logs[0].ID != a.wire.id || logs[0].Attempts != 2 || logs[0].Upstream != "openai" || logs[0].Status != 200 ||
				logs[0].Translated != "anthropic->openai-chat" || logs[0].InputTokens != reported.in || logs[0].OutputTokens != reported.out {
				t.Errorf("request logs %+v; want one of %s: 200 from openai after 2 attempts, translated, %d in %d out",
					logs, a.wire.id, reported.in, reported.out)
			}
		})
	}
}

// TestTranslationSameFamilyPassthrough: an Anthropic request to an
// Anthropic upstream arrives byte for byte, with an unknown top-level field
// and cache_control blocks; the cache's tokens are counted as input.
func TestTranslationSameFamilyPassthrough(t *testing.T) {
	const model = "claude-sonnet-4-5"
	antMock, antURL := startMock(t, "mock-anthropic", mock.Behavior{CompletionTokens: 12})
	e := startGateway(t, spec{upstreams: []config.Upstream{upstreamAt("anthropic", config.ProviderAnthropic, antURL, 0, model)}})
	sdk := newSDKTap(t, "passthrough")
	client := e.anthropicOver(sdk.client())
	p := anthropic.MessageNewParams{
		Model: model, MaxTokens: 256,
		System: []anthropic.TextBlockParam{{Text: longSystem, CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{
			Text: textPrompt, CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}}})},
	}
	vendor := aoption.WithJSONSet("x_vendor_extension", map[string]any{"keep": []any{1, 2.5, "three"}})
	ids := map[string]usage{}
	tests := []struct {
		name      string
		stream    bool
		wantCache func(u usage) bool // the mock writes the prefix's cache first, then reads it
	}{
		{"plain writes the cache", false, func(u usage) bool { return u.cacheWrite > 0 && u.cacheRead == 0 }},
		{"stream reads it", true, func(u usage) bool { return u.cacheRead > 0 && u.cacheWrite == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sendAnthropic(t, client, p, tt.stream, vendor)
			w := sdk.take(t)
			sent, got := w.reqBody, []byte(antMock.Stats().LastBody)
			if !bytes.Contains(sent, []byte(`"x_vendor_extension":{"keep":[1,2.5,"three"]}`)) || bytes.Count(sent, []byte(`"cache_control"`)) != 2 {
				t.Fatalf("the SDK did not send the extension and two cache_control blocks: %s", sent)
			}
			if !bytes.Equal(got, sent) {
				t.Errorf("the upstream got\n%s\nthe client sent\n%s", got, sent)
			}
			if _, ok := w.header["X-Switchyard-Translated"]; ok || w.header.Get("X-Switchyard-Upstream") != "anthropic" {
				t.Errorf("headers %v: want anthropic, untranslated", w.header)
			}
			u := m.Usage
			cu := usage{in: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, out: u.OutputTokens,
				cacheRead: u.CacheReadInputTokens, cacheWrite: u.CacheCreationInputTokens}
			if !tt.wantCache(cu) || len(m.Content) != 1 || m.Content[0].Text == "" {
				t.Errorf("answer %s", m.RawJSON())
			}
			ids[w.id] = cu
		})
	}
	t.Run("request log counts the cache as input", func(t *testing.T) {
		logs := e.RequestLogs()
		for _, l := range logs {
			if u := ids[l.ID]; l.InputTokens != u.in || l.OutputTokens != u.out || l.Translated != "" {
				t.Errorf("log of %s: %d in %d out, translated %q; want %d in (cache included) %d out, untranslated",
					l.ID, l.InputTokens, l.OutputTokens, l.Translated, u.in, u.out)
			}
		}
		if len(logs) != len(ids) {
			t.Errorf("%d request logs, want %d", len(logs), len(ids))
		}
	})
}

// TestTranslationIncompatibleFeature: a chat request with n=2 cannot go to
// an Anthropic upstream. Alone in the pool it is a 400 naming n; once an
// OpenAI upstream joins (priority 1), the request goes there and the
// decision shows the Anthropic candidate filtered as incompatible: n.
func TestTranslationIncompatibleFeature(t *testing.T) {
	antMock, antURL := startMock(t, "mock-anthropic", mock.Behavior{})
	oaMock, oaURL := startMock(t, "mock-openai", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{upstreamAt("anthropic", config.ProviderAnthropic, antURL, 0, "gpt-4o")}, edit: withAdmin})
	sdk := newSDKTap(t, "compat")
	oa := openai.NewClient(option.WithBaseURL(e.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0), option.WithHTTPClient(sdk.client()))
	p := openai.ChatCompletionNewParams{Model: "gpt-4o", N: openai.Int(2), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}

	_, err := oa.Chat.Completions.New(context.Background(), p)
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 400 || !strings.Contains(oerr.Message, "incompatible: n ") {
		t.Fatalf("n=2 to a pool of one Anthropic upstream: %v; want 400 naming incompatible: n", err)
	}
	if n := antMock.Stats().Requests; n != 0 {
		t.Errorf("the incompatible upstream was sent %d requests", n)
	}

	e.mustAdmin(t, "POST", "/upstreams", `{"name":"openai","provider":"openai","base_url":"`+oaURL+`/v1","api_key":"sk-upstream-openai",`+
		`"models":["gpt-4o"],"priority":1}`, http.StatusCreated)
	if _, err := oa.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatalf("n=2 with an OpenAI upstream in the pool: %v", err)
	}
	w := sdk.take(t)
	if _, ok := w.header["X-Switchyard-Translated"]; ok || w.header.Get("X-Switchyard-Upstream") != "openai" {
		t.Errorf("headers %v: want openai, untranslated", w.header)
	}
	if n := gjson.Get(oaMock.Stats().LastBody, "n").Int(); n != 2 {
		t.Errorf("the OpenAI upstream got n=%d", n)
	}
	ds := gjson.ParseBytes(e.mustAdmin(t, "GET", "/decisions?limit=1", "", http.StatusOK).body)
	d := ds.Get("0")
	ant := d.Get(`tiers.#.candidates|@flatten|#(name=="anthropic")`)
	if d.Get("request_id").Str != w.id || d.Get("chosen").Str != "openai" || ant.Get("filter").Str != "incompatible" ||
		ant.Get("reason").Str != "incompatible: n" {
		t.Errorf("decision %s; want request %s to openai with the anthropic candidate filtered incompatible: n", d.Raw, w.id)
	}
}

// TestTranslationCountTokens: Anthropic's count_tokens is forwarded to an
// Anthropic upstream and answered with its count; for a model only other
// families serve the gateway estimates and says so.
func TestTranslationCountTokens(t *testing.T) {
	// The Anthropic upstream here is a stub that records the request and
	// counts 4242, so that the test sees the client's body arrive as sent.
	const upstreamCount = 4242
	var got struct {
		sync.Mutex
		path, key string
		body      []byte
	}
	counter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Lock()
		got.path, got.key, got.body = r.URL.Path, r.Header.Get("X-Api-Key"), b
		got.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":4242}`)
	}))
	t.Cleanup(counter.Close)
	oaMock, oaURL := startMock(t, "mock-openai", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("anthropic", config.ProviderAnthropic, counter.URL, 0, "claude-sonnet-4-5"),
		upstreamAt("openai", config.ProviderOpenAI, oaURL, 0, "gpt-4o"),
	}})
	sdk := newSDKTap(t, "count")
	client := e.anthropicOver(sdk.client())
	tests := []struct {
		name, model string
		check       func(t *testing.T, n int64, w *tapped)
	}{
		{"forwarded to an Anthropic upstream", "claude-sonnet-4-5", func(t *testing.T, n int64, w *tapped) {
			got.Lock()
			defer got.Unlock()
			if n != upstreamCount || w.header.Get("X-Switchyard-Estimated") != "" || w.header.Get("X-Switchyard-Upstream") != "anthropic" {
				t.Errorf("count %d, headers %v; want the upstream's %d, not estimated", n, w.header, upstreamCount)
			}
			if got.path != "/v1/messages/count_tokens" || got.key != "sk-upstream-anthropic" || !bytes.Equal(got.body, w.reqBody) {
				t.Errorf("the upstream got %s with key %q:\n%s\nwant the client's body:\n%s", got.path, got.key, got.body, w.reqBody)
			}
		}},
		{"estimated for a model only OpenAI serves", "gpt-4o", func(t *testing.T, n int64, w *tapped) {
			// About four bytes of text a token, plus a little per message.
			if low, high := int64(len(longSystem)+len(textPrompt))/4, int64(len(w.reqBody))/4+8; n < low || n > high ||
				w.header.Get("X-Switchyard-Estimated") != "true" {
				t.Errorf("count %d, headers %v; want an estimate within [%d, %d] marked X-Switchyard-Estimated: true", n, w.header, low, high)
			}
			if r := oaMock.Stats().Requests; r != 0 {
				t.Errorf("the OpenAI upstream was sent %d requests", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
				Model:    anthropic.Model(tt.model),
				System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String(longSystem)},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(textPrompt))},
			})
			if err != nil {
				t.Fatalf("count_tokens: %v", err)
			}
			tt.check(t, res.InputTokens, sdk.take(t))
		})
	}
}
