package affinity

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"

	"github.com/cespare/xxhash/v2"

	"switchyard/internal/config"
)

// PrefixSource is the source a prefix binding's id is reported under (the
// decision's affinity.source): the id was derived from the prompt, not
// found in the request (docs/routing.md#prefix-cache-affinity).
const PrefixSource = "prefix"

// prefixIDTag starts every prefix binding's id, which tells it from a
// session's in decisions and the affinity admin API.
const prefixIDTag = "prefix:"

// IsPrefixID reports whether id is a prefix binding's (PrefixID).
func IsPrefixID(id string) bool { return strings.HasPrefix(id, prefixIDTag) }

// Prompt locates the canonical prompt of a request in its body
// (docs/routing.md#prefix-cache-affinity): its tools, its system prompt and
// its messages, each the raw JSON value as the client sent it (absent ones
// empty). Which body field holds each depends on the protocol; see
// PromptField. Fields like model, temperature, max_tokens and stream are no
// part of it. It holds byte offsets, not strings, to stay small in the
// proxy's per-request state.
type Prompt struct {
	parts [numParts]span
}

// span is a half-open byte range of a request body.
type span struct{ off, end uint32 }

// Part is the role of a request body's top-level field in the canonical
// prompt.
type Part uint8

// The parts of a Prompt, in their canonical order.
const (
	PartTools Part = iota
	PartSystem
	PartMessages
	PartNone
)

const numParts = int(PartNone)

// PromptField returns the part of the canonical prompt a top-level body
// field holds, whatever the protocol: tools (Bedrock: toolConfig); system
// (Anthropic, Bedrock), instructions (OpenAI Responses), systemInstruction
// or system_instruction (Gemini); messages (OpenAI Chat, Anthropic,
// Bedrock), input (OpenAI Responses), contents (Gemini). An OpenAI Chat
// system prompt is its first message, so it is part of messages.
func PromptField(name string) Part {
	switch name {
	case "tools", "toolConfig":
		return PartTools
	case "system", "instructions", "systemInstruction", "system_instruction":
		return PartSystem
	case "messages", "input", "contents":
		return PartMessages
	}
	return PartNone
}

// Set records that part k is the raw JSON value at byte offset index of
// the body, as gjson reports a top-level value (Result.Raw and
// Result.Index); a part already set (a repeated key) stays, and PartNone
// is ignored.
func (p *Prompt) Set(k Part, raw string, index int) {
	if k >= PartNone || p.parts[k].end != 0 || raw == "" || index < 0 || index+len(raw) > math.MaxUint32 {
		return
	}
	p.parts[k] = span{uint32(index), uint32(index + len(raw))}
}

// partTags start the parts in the canonical byte sequence, so that the
// same bytes moved from one part to another hash differently.
var partTags = [numParts]byte{1, 2, 3}

// Len is the length of p's canonical byte sequence: each part's tag and
// raw JSON, tools, system, messages.
func (p Prompt) Len() int {
	n := numParts
	for _, s := range p.parts {
		n += int(s.end - s.off)
	}
	return n
}

// PrefixID returns the id a request whose body is body and whose
// canonical prompt p locates in it is bound under with prefix affinity:
// "prefix:" and 16 hex digits of the xxHash64 of the first minTokens×4
// bytes of p's canonical sequence; "" when the sequence is shorter than
// that (minTokens tokens, estimated as bytes/4). Requests whose prompts
// share those bytes get the same id however their later messages, model
// or sampling parameters differ. It reads no more than minTokens×4 bytes
// and allocates only the returned id.
func PrefixID(body []byte, p Prompt, minTokens int) string {
	n := minTokens * 4
	if minTokens <= 0 || p.Len() < n {
		return ""
	}
	var d xxhash.Digest
	d.Reset()
	for i, sp := range p.parts {
		if int(sp.end) > len(body) {
			return "" // not this body's prompt
		}
		for _, b := range [2][]byte{partTags[i : i+1], body[sp.off:sp.end]} {
			if len(b) > n {
				b = b[:n]
			}
			_, _ = d.Write(b)
			n -= len(b)
		}
	}
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], d.Sum64())
	var id [len(prefixIDTag) + 2*len(sum)]byte
	copy(id[:], prefixIDTag)
	hex.Encode(id[len(prefixIDTag):], sum[:])
	return string(id[:])
}

// PrefixPolicy resolves a route's prefix-affinity settings: the route's
// overrides where set, the global block otherwise. The binding's policy
// is the route's session policy (pol, from PolicyFor) with the prefix TTL
// as its sliding TTL; enabled is false when prefix affinity is off for the
// route (affinity itself being on is the caller's check).
func PrefixPolicy(global config.Affinity, route config.RouteAffinity, pol Policy) (prefix Prefix, enabled bool) {
	g, r := global.Prefix, route.Prefix
	enabled = g.Enabled
	if r.Enabled != nil {
		enabled = *r.Enabled
	}
	prefix = Prefix{MinTokens: g.MinTokens, MaxShare: g.MaxShare, Policy: pol}
	prefix.Policy.Sliding = g.TTL
	if r.MinTokens != 0 {
		prefix.MinTokens = r.MinTokens
	}
	if r.MaxShare != 0 {
		prefix.MaxShare = r.MaxShare
	}
	if r.TTL != 0 {
		prefix.Policy.Sliding = r.TTL
	}
	return prefix, enabled
}

// Prefix holds one route's prefix-affinity settings
// (docs/config.md#affinity).
type Prefix struct {
	// MinTokens is affinity.prefix.min_tokens.
	MinTokens int
	// MaxShare is affinity.prefix.max_share.
	MaxShare float64
	// Policy is the bindings' policy: Sliding is affinity.prefix.ttl.
	Policy Policy
}
