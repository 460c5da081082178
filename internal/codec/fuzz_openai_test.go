package codec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Fuzz targets of the OpenAI translators. Seeds: the recorded streams in
// testdata/openai and the corpora in testdata/fuzz/<FuzzName>.

// FuzzOpenAIChatRequest decodes arbitrary Chat requests. A request that
// decodes must encode, as Chat and as Responses, to valid JSON that
// decodes again, and one round trip must reach a fixed point: encoding the
// re-decoded request gives the same bytes.
func FuzzOpenAIChatRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	fuzzRequest(f, OpenAIChat.(Translator))
}

// FuzzOpenAIResponsesRequest is FuzzOpenAIChatRequest for Responses requests.
func FuzzOpenAIResponsesRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":"hi"}`))
	fuzzRequest(f, OpenAIResponses.(Translator))
}

// fuzzRequest is the request fuzz target of protocol c.
func fuzzRequest(f *testing.F, c Translator) {
	targets := []Translator{OpenAIChat.(Translator), OpenAIResponses.(Translator)}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := c.DecodeRequest(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		for _, target := range targets {
			once, err := target.EncodeRequest(r, "model-x", EncodeOptions{})
			if err != nil {
				t.Fatalf("%s EncodeRequest: %v", target.Name(), err)
			}
			if !json.Valid(once) {
				t.Fatalf("%s EncodeRequest wrote invalid JSON: %s", target.Name(), once)
			}
			back, err := target.DecodeRequest(once)
			if err != nil {
				t.Fatalf("%s cannot decode its own request %s: %v", target.Name(), once, err)
			}
			twice, err := target.EncodeRequest(back, "model-x", EncodeOptions{})
			if err != nil || !sameJSONValue(once, twice) {
				t.Fatalf("%s round trip is not a fixed point (%v):\n%s\n%s", target.Name(), err, once, twice)
			}
		}
	})
}

// FuzzOpenAIChatStream runs arbitrary SSE through the Chat stream decoder
// and the Chat and Responses encoders: nothing panics, the canonical
// sequence holds (complete when the decoder saw the end), and the encoded
// streams are well formed (see checkOpenAIStreams).
func FuzzOpenAIChatStream(f *testing.F) {
	addStreamSeeds(f, "chat_")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzStream(t, OpenAIChat.(Translator), data)
	})
}

// FuzzOpenAIResponsesStream is FuzzOpenAIChatStream for Responses streams.
func FuzzOpenAIResponsesStream(f *testing.F) {
	addStreamSeeds(f, "resp_")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzStream(t, OpenAIResponses.(Translator), data)
	})
}

// addStreamSeeds adds the recorded streams whose names start with prefix.
func addStreamSeeds(f *testing.F, prefix string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "openai", prefix+"*.sse"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// fuzzStream decodes data with up's decoder and checks the chunks and
// their encodings.
func fuzzStream(t *testing.T, up Translator, data []byte) {
	dec := up.NewStreamDecoder()
	chunks, err := oaiDecodeSSE(dec, data)
	if err != nil && err.Error() == "" {
		t.Fatal("an error without a message")
	}
	ended := len(chunks) > 0 && (chunks[len(chunks)-1].Type == ChunkEnd || chunks[len(chunks)-1].Type == ChunkError)
	if dec.Done() != ended {
		t.Fatalf("Done() = %v, but the chunks ended: %v", dec.Done(), ended)
	}
	if err := oaiCheckChunks(chunks, dec.Done()); err != nil {
		t.Fatalf("%v\ninput %q", err, data)
	}
	checkOpenAIStreams(t, chunks)
}

// checkOpenAIStreams encodes chunks as a Chat and as a Responses stream
// and checks that every event's data is JSON (or [DONE]), that Responses
// sequence numbers run from 0 without gaps, and that a stream ends as its
// protocol ends it when the chunks end.
func checkOpenAIStreams(t *testing.T, chunks []Chunk) {
	last := ChunkStart
	if len(chunks) > 0 {
		last = chunks[len(chunks)-1].Type
	}
	chat := oaiEncodeAll(OpenAIChat.(Translator).NewStreamEncoder(&Request{IncludeUsage: true}), chunks)
	events := sseData(t, chat)
	if last == ChunkEnd && (len(events) == 0 || events[len(events)-1] != "[DONE]") {
		t.Fatalf("chat stream does not end with [DONE]:\n%s", chat)
	}
	resp := oaiEncodeAll(OpenAIResponses.(Translator).NewStreamEncoder(&Request{}), chunks)
	events = sseData(t, resp)
	for i, ev := range events {
		if n := gjson.Get(ev, "sequence_number"); n.Int() != int64(i) {
			t.Fatalf("responses event %d has sequence_number %s:\n%s", i, n.Raw, resp)
		}
	}
	if last == ChunkEnd {
		typ := gjson.Get(events[len(events)-1], "type").Str
		if typ != "response.completed" && typ != "response.incomplete" {
			t.Fatalf("responses stream ends with %s:\n%s", typ, resp)
		}
	}
}

// sseData splits an encoded stream into its events' data, checking that
// each is JSON or [DONE].
func sseData(t *testing.T, wire []byte) []string {
	var data []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(wire), "\n\n"), "\n\n") {
		if ev == "" {
			continue
		}
		i := strings.Index(ev, "data: ")
		if i < 0 {
			t.Fatalf("event without data: %q", ev)
		}
		d := ev[i+len("data: "):]
		if d != "[DONE]" && !json.Valid([]byte(d)) {
			t.Fatalf("event data is not JSON: %q", d)
		}
		data = append(data, d)
	}
	return data
}

// sameJSONValue reports whether a and b hold equal JSON values (an invalid
// UTF-8 byte escaped as \ufffd equals U+FFFD written out).
func sameJSONValue(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
