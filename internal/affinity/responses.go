package affinity

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"switchyard/internal/clock"
)

// StateRef names a piece of state that one upstream keeps between requests
// and that no other upstream can use: an OpenAI Responses response (which a
// later request continues with previous_response_id) or a conversation. Make
// one with ResponseRef or ConversationRef; the empty StateRef names nothing.
type StateRef string

// MaxStateIDLen bounds the ids a StateRef is made of: a longer id (nothing
// an upstream issues) is neither recorded nor looked up.
const MaxStateIDLen = 256

// ResponseRef names the response id; "" for an empty or overlong id.
func ResponseRef(id string) StateRef { return newRef("response:", id) }

// ConversationRef names the conversation id; "" for an empty or overlong id.
func ConversationRef(id string) StateRef { return newRef("conversation:", id) }

// Kind is "response" or "conversation" ("" for the empty ref).
func (r StateRef) Kind() string {
	kind, _, _ := strings.Cut(string(r), ":")
	return kind
}

// ID is the id the ref was made of.
func (r StateRef) ID() string {
	_, id, _ := strings.Cut(string(r), ":")
	return id
}

func newRef(kind, id string) StateRef {
	if id == "" || len(id) > MaxStateIDLen {
		return ""
	}
	return StateRef(kind + id)
}

// Pins records which upstream holds each piece of state
// (docs/routing.md#stateful-calls-pinned-not-sticky: stateful calls are pinned
// hard), so that a request that refers to it goes to that upstream only. It is
// not an optimisation like the sticky table: a request sent elsewhere fails.
//
// The proxy calls Holder once per request that refers to state, before
// planning, and Pin once per answer that creates or uses state, before the
// answer reaches the client (so that the client's next request finds it,
// on any instance). Implementations are safe for concurrent use and return
// quickly; one that cannot reach its backend serves what it holds locally,
// and a ref it cannot find is unknown: the request is routed normally.
type Pins interface {
	// Pin records that upstream holds refs, for the implementation's TTL
	// from now (a ref pinned again starts a new TTL). Empty refs and an
	// empty upstream are ignored.
	Pin(ctx context.Context, upstream string, refs ...StateRef)
	// Holder returns the upstream that holds the first of refs with a live
	// record, and that ref; ok is false when none has one.
	Holder(ctx context.Context, refs ...StateRef) (upstream string, ref StateRef, ok bool)
}

// DefaultMaxPins bounds a PinTable: about 100 bytes an entry, 10 MB.
const DefaultMaxPins = 100_000

// DefaultResponseTTL is affinity.response_ttl's default.
const DefaultResponseTTL = 24 * time.Hour

// PinTable is the in-process Pins (state.driver: memory, and the fallback of
// the shared one): at most max records, the least recently used evicted
// first, each expiring ttl after it was pinned. Expiry is lazy: an expired
// record is dropped when Holder meets it, or evicted like any other.
type PinTable struct {
	clk clock.Clock
	ttl time.Duration

	mu  sync.Mutex                             // guards lru
	lru *simplelru.LRU[StateRef, pinnedRecord] // ref → record, most recent first
}

var _ Pins = (*PinTable)(nil)

// pinnedRecord is one ref's upstream and expiry.
type pinnedRecord struct {
	upstream string
	expires  time.Time
}

// NewPinTable returns an empty table of at most max records (< 1 means
// DefaultMaxPins), each kept ttl (≤ 0 means DefaultResponseTTL). clk tells
// the time (nil means the wall clock).
func NewPinTable(max int, ttl time.Duration, clk clock.Clock) *PinTable {
	if max < 1 {
		max = DefaultMaxPins
	}
	if ttl <= 0 {
		ttl = DefaultResponseTTL
	}
	if clk == nil {
		clk = clock.Real{}
	}
	l, err := simplelru.NewLRU[StateRef, pinnedRecord](max, nil)
	if err != nil {
		panic("affinity: " + err.Error()) // a bug: max is positive
	}
	return &PinTable{clk: clk, ttl: ttl, lru: l}
}

// TTL is how long a record lives.
func (p *PinTable) TTL() time.Duration { return p.ttl }

// Pin implements Pins.
func (p *PinTable) Pin(_ context.Context, upstream string, refs ...StateRef) {
	if upstream == "" {
		return
	}
	rec := pinnedRecord{upstream: upstream, expires: p.clk.Now().Add(p.ttl)}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range refs {
		if r != "" {
			p.lru.Add(r, rec)
		}
	}
}

// Holder implements Pins.
func (p *PinTable) Holder(_ context.Context, refs ...StateRef) (string, StateRef, bool) {
	now := p.clk.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range refs {
		rec, ok := p.lru.Get(r)
		switch {
		case !ok:
		case !now.Before(rec.expires):
			p.lru.Remove(r)
		default:
			return rec.upstream, r, true
		}
	}
	return "", "", false
}

// Len returns how many records the table holds, expired ones not yet
// dropped included.
func (p *PinTable) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}
