package gateway_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// The pre-commit failure matrix (docs/reference.md#commit-and-failover): before
// the first byte reaches the client every failure fails over, and after it a
// broken stream stays on its upstream and ends with the client protocol's error
// event. Rows are failure kinds,
// columns client protocols, each against upstreams of its own family (a
// passthrough) and one translated. A cell is a model of its own, served by
// a failing upstream at priority 0 and a healthy one at priority 1, both
// mocks of the column's provider; the client is the protocol's official
// SDK. The OpenAI-only fault tests (e2e_faults_test.go,
// e2e_failover_test.go) go deeper into single faults (DNS, TLS, the fake
// clock, the alone-502); this matrix runs each kind through every
// protocol.

// precommitStall is the first_byte_timeout of the stall rows' routes: the
// real clock, kept short so that the test stays fast, and long enough for
// the healthy upstream's first event on a loaded machine.
const precommitStall = 1500 * time.Millisecond

// precommitBound is every cell's route timeout: a deadline for a broken
// gateway, not a delay.
const precommitBound = 10 * time.Second

// precommitRow is one failure kind.
type precommitRow struct {
	name, slug string
	// json and stream make the failing upstream fail the plain and the
	// streamed request; nil when the failure does not apply to the mode.
	json, stream *mock.Behavior
	refused      bool // the failing upstream is a port nothing listens on
	stall        bool // the route's first_byte_timeout is precommitStall
	// afterCommit: the failure comes after the first event, so the stream
	// stays on the failing upstream and ends with an error event: the
	// gateway's for a cut, the upstream's own when upstreamError.
	afterCommit, upstreamError bool
}

// both applies b to the plain and the streamed request.
func both(b mock.Behavior) (*mock.Behavior, *mock.Behavior) { return &b, &b }

func behaviorRow(name, slug string, b mock.Behavior) precommitRow {
	r := precommitRow{name: name, slug: slug}
	r.json, r.stream = both(b)
	return r
}

func streamRow(name, slug string, b mock.Behavior) precommitRow {
	return precommitRow{name: name, slug: slug, stream: &b}
}

var precommitRows = func() []precommitRow {
	refused := precommitRow{name: "connection refused", slug: "refused", refused: true}
	refused.json, refused.stream = both(mock.Behavior{})
	stall := precommitRow{name: "stall before first byte", slug: "stall", stall: true,
		json: &mock.Behavior{Hang: true}, stream: &mock.Behavior{StallAfterHeaders: true}}
	cut := streamRow("cut after commit", "cut", mock.Behavior{DropAfterEvents: 2})
	cut.afterCommit = true
	midError := streamRow("error event after commit", "mid-error", mock.Behavior{StreamError: http.StatusInternalServerError, StreamErrorAfter: 2})
	midError.afterCommit, midError.upstreamError = true, true
	return []precommitRow{
		refused,
		behaviorRow("500", "status-500", mock.Behavior{ForceStatus: http.StatusInternalServerError}),
		behaviorRow("503", "status-503", mock.Behavior{ForceStatus: http.StatusServiceUnavailable}),
		behaviorRow("529 overloaded", "status-529", mock.Behavior{ForceStatus: 529}),
		behaviorRow("429", "status-429", mock.Behavior{ForceStatus: http.StatusTooManyRequests}),
		behaviorRow("401", "status-401", mock.Behavior{ForceStatus: http.StatusUnauthorized}),
		behaviorRow("403", "status-403", mock.Behavior{ForceStatus: http.StatusForbidden}),
		behaviorRow("200 empty body", "empty", mock.Behavior{EmptyBody: true}),
		behaviorRow("200 body not JSON", "not-json", mock.Behavior{InvalidBody: true}),
		streamRow("first event error", "first-error", mock.Behavior{StreamError: 529}),
		streamRow("first event rate-limit error", "first-429", mock.Behavior{StreamError: http.StatusTooManyRequests}),
		streamRow("first line not SSE", "not-sse", mock.Behavior{MalformedStream: true}),
		// An SSE comment is not a first byte: the cut after it fails over.
		streamRow("keep-alive comment then cut", "comment-cut", mock.Behavior{KeepAliveFirst: true, DropAfterEvents: 1}),
		stall,
		cut,
		midError,
	}
}()

// precommitColumn is one client protocol against one upstream provider.
type precommitColumn struct {
	name     string
	client   string // the client's protocol (protocolClient.protocol)
	provider string // both upstreams'
	// translated is the X-Switchyard-Translated every answer carries; ""
	// for a passthrough, which carries none.
	translated string
}

var precommitColumns = []precommitColumn{
	{"openai-chat", "openai-chat", config.ProviderOpenAI, ""},
	{"openai-responses", "openai-responses", config.ProviderOpenAI, ""},
	{"anthropic", "anthropic", config.ProviderAnthropic, ""},
	{"gemini", "gemini", provider.NameGemini, ""},
	{"anthropic to openai-chat", "anthropic", config.ProviderOpenAI, "anthropic->openai-chat"},
}

// precommitCell is one row in one mode of a column, with its upstreams.
type precommitCell struct {
	row               precommitRow
	stream            bool
	name, model       string
	bad, good         *mock.Server // bad is nil for a refused connection
	badName, goodName string
}

func TestPreCommitFailureMatrix(t *testing.T) {
	for _, col := range precommitColumns {
		t.Run(col.name, func(t *testing.T) {
			t.Parallel()
			cells, e := startPrecommitColumn(t, col)
			for _, c := range cells {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					if c.row.afterCommit {
						col.checkAfterCommit(t, e, c)
						return
					}
					col.checkFailover(t, e, c)
				})
			}
		})
	}
}

// startPrecommitColumn starts each cell's two upstreams and one gateway
// serving every cell of col.
func startPrecommitColumn(t *testing.T, col precommitColumn) ([]precommitCell, *env) {
	var (
		cells []precommitCell
		ups   []config.Upstream
	)
	for _, row := range precommitRows {
		for _, stream := range []bool{false, true} {
			b := row.json
			if stream {
				b = row.stream
			}
			if b == nil {
				continue
			}
			c := precommitCell{row: row, stream: stream, model: row.slug + "-" + modeName(stream),
				name: row.name + "/" + modeName(stream)}
			c.badName, c.goodName = "bad-"+c.model, "good-"+c.model
			badURL := ""
			if row.refused {
				badURL = deadURL(t)
			} else {
				c.bad, badURL = startMock(t, c.badName, *b)
			}
			var goodURL string
			c.good, goodURL = startMock(t, c.goodName, mock.Behavior{CompletionTokens: 4})
			ups = append(ups, upstreamAt(c.badName, col.provider, badURL, 0, c.model),
				upstreamAt(c.goodName, col.provider, goodURL, 1, c.model))
			cells = append(cells, c)
		}
	}
	e := startGateway(t, spec{upstreams: ups, edit: func(cfg *config.Config) {
		for _, c := range cells {
			rs := cfg.Defaults
			// A gateway that misses a failure answers an error within
			// this, instead of hanging the test.
			rs.Timeout, rs.FirstByteTimeout = precommitBound, precommitBound
			if c.row.stall {
				rs.FirstByteTimeout = precommitStall
			}
			cfg.Routes = append(cfg.Routes, config.Route{Model: c.model, RouteSettings: rs})
		}
	}})
	return cells, e
}

// checkFailover: the client's SDK gets the healthy upstream's whole answer
// after two attempts, a stream ending with its protocol's terminal event.
func (col precommitColumn) checkFailover(t *testing.T, e *env, c precommitCell) {
	tap := newSDKTap(t, c.model)
	var cl protocolClient
	for _, p := range newProtocolClients(t, e, tap) {
		if p.protocol() == col.client {
			cl = p
		}
	}
	a := cl.ask(t, c.model, convTurn{content: contentText}, c.stream)
	h := a.wire.header
	if h.Get("X-Switchyard-Upstream") != c.goodName || h.Get("X-Switchyard-Attempts") != "2" {
		t.Errorf("served by %q after %s attempts, want %s after 2", h.Get("X-Switchyard-Upstream"),
			h.Get("X-Switchyard-Attempts"), c.goodName)
	}
	if got := h.Get("X-Switchyard-Translated"); got != col.translated {
		t.Errorf("X-Switchyard-Translated = %q, want %q", got, col.translated)
	}
	if a.text == "" || a.stop != stopReasons[col.client].end {
		t.Errorf("answer %q stopped by %q, want text and %q", a.text, a.stop, stopReasons[col.client].end)
	}
	if c.stream {
		if a.wire.timedOut {
			t.Errorf("the stream did not end within %s", exchangeWait)
		}
		checkStreamShape(t, col.client, a.wire.raw())
	}
	if c.bad != nil {
		if n := c.bad.Stats().Requests; n != 1 {
			t.Errorf("the failing upstream saw %d requests, want 1: the cell proves nothing", n)
		}
	}
	if n := c.good.Stats().Requests; n != 1 {
		t.Errorf("the healthy upstream saw %d requests, want 1", n)
	}
}

// checkAfterCommit: a stream that breaks after its first events stays on
// its upstream and ends with an error event in the client's protocol, and
// no terminal event: after a cut the gateway's own
// (docs/reference.md#commit-and-failover), after the upstream's error event
// that one or the gateway's.
func (col precommitColumn) checkAfterCommit(t *testing.T, e *env, c precommitCell) {
	w := precommitWires[col.client]
	r := e.post(t, w.path(c.model), w.body(c.model), "anthropic-version", "2023-06-01")
	if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != c.badName || r.header.Get("X-Switchyard-Attempts") != "1" {
		t.Fatalf("status %d from %q after %s attempts, want 200 from %s after 1: %s", r.status,
			r.header.Get("X-Switchyard-Upstream"), r.header.Get("X-Switchyard-Attempts"), c.badName, r.body)
	}
	isError := w.isGatewayError
	if c.row.upstreamError {
		isError = w.isError
	}
	events := parseSSE(r.body)
	if len(events) < 2 || !isError(events[len(events)-1]) {
		t.Fatalf("stream %s\nwant the relayed events, then the %s error event last", r.body, col.client)
	}
	for i, ev := range events[:len(events)-1] {
		if w.isEnd(ev) || w.isError(ev) {
			t.Errorf("event %d of a broken stream is a terminal or error event (one error event ends it): %+v", i, ev)
		}
	}
	if n := c.good.Stats().Requests; n != 0 {
		t.Errorf("failed over after the first byte: the healthy upstream saw %d requests", n)
	}
	// The log says the stream broke, whoever wrote the error event.
	if l := waitRequestLog(t, e, r.header.Get("X-Request-Id")); l.ErrorClass != "stream_interrupted" {
		t.Errorf("request log error class %q (%s), want stream_interrupted", l.ErrorClass, l.Error)
	}
}

// precommitWire is what checkAfterCommit needs of a client protocol: a
// raw streaming request, and its error and terminal events.
type precommitWire struct {
	path, body func(model string) string
	// isGatewayError: the gateway's error event after commit.
	isGatewayError func(ev sseEvent) bool
	// isError: any error event of the protocol.
	isError func(ev sseEvent) bool
	// isEnd: the protocol's terminal event, which a broken stream must not have.
	isEnd func(ev sseEvent) bool
}

// openAIStreamInterrupted is the OpenAI error event after commit
// (docs/reference.md#commit-and-failover).
func openAIStreamInterrupted(ev sseEvent) bool {
	return ev.name == "" && gjson.Get(ev.data, "error.code").Str == "stream_interrupted" &&
		gjson.Get(ev.data, "error.type").Str == "upstream_error" && gjson.Get(ev.data, "error.message").Str != ""
}

// hasErrorObject: data: {"error":{…}}, OpenAI's and Google's error event.
func hasErrorObject(ev sseEvent) bool {
	return gjson.Get(ev.data, "error").IsObject() && gjson.Get(ev.data, "error.message").Str != ""
}

var precommitWires = map[string]precommitWire{
	"openai-chat": {
		path: func(string) string { return "/v1/chat/completions" },
		body: func(m string) string {
			return fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":"x"}]}`, m)
		},
		isGatewayError: openAIStreamInterrupted,
		isError:        hasErrorObject,
		isEnd:          func(ev sseEvent) bool { return ev.data == "[DONE]" },
	},
	"openai-responses": {
		path:           func(string) string { return "/v1/responses" },
		body:           func(m string) string { return fmt.Sprintf(`{"model":%q,"stream":true,"input":"x"}`, m) },
		isGatewayError: openAIStreamInterrupted,
		isError: func(ev sseEvent) bool {
			return hasErrorObject(ev) || ev.name == "error" && gjson.Get(ev.data, "type").Str == "error" && gjson.Get(ev.data, "message").Str != ""
		},
		isEnd: func(ev sseEvent) bool {
			return ev.name == "response.completed" || ev.name == "response.incomplete" || ev.name == "response.failed"
		},
	},
	"anthropic": {
		path: func(string) string { return "/v1/messages" },
		body: func(m string) string {
			return fmt.Sprintf(`{"model":%q,"max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`, m)
		},
		isGatewayError: func(ev sseEvent) bool {
			return ev.name == "error" && gjson.Get(ev.data, "type").Str == "error" &&
				gjson.Get(ev.data, "error.type").Str == "api_error" && gjson.Get(ev.data, "error.message").Str != ""
		},
		isError: func(ev sseEvent) bool {
			return ev.name == "error" && gjson.Get(ev.data, "type").Str == "error" && gjson.Get(ev.data, "error.message").Str != ""
		},
		isEnd: func(ev sseEvent) bool { return ev.name == "message_stop" },
	},
	"gemini": {
		path: func(m string) string { return "/v1beta/models/" + m + ":streamGenerateContent?alt=sse" },
		body: func(string) string { return `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}` },
		isGatewayError: func(ev sseEvent) bool {
			return hasErrorObject(ev) && gjson.Get(ev.data, "error.code").Int() == http.StatusInternalServerError &&
				gjson.Get(ev.data, "error.status").Str == "INTERNAL"
		},
		isError: hasErrorObject,
		isEnd:   func(ev sseEvent) bool { return gjson.Get(ev.data, "candidates.0.finishReason").Str != "" },
	},
}
