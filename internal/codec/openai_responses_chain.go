package codec

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The Responses conversations the gateway continues itself
// (docs/routing.md#responses-chains-the-gateway-keeps): a chain's history is a
// JSON array of Responses input items — every turn's input, then the items of
// its answer — which a later request's previous_response_id expands into.

// Chain is a Stateful protocol whose conversations the gateway can keep and
// replay: the proxy reads a request's own turn, keeps it with the answer's
// items, and expands a later request that continues it into a request
// without previous_response_id that any upstream can serve.
type Chain interface {
	Stateful
	// TurnItems returns the request's input as a JSON array of input items
	// (a string input is one user message) and whether the client lets the
	// answer be kept (its store is not false).
	TurnItems(body []byte) (items []byte, store bool)
	// Continue returns body with history's items (a JSON array) before its
	// input and without previous_response_id.
	Continue(body, history []byte) ([]byte, error)
	// AnswerItems returns the output of a whole answer as input items of
	// a later turn; nil when body is not a response with an output array.
	AnswerItems(body []byte) []byte
	// StreamAnswerItems returns, when sse (events as the client gets them)
	// holds the stream's final response event (response.completed or
	// response.incomplete), the response's id and its output as input
	// items; ok is false otherwise.
	StreamAnswerItems(sse []byte) (id string, items []byte, ok bool)
}

var _ Chain = openAIResponses{}

// TurnItems implements Chain.
func (openAIResponses) TurnItems(body []byte) ([]byte, bool) {
	r := gjson.GetManyBytes(body, "input", "store")
	store := r[1].Type != gjson.False
	switch in := r[0]; {
	case in.IsArray():
		return []byte(in.Raw), store
	case in.Type == gjson.String:
		w := jsonWriter{b: make([]byte, 0, len(in.Raw)+32)}
		w.raw(`[{"role":"user","content":`)
		w.str(in.Str)
		w.raw("}]")
		return w.b, store
	}
	return []byte("[]"), store
}

// Continue implements Chain.
func (c openAIResponses) Continue(body, history []byte) ([]byte, error) {
	turn, _ := c.TurnItems(body)
	out, err := sjson.SetRawBytes(body, "input", JoinItems(history, turn))
	if err != nil {
		return nil, fmt.Errorf("expanding the input: %w", err)
	}
	if out, err = sjson.DeleteBytes(out, "previous_response_id"); err != nil {
		return nil, fmt.Errorf("removing previous_response_id: %w", err)
	}
	return out, nil
}

// AnswerItems implements Chain.
func (openAIResponses) AnswerItems(body []byte) []byte {
	out := gjson.GetBytes(body, "output")
	if !out.IsArray() {
		return nil
	}
	return inputItems(out)
}

// StreamAnswerItems implements Chain.
func (openAIResponses) StreamAnswerItems(sse []byte) (string, []byte, bool) {
	if !bytes.Contains(sse, []byte(`"response.completed"`)) && !bytes.Contains(sse, []byte(`"response.incomplete"`)) {
		return "", nil, false
	}
	for line := range bytes.Lines(sse) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		r := gjson.GetManyBytes(data, "type", "response.id", "response.output")
		if t := r[0].Str; t != "response.completed" && t != "response.incomplete" || !r[2].IsArray() {
			continue
		}
		return stringID(r[1]), inputItems(r[2]), true
	}
	return "", nil, false
}

// inputItems turns a response's output items into input items of a later
// turn: messages keep their role and text (output_text and refusal parts),
// function calls their call id, name and arguments; reasoning items are
// dropped (another upstream could not verify them) and items of built-in
// tools kept as they are. Item ids and statuses are dropped: they name
// nothing the next upstream holds.
func inputItems(output gjson.Result) []byte {
	w := jsonWriter{b: make([]byte, 0, len(output.Raw)+2)}
	w.raw("[")
	n := 0
	output.ForEach(func(_, it gjson.Result) bool {
		typ := it.Get("type").Str
		if typ == "reasoning" {
			return true
		}
		if n > 0 {
			w.comma()
		}
		n++
		switch typ {
		case "message":
			w.raw(`{"type":"message","role":`)
			w.str(cmp.Or(it.Get("role").Str, "assistant"))
			w.raw(`,"content":[`)
			k := 0
			it.Get("content").ForEach(func(_, c gjson.Result) bool {
				field := "text"
				switch c.Get("type").Str {
				case "output_text":
				case "refusal":
					field = "refusal"
				default:
					return true
				}
				if k > 0 {
					w.comma()
				}
				k++
				w.raw(`{"type":`)
				w.str(c.Get("type").Str)
				w.raw(`,"` + field + `":`)
				w.str(c.Get(field).Str)
				w.raw("}")
				return true
			})
			w.raw("]}")
		case "function_call":
			w.raw(`{"type":"function_call","call_id":`)
			w.str(it.Get("call_id").Str)
			w.raw(`,"name":`)
			w.str(it.Get("name").Str)
			w.raw(`,"arguments":`)
			w.str(it.Get("arguments").Str)
			w.raw("}")
		default:
			w.raw(it.Raw)
		}
		return true
	})
	w.raw("]")
	return w.b
}

// JoinItems concatenates JSON arrays of items into one array; a nil or
// empty one adds nothing.
func JoinItems(arrays ...[]byte) []byte {
	size := 2
	for _, a := range arrays {
		size += len(a)
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for _, a := range arrays {
		inner := bytes.TrimSpace(a)
		inner = bytes.TrimPrefix(inner, []byte("["))
		inner = bytes.TrimSuffix(inner, []byte("]"))
		if len(bytes.TrimSpace(inner)) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, ']')
}
