package admin_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"switchyard/internal/store"
)

// failedOverLog is the request log of "req_1": the first attempt failed on
// "a", the second won on "b", translated.
func failedOverLog() store.RequestLog {
	return store.RequestLog{
		ID: "req_1", Time: fakeNow, Key: "team", Model: "gpt-4o", Upstream: "b", Status: 200, Attempts: 2,
		Latency: 900 * time.Millisecond, InputTokens: 12, OutputTokens: 34, Translated: "openai-chat->anthropic",
		TraceID: failedOverTrace,
		Tried: []store.Attempt{
			{Upstream: "a", Start: time.Millisecond, End: 300 * time.Millisecond, Status: 500, Outcome: "server_error", Detail: "status 500"},
			{Upstream: "b", Start: 301 * time.Millisecond, FirstByte: 400 * time.Millisecond, End: 900 * time.Millisecond,
				Status: 200, Outcome: "success", InputTokens: 12, OutputTokens: 34, Won: true},
		},
	}
}

// The trace ids of failedOverLog and of the decision of "unlogged".
const (
	failedOverTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	unloggedTrace   = "0af7651916cd43dd8448eb211c80319c"
)

func TestRequestEndpoint(t *testing.T) {
	slashed := failedOverLog()
	slashed.ID = "client/id 1"
	tests := []struct {
		name, method, path, auth string
		status                   int
		wantLog                  *store.RequestLog
		wantDecisions            []string // the decisions' request ids
		wantTrace                string
	}{
		{name: "logged and decided", path: "/admin/api/requests/req_1", status: 200,
			wantLog: ptr(failedOverLog()), wantDecisions: []string{"req_1"}, wantTrace: failedOverTrace},
		{name: "not logged yet: the decision alone", path: "/admin/api/requests/unlogged", status: 200,
			wantDecisions: []string{"unlogged"}, wantTrace: unloggedTrace},
		{name: "decision gone: the log alone", path: "/admin/api/requests/4", status: 200,
			wantLog: ptr(usageLogs()[3]), wantDecisions: []string{}},
		{name: "an escaped client id", path: "/admin/api/requests/client%2Fid%201", status: 200,
			wantLog: &slashed, wantDecisions: []string{}, wantTrace: failedOverTrace},
		{name: "neither", path: "/admin/api/requests/ghost", status: 404},
		{name: "no token", path: "/admin/api/requests/req_1", auth: "-", status: 401},
		{name: "not a GET", method: "DELETE", path: "/admin/api/requests/req_1", status: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBackend(t)
			if err := f.st.InsertRequestLogs(context.Background(), []store.RequestLog{failedOverLog(), slashed}); err != nil {
				t.Fatal(err)
			}
			method, auth := "GET", "Bearer "+token
			if tt.method != "" {
				method = tt.method
			}
			if tt.auth == "-" {
				auth = ""
			}
			w := serve(t, f, method, tt.path, "", auth)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.status != 200 {
				fieldErrors(t, w.Body.Bytes()) // the admin API's error shape
				return
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			if want := `"` + tt.wantTrace + `"`; string(raw["trace_id"]) != want {
				t.Errorf("trace_id = %s, want %s", raw["trace_id"], want)
			}
			var v struct {
				Log       *store.RequestLog
				Decisions []struct {
					RequestID string `json:"request_id"`
				}
			}
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			if tt.wantLog == nil {
				if string(raw["log"]) != "null" {
					t.Errorf("log = %s, want null", raw["log"])
				}
			} else if v.Log == nil {
				t.Errorf("log missing, want %+v", *tt.wantLog)
			} else {
				got, want := *v.Log, *tt.wantLog
				if !got.Time.Equal(want.Time) {
					t.Errorf("log time %v, want %v", got.Time, want.Time)
				}
				got.Time, want.Time = time.Time{}, time.Time{}
				if gj, wj := mustJSON(t, got), mustJSON(t, want); gj != wj {
					t.Errorf("log\n got %s\nwant %s", gj, wj)
				}
			}
			if string(raw["decisions"]) == "null" {
				t.Fatalf("decisions is null, want a list")
			}
			var ids []string
			for _, d := range v.Decisions {
				ids = append(ids, d.RequestID)
			}
			if mustJSON(t, nonNilStrings(ids)) != mustJSON(t, tt.wantDecisions) {
				t.Errorf("decisions for %v, want %v", ids, tt.wantDecisions)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
