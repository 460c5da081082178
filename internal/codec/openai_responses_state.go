package codec

import "github.com/tidwall/gjson"

// Stateful is a protocol whose requests may refer to state one upstream
// keeps between requests, and whose answers create it
// (docs/routing.md#stateful-calls-pinned-not-sticky): the OpenAI Responses
// API's stored responses and conversations. The proxy pins that state to the
// upstream that holds it. The methods read only what they name, never decode a
// body whole, and return "" for what is absent or not a string id.
type Stateful interface {
	// RequestState returns the state a request body refers to: its
	// previous_response_id and its conversation's id.
	RequestState(body []byte) (previous, conversation string)
	// AnswerState returns the state a whole answer created or used: the
	// response's id and its conversation's id.
	AnswerState(body []byte) (id, conversation string)
	// EventState returns the same from a stream event that carries the
	// response object (response.created first); ok is false for any other.
	EventState(ev *Event) (id, conversation string, ok bool)
}

var _ Stateful = openAIResponses{}

// RequestState implements Stateful.
func (openAIResponses) RequestState(body []byte) (previous, conversation string) {
	r := gjson.GetManyBytes(body, "previous_response_id", "conversation")
	return stringID(r[0]), conversationID(r[1])
}

// AnswerState implements Stateful.
func (openAIResponses) AnswerState(body []byte) (id, conversation string) {
	r := gjson.GetManyBytes(body, "id", "conversation")
	return stringID(r[0]), conversationID(r[1])
}

// EventState implements Stateful.
func (openAIResponses) EventState(ev *Event) (id, conversation string, ok bool) {
	r := gjson.GetManyBytes(ev.Data, "response.id", "response.conversation")
	if id = stringID(r[0]); id == "" {
		return "", "", false
	}
	return id, conversationID(r[1]), true
}

// conversationID reads a Responses conversation: an id, or an object with one.
func conversationID(v gjson.Result) string {
	if v.IsObject() {
		return stringID(v.Get("id"))
	}
	return stringID(v)
}

// stringID is v when it is a string, else "".
func stringID(v gjson.Result) string {
	if v.Type != gjson.String {
		return ""
	}
	return v.Str
}
