package affinity

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"switchyard/internal/clock"
)

// Conversation is what the gateway keeps of an OpenAI Responses answer whose
// id no upstream can continue — an answer it translated, or one to a request
// whose history it expanded — so that a later request with that
// previous_response_id can be sent, with the whole history, to any upstream
// (docs/routing.md#responses-chains-the-gateway-keeps).
type Conversation struct {
	// Key is the name of the client key that made the answer; only it may
	// continue the conversation.
	Key string `json:"k"`
	// Items is the whole conversation through the answer: a JSON array of
	// Responses input items (every turn's input, then its output). Empty
	// when Refused says why nothing was kept.
	Items json.RawMessage `json:"i,omitempty"`
	// Refused, when not empty, is why the items were not kept ("the request
	// said store: false", "the conversation exceeds …"): a request that
	// continues it is refused with it.
	Refused string `json:"r,omitempty"`
}

// size is about the bytes c takes.
func (c *Conversation) size() int { return len(c.Key) + len(c.Items) + len(c.Refused) + 64 }

// Conversations keeps the Conversation of each response id it is given, for
// the implementation's TTL (affinity.response_ttl).
//
// The proxy calls Conversation once per Responses request that carries a
// previous_response_id, before planning, and Keep once per answer it must be
// able to continue, before the answer's last event reaches the client (so
// that the next request finds it, on any instance). The admin API calls
// ForgetKey when a client key is deleted. Implementations are safe for
// concurrent use and return quickly; one that cannot reach its backend keeps
// and serves what it holds locally.
type Conversations interface {
	// Keep records c under response id for the TTL from now. An empty or
	// overlong id (MaxStateIDLen) is ignored.
	Keep(ctx context.Context, id string, c Conversation)
	// Conversation returns what is kept under id; ok is false when nothing
	// live is.
	Conversation(ctx context.Context, id string) (c Conversation, ok bool)
	// ForgetKey drops every conversation of the client key named key.
	ForgetKey(ctx context.Context, key string)
}

// Defaults of the conversation bounds (docs/config.md#affinity).
const (
	// DefaultMaxConversations bounds a ConversationTable's entries
	// (affinity.max_conversations).
	DefaultMaxConversations = 10_000
	// DefaultConversationMaxBytes bounds one conversation's items
	// (affinity.conversation_max_bytes): 1 MiB.
	DefaultConversationMaxBytes = 1 << 20
	// ConversationTableBytes bounds the bytes a ConversationTable holds in
	// all: 256 MiB; the least recently used entries go first beyond it.
	ConversationTableBytes = 256 << 20
)

// ConversationTable is the in-process Conversations (state.driver: memory,
// and the fallback of the shared one): at most max entries and
// ConversationTableBytes, the least recently used evicted first, each
// expiring ttl after it was kept. Expiry is lazy, as in PinTable.
type ConversationTable struct {
	clk clock.Clock
	ttl time.Duration

	mu    sync.Mutex                               // guards lru and bytes
	lru   *simplelru.LRU[string, keptConversation] // response id → entry
	bytes int                                      // the sizes of lru's entries
}

var _ Conversations = (*ConversationTable)(nil)

// keptConversation is one entry and its expiry.
type keptConversation struct {
	c       Conversation
	expires time.Time
}

// NewConversationTable returns an empty table of at most max entries (< 1
// means DefaultMaxConversations), each kept ttl (≤ 0 means
// DefaultResponseTTL). clk tells the time (nil means the wall clock).
func NewConversationTable(max int, ttl time.Duration, clk clock.Clock) *ConversationTable {
	if max < 1 {
		max = DefaultMaxConversations
	}
	if ttl <= 0 {
		ttl = DefaultResponseTTL
	}
	if clk == nil {
		clk = clock.Real{}
	}
	t := &ConversationTable{clk: clk, ttl: ttl}
	l, err := simplelru.NewLRU[string, keptConversation](max, func(_ string, e keptConversation) {
		t.bytes -= e.c.size() // called with mu held
	})
	if err != nil {
		panic("affinity: " + err.Error()) // a bug: max is positive
	}
	t.lru = l
	return t
}

// TTL is how long an entry lives.
func (t *ConversationTable) TTL() time.Duration { return t.ttl }

// Keep implements Conversations.
func (t *ConversationTable) Keep(_ context.Context, id string, c Conversation) {
	if id == "" || len(id) > MaxStateIDLen {
		return
	}
	e := keptConversation{c: c, expires: t.clk.Now().Add(t.ttl)}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lru.Remove(id)
	t.lru.Add(id, e)
	t.bytes += c.size()
	for t.bytes > ConversationTableBytes && t.lru.Len() > 1 {
		t.lru.RemoveOldest()
	}
}

// Conversation implements Conversations.
func (t *ConversationTable) Conversation(_ context.Context, id string) (Conversation, bool) {
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.lru.Get(id)
	switch {
	case !ok:
		return Conversation{}, false
	case !now.Before(e.expires):
		t.lru.Remove(id)
		return Conversation{}, false
	}
	return e.c, true
}

// ForgetKey implements Conversations.
func (t *ConversationTable) ForgetKey(_ context.Context, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.lru.Keys() {
		if e, ok := t.lru.Peek(id); ok && e.c.Key == key {
			t.lru.Remove(id)
		}
	}
}

// Len returns how many entries the table holds, expired ones not yet
// dropped included.
func (t *ConversationTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}
