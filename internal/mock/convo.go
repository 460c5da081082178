package mock

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// convo is what the mock needs to know of a generation request to answer
// it, whatever its family. Each family's inspector (inspectChat,
// inspectResponses, inspectMessages, inspectGemini) fills it while it
// validates the request as the real API does; plan turns it into a reply.
type convo struct {
	// tools are the functions the request offers, in order.
	tools []toolDef
	// choice and choiceName are the request's tool_choice; choiceName is
	// set for choiceNamed.
	choice     choiceMode
	choiceName string
	// single: the request disabled parallel tool calls.
	single bool
	// userTurn: the last turn is the user's own (text or images), not a
	// tool result; userText is its text.
	userTurn bool
	userText string
	// toolResults are the texts of the last turn's tool results, in order;
	// nil when the last turn is not one.
	toolResults []string
	// images are the request's image inputs, in order.
	images []image
	// reasoning is how many tokens the answer spends reasoning (0 = none);
	// showReasoning: the answer shows it (a thinking block, a thought
	// part, a reasoning summary) rather than only counting it.
	reasoning     int
	showReasoning bool
	// stop are the request's stop sequences.
	stop []string
	// cached marks an Anthropic request with cache_control breakpoints;
	// prefix identifies the prompt up to the last one.
	cached bool
	prefix uint64
}

// toolDef is a function the request offers the model.
type toolDef struct {
	name string
	// schema is the JSON Schema of its arguments; a zero Result is {}.
	schema gjson.Result
}

// choiceMode says whether the model may, must or must not call a tool.
type choiceMode uint8

const (
	choiceAuto  choiceMode = iota // the family's default
	choiceNone                    // no tool may be called
	choiceAny                     // some tool must be called
	choiceNamed                   // convo.choiceName must be called
)

// image is one image input: data of a media type, or an address.
type image struct {
	mediaType string // "" for an image by URL or file
	size      int    // decoded bytes of data
	source    string // "url" or "file" for an image not given as data
}

// toolCall is one call the answer makes.
type toolCall struct {
	id, name string
	args     []byte // a JSON object
}

// tally is an answer's token usage in the mock's own terms; each family
// reports it in its own fields.
type tally struct {
	// prompt counts every input token, cached or not.
	prompt int
	// cacheRead are prompt tokens served from the prompt cache;
	// cacheWrite are prompt tokens written to it (Anthropic only).
	cacheRead, cacheWrite int
	// output are the visible answer's tokens: text words, or the tool
	// calls' arguments; reasoning are the tokens spent reasoning.
	output, reasoning int
}

// completion is every output token: visible and reasoning.
func (t tally) completion() int { return t.output + t.reasoning }

// reply is the answer to a generation request, before it is shaped for a
// family. Plain and streamed answers to the same request get the same
// reply (but for ids), so tests can compare them.
type reply struct {
	// thinking are the pieces of the shown reasoning (nil when none) and
	// signature its Anthropic signature.
	thinking  []string
	signature string
	// pieces are the answer text's stream deltas; they concatenate to the
	// text. Empty when the answer is tool calls.
	pieces []string
	calls  []toolCall
	// truncated: the output limit cut the text.
	truncated bool
	// stopSequence is the stop sequence that ended the text, if one did.
	stopSequence string
	usage        tally
}

// text is the answer's whole text.
func (r *reply) text() string { return strings.Join(r.pieces, "") }

// thinkingText is the shown reasoning's whole text.
func (r *reply) thinkingText() string { return strings.Join(r.thinking, "") }

// Reasoning token counts for OpenAI's reasoning effort; thinking that is
// asked for by budget (Anthropic, Gemini) spends defaultReasoning.
const defaultReasoning = 16

var effortTokens = map[string]int{"none": 0, "minimal": 4, "low": 8, "medium": 16, "high": 32, "xhigh": 64}

// plan decides the reply to a request described by cv: tool calls when the
// request asks for them, else text that quotes the tool results, describes
// the images, or is CompletionTokens words; the text is cut to the
// request's output limit less the reasoning. callPrefix starts tool call
// ids ("call_", "toolu_").
func (c *call) plan(cv *convo, callPrefix string) reply {
	var r reply
	r.usage = c.usage(cv)
	r.usage.reasoning = cv.reasoning
	if cv.showReasoning && cv.reasoning > 0 {
		words := answerWords(c.s.seed, c.answerKey()^thinkingSalt, cv.reasoning)
		r.thinking = pieces(words)
		r.signature = thinkingSignature(r.thinkingText())
	}
	if tools := chooseTools(cv); len(tools) > 0 {
		r.calls = make([]toolCall, len(tools))
		for i, t := range tools {
			args := argsFor(t.schema)
			r.calls[i] = toolCall{id: callPrefix + strconv.FormatUint(c.s.seq.Add(1), 10), name: t.name, args: args}
			r.usage.output += callTokens(t.name, args)
		}
		return r
	}
	switch {
	case cv.toolResults != nil:
		r.pieces = splitPieces("The tool returned: " + strings.Join(cv.toolResults, "; "))
	case len(cv.images) > 0:
		r.pieces = splitPieces(describeImages(cv.images))
	default:
		r.pieces = pieces(c.answer(c.b.completionTokens()))
	}
	if limit := c.maxTokens(); limit > 0 {
		visible := max(limit-cv.reasoning, 0)
		if len(r.pieces) > visible {
			r.pieces, r.truncated = r.pieces[:visible], true
		}
	}
	r.pieces, r.stopSequence = cutAtStop(r.pieces, cv.stop)
	if r.stopSequence != "" {
		r.truncated = false
	}
	r.usage.output += len(r.pieces)
	return r
}

// cutAtStop ends the text before the first of stops it contains, as a
// model stops when it would write a stop sequence; it returns the pieces
// left and the sequence that matched ("" for none).
func cutAtStop(ps []string, stops []string) ([]string, string) {
	if len(stops) == 0 {
		return ps, ""
	}
	text := strings.Join(ps, "")
	at, seq := len(text), ""
	for _, s := range stops {
		if i := strings.Index(text, s); s != "" && i >= 0 && i < at {
			at, seq = i, s
		}
	}
	if seq == "" {
		return ps, ""
	}
	out := ps[:0:0]
	n := 0
	for _, p := range ps {
		if n+len(p) > at {
			if rest := p[:at-n]; rest != "" {
				out = append(out, rest)
			}
			break
		}
		out = append(out, p)
		n += len(p)
	}
	return out, seq
}

// stopSequences reads a stop parameter: a string or an array of strings.
func stopSequences(v gjson.Result) []string {
	if v.Type == gjson.String {
		return []string{v.Str}
	}
	var out []string
	for _, s := range v.Array() {
		out = append(out, s.String())
	}
	return out
}

// thinkingSalt keys the reasoning words apart from the answer's.
const thinkingSalt = 0x7468_696e_6b69_6e67

// thinkingSignature is the signature of an Anthropic thinking block: a
// digest of its text, so that the mock can tell a block that came back
// unchanged from one that did not. It does not depend on the seed, so any
// mock accepts another's blocks, as any server of a provider does.
func thinkingSignature(text string) string {
	sum := sha256.Sum256([]byte("switchyard-mock-thinking\x00" + text))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// callTokens is what a tool call costs in output tokens: a quarter of its
// name and arguments, at least 1.
func callTokens(name string, args []byte) int {
	return max((len(name)+len(args))/4, 1)
}

// splitPieces cuts s into stream deltas at the start of each run of
// spaces, so that they concatenate to s exactly.
func splitPieces(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' && s[i-1] != ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// describeImages is the sentence that answers a request with images:
// "I see 1 image (image/png, 68 bytes)." or "I see 2 images (url; …)."
func describeImages(imgs []image) string {
	var b strings.Builder
	b.WriteString("I see ")
	b.WriteString(strconv.Itoa(len(imgs)))
	if len(imgs) == 1 {
		b.WriteString(" image (")
	} else {
		b.WriteString(" images (")
	}
	for i, im := range imgs {
		if i > 0 {
			b.WriteString("; ")
		}
		if im.source != "" {
			b.WriteString(im.source)
			continue
		}
		b.WriteString(im.mediaType)
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(im.size))
		b.WriteString(" bytes")
	}
	b.WriteString(").")
	return b.String()
}

// containsWord reports whether text has word as a whole word, ignoring
// case ("Parallel," counts, "parallelism" does not).
func containsWord(text, word string) bool {
	notWord := func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}
	for _, f := range strings.FieldsFunc(text, notWord) {
		if strings.EqualFold(f, word) {
			return true
		}
	}
	return false
}
