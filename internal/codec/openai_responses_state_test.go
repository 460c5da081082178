package codec

import "testing"

func TestResponsesRequestState(t *testing.T) {
	tests := []struct {
		name, body      string
		previous, convo string
	}{
		{"none", `{"model":"m","input":"x"}`, "", ""},
		{"previous", `{"model":"m","previous_response_id":"resp_1"}`, "resp_1", ""},
		{"conversation id", `{"model":"m","conversation":"conv_1"}`, "", "conv_1"},
		{"conversation object", `{"model":"m","conversation":{"id":"conv_2"}}`, "", "conv_2"},
		{"both", `{"conversation":{"id":"conv_3"},"previous_response_id":"resp_3"}`, "resp_3", "conv_3"},
		{"null previous", `{"previous_response_id":null,"conversation":null}`, "", ""},
		{"not strings", `{"previous_response_id":12,"conversation":{"id":7}}`, "", ""},
		{"conversation array", `{"conversation":["conv_1"]}`, "", ""},
		{"nested previous is not the request's", `{"metadata":{"previous_response_id":"resp_x"}}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, c := OpenAIResponses.(Stateful).RequestState([]byte(tt.body))
			if p != tt.previous || c != tt.convo {
				t.Errorf("RequestState = (%q, %q), want (%q, %q)", p, c, tt.previous, tt.convo)
			}
		})
	}
}

func TestResponsesAnswerState(t *testing.T) {
	tests := []struct {
		name, body string
		id, convo  string
	}{
		{"response", `{"id":"resp_1","object":"response","output":[{"id":"msg_1"}]}`, "resp_1", ""},
		{"with conversation", `{"id":"resp_2","object":"response","conversation":{"id":"conv_1"}}`, "resp_2", "conv_1"},
		{"no id", `{"object":"response"}`, "", ""},
		{"an error", `{"error":{"message":"x","code":"y"}}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, c := OpenAIResponses.(Stateful).AnswerState([]byte(tt.body))
			if id != tt.id || c != tt.convo {
				t.Errorf("AnswerState = (%q, %q), want (%q, %q)", id, c, tt.id, tt.convo)
			}
		})
	}
}

func TestResponsesEventState(t *testing.T) {
	tests := []struct {
		name, data string
		id, convo  string
		ok         bool
	}{
		{"created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}`, "resp_1", "", true},
		{"created in a conversation", `{"type":"response.created","response":{"id":"resp_2","conversation":{"id":"conv_1"}}}`, "resp_2", "conv_1", true},
		{"completed carries it too", `{"type":"response.completed","response":{"id":"resp_3"}}`, "resp_3", "", true},
		{"a delta", `{"type":"response.output_text.delta","item_id":"msg_1","delta":"hi"}`, "", "", false},
		{"an error event", `{"type":"error","code":"server_error","message":"x"}`, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, c, ok := OpenAIResponses.(Stateful).EventState(&Event{Data: []byte(tt.data)})
			if id != tt.id || c != tt.convo || ok != tt.ok {
				t.Errorf("EventState = (%q, %q, %v), want (%q, %q, %v)", id, c, ok, tt.id, tt.convo, tt.ok)
			}
		})
	}
}

// Only the Responses API keeps state: no other client protocol is Stateful.
func TestOnlyResponsesIsStateful(t *testing.T) {
	for _, c := range []Codec{OpenAIChat, OpenAIResponses, Anthropic, Gemini} {
		_, ok := c.(Stateful)
		if want := c == OpenAIResponses; ok != want {
			t.Errorf("%s is Stateful: %v, want %v", c.Name(), ok, want)
		}
	}
}
