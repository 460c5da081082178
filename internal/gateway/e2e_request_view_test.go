package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/store"
)

// requestView is GET /admin/api/requests/{id}'s answer, as the test reads it.
type requestView struct {
	ID        string            `json:"id"`
	TraceID   *string           `json:"trace_id"`
	Log       *store.RequestLog `json:"log"`
	Decisions []struct {
		RequestID string   `json:"request_id"`
		Chosen    string   `json:"chosen"`
		Order     []string `json:"order"`
		Tried     []struct {
			Upstream string `json:"upstream"`
			Outcome  string `json:"outcome"`
			Won      bool   `json:"won"`
		} `json:"tried"`
	} `json:"decisions"`
}

// waitRequestView polls GET /admin/api/requests/{id} until it holds both
// the request log (written asynchronously, within a second) and the
// decision, at most 10 s.
func waitRequestView(t *testing.T, e *env, id string) requestView {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.admin(t, http.MethodGet, "/requests/"+id, "")
		var v requestView
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &v); err != nil {
				t.Fatalf("answer is not a request view: %v\n%s", err, r.body)
			}
			if v.Log != nil && len(v.Decisions) > 0 {
				return v
			}
		} else if r.status != http.StatusNotFound {
			t.Fatalf("GET /admin/api/requests/%s: status %d: %s", id, r.status, r.body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no complete view of request %s within 10 s; last answer %d %s", id, r.status, r.body)
		}
		time.Sleep(20 * time.Millisecond) // polling the API, not timing an assertion
	}
}

// TestRequestViewOfAFailover: a request fails over once, from an upstream
// answering 500 in tier 0 to a healthy one in tier 1, and its view lists
// both attempts in order (the first failed with its outcome, the second
// won with its tokens and first byte) beside the decision that planned them.
func TestRequestViewOfAFailover(t *testing.T) {
	_, badURL := startMock(t, "bad", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	_, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 3})
	e := startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("bad", config.ProviderOpenAI, badURL, 0, "gpt-4o"),
			upstreamAt("good", config.ProviderOpenAI, goodURL, 1, "gpt-4o"),
		},
		edit: withAdmin,
	})
	var raw *http.Response
	client := e.openAI(testKey)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	id := raw.Header.Get("X-Request-Id")
	if id == "" || raw.Header.Get("X-Switchyard-Attempts") != "2" {
		t.Fatalf("request id %q after %s attempts; want an id and a failover", id, raw.Header.Get("X-Switchyard-Attempts"))
	}

	v := waitRequestView(t, e, id)
	if v.ID != id || v.TraceID == nil || *v.TraceID != "" {
		t.Errorf("id %q, trace_id %v; want %q and \"\" (tracing is off)", v.ID, v.TraceID, id)
	}
	l := v.Log
	if l.Status != http.StatusOK || l.Upstream != "good" || l.Attempts != 2 || l.OutputTokens != 3 {
		t.Errorf("log status %d upstream %q attempts %d output tokens %d; want 200 good 2 3", l.Status, l.Upstream, l.Attempts, l.OutputTokens)
	}
	if len(l.Tried) != 2 {
		t.Fatalf("log lists %d attempts, want 2: %+v", len(l.Tried), l.Tried)
	}
	first, second := l.Tried[0], l.Tried[1]
	if first.Upstream != "bad" || first.Outcome != "server_error" || first.Status != http.StatusInternalServerError || first.Won || first.Hedge {
		t.Errorf("first attempt %+v, want bad failing with server_error (500), not won", first)
	}
	if second.Upstream != "good" || second.Outcome != "success" || second.Status != http.StatusOK || !second.Won || second.Hedge || second.OutputTokens != 3 {
		t.Errorf("second attempt %+v, want good winning with 3 output tokens", second)
	}
	// Start is from the request's arrival; FirstByte and End from the attempt's Start.
	if !(first.End > 0 && first.Start+first.End <= second.Start && second.FirstByte > 0 &&
		second.FirstByte <= second.End && second.Start+second.End <= l.Latency) {
		t.Errorf("timings out of order: first at %v for %v, second at %v (first byte after %v) for %v, request %v",
			first.Start, first.End, second.Start, second.FirstByte, second.End, l.Latency)
	}
	if len(v.Decisions) != 1 {
		t.Fatalf("%d decisions, want 1", len(v.Decisions))
	}
	d := v.Decisions[0]
	if d.RequestID != id || d.Chosen != "bad" || len(d.Order) != 2 || d.Order[1] != "good" {
		t.Errorf("decision %+v, want bad then good for %s", d, id)
	}
	if len(d.Tried) != 2 || d.Tried[0].Outcome != "server_error" || !d.Tried[1].Won {
		t.Errorf("decision's attempts %+v, want the failure then the winner", d.Tried)
	}

	// An id neither logged nor decided answers 404 in the API's error shape.
	r := e.mustAdmin(t, http.MethodGet, "/requests/no-such-request", "", http.StatusNotFound)
	var msg struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &msg) != nil || msg.Error.Message == "" {
		t.Errorf("404 body %s, want {\"error\":{\"message\":…}}", r.body)
	}
}
