package codec

import (
	"fmt"
	"strings"
	"testing"
)

func TestResponsesTurnItems(t *testing.T) {
	tests := []struct {
		name, body, items string
		store             bool
	}{
		{"string input", `{"input":"hi \"you\"","store":true}`, `[{"role":"user","content":"hi \"you\""}]`, true},
		{"items as they are", `{"input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}]}`, `[{"role":"user","content":[{"type":"input_text","text":"a"}]}]`, true},
		{"no input", `{"store":false}`, `[]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, store := openAIResponses{}.TurnItems([]byte(tt.body))
			if string(items) != tt.items || store != tt.store {
				t.Fatalf("TurnItems = %s %v, want %s %v", items, store, tt.items, tt.store)
			}
		})
	}
}

func TestResponsesContinue(t *testing.T) {
	tests := []struct {
		name, body, history, want string
	}{
		{"string input after the history",
			`{"model":"m","previous_response_id":"resp_1","input":"next"}`, `[{"role":"user","content":"first"}]`,
			`{"model":"m","input":[{"role":"user","content":"first"},{"role":"user","content":"next"}]}`},
		{"items after the history",
			`{"input":[{"type":"function_call_output","call_id":"c","output":"4"}],"previous_response_id":"resp_1","stream":true}`, `[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`,
			`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"4"}],"stream":true}`},
		{"empty history", `{"previous_response_id":"resp_1","input":"x"}`, `[]`, `{"input":[{"role":"user","content":"x"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := openAIResponses{}.Continue([]byte(tt.body), []byte(tt.history))
			if err != nil || string(got) != tt.want {
				t.Fatalf("Continue = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestResponsesAnswerItems(t *testing.T) {
	const output = `[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"hmm"}]},` +
		`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[],"logprobs":[]},{"type":"refusal","refusal":"no"}]},` +
		`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"{\"a\":1}"},` +
		`{"id":"ws_1","type":"web_search_call","status":"completed"}]`
	const want = `[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"},{"type":"refusal","refusal":"no"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"},` +
		`{"id":"ws_1","type":"web_search_call","status":"completed"}]`
	c := openAIResponses{}
	if got := c.AnswerItems([]byte(`{"id":"resp_1","output":` + output + `}`)); string(got) != want {
		t.Errorf("AnswerItems = %s\nwant %s", got, want)
	}
	if got := c.AnswerItems([]byte(`{"error":{}}`)); got != nil {
		t.Errorf("AnswerItems of no output = %s, want nil", got)
	}
	tests := []struct {
		name, sse, id, items string
		ok                   bool
	}{
		{"completed", "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_9\",\"output\":" + output + "}}\n\n",
			"resp_9", want, true},
		{"incomplete", "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"id\":\"resp_8\",\"output\":[]}}\n\n",
			"resp_8", `[]`, true},
		{"a delta naming the event", "data: {\"type\":\"response.output_text.delta\",\"delta\":\"response.completed\"}\n\n", "", "", false},
		{"no final event", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_9\",\"output\":[]}}\n\n", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, items, ok := c.StreamAnswerItems([]byte(tt.sse))
			if id != tt.id || string(items) != tt.items || ok != tt.ok {
				t.Fatalf("StreamAnswerItems = %q %s %v, want %q %s %v", id, items, ok, tt.id, tt.items, tt.ok)
			}
		})
	}
}

func TestJoinItems(t *testing.T) {
	tests := []struct {
		name   string
		arrays []string
		want   string
	}{
		{"two", []string{`[1,2]`, `[3]`}, `[1,2,3]`},
		{"empty ones add nothing", []string{`[]`, ``, `[ 1 ]`, `[]`}, `[ 1 ]`},
		{"none", nil, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in [][]byte
			for _, a := range tt.arrays {
				in = append(in, []byte(a))
			}
			if got := JoinItems(in...); string(got) != tt.want {
				t.Fatalf("JoinItems(%q) = %s, want %s", tt.arrays, got, tt.want)
			}
		})
	}
}

// BenchmarkResponsesChain expands a request continuing a kept conversation
// of n turns and reads the items of its streamed answer's final event.
func BenchmarkResponsesChain(b *testing.B) {
	const turn = `{"role":"user","content":"a question of some length, as a user would ask it"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"an answer of some length, as a model would give it"}]}`
	final := []byte("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"output\":[" +
		`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[],"logprobs":[]}]}` + "]}}\n\n")
	body := []byte(`{"model":"claude-sonnet-4","previous_response_id":"resp_0","input":"next","stream":true}`)
	c := openAIResponses{}
	for _, n := range []int{1, 10, 100} {
		history := []byte("[" + strings.Repeat(turn+",", n-1) + turn + "]")
		b.Run(fmt.Sprintf("turns-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Continue(body, history); err != nil {
					b.Fatal(err)
				}
				if _, _, ok := c.StreamAnswerItems(final); !ok {
					b.Fatal("no final event")
				}
			}
		})
	}
}
