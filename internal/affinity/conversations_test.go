package affinity

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
)

// TestConversationTable runs sequences of calls against a table of 3
// entries kept 1h, and checks what each id holds at the end.
func TestConversationTable(t *testing.T) {
	conv := func(key, items string) Conversation { return Conversation{Key: key, Items: []byte(items)} }
	type step struct {
		id      string
		c       Conversation
		advance time.Duration // before the step
		forget  string        // ForgetKey(forget) instead of Keep
		read    string        // Conversation(read) instead of Keep: marks it used
	}
	tests := []struct {
		name  string
		steps []step
		want  map[string]string // id → key of what it holds ("" none)
	}{
		{"kept and read", []step{{id: "r1", c: conv("k1", "[1]")}},
			map[string]string{"r1": "k1", "r2": ""}},
		{"kept again replaces", []step{{id: "r1", c: conv("k1", "[1]")}, {id: "r1", c: conv("k2", "[2]")}},
			map[string]string{"r1": "k2"}},
		{"expires after the TTL", []step{{id: "r1", c: conv("k1", "[1]")}, {id: "r2", c: conv("k1", "[2]"), advance: 30 * time.Minute}, {advance: 30 * time.Minute, read: "r0"}},
			map[string]string{"r1": "", "r2": "k1"}},
		{"least recently used evicted beyond 3", []step{
			{id: "r1", c: conv("k1", "[1]")}, {id: "r2", c: conv("k1", "[2]")}, {id: "r3", c: conv("k1", "[3]")},
			{read: "r1"}, {id: "r4", c: conv("k1", "[4]")}},
			map[string]string{"r1": "k1", "r2": "", "r3": "k1", "r4": "k1"}},
		{"forgetting a key drops its only", []step{
			{id: "r1", c: conv("k1", "[1]")}, {id: "r2", c: conv("k2", "[2]")}, {id: "r3", c: conv("k1", "[3]")}, {forget: "k1"}},
			map[string]string{"r1": "", "r2": "k2", "r3": ""}},
		{"overlong id ignored", []step{{id: strings.Repeat("r", MaxStateIDLen+1), c: conv("k1", "[1]")}},
			map[string]string{strings.Repeat("r", MaxStateIDLen+1): ""}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			tab := NewConversationTable(3, time.Hour, clk)
			for _, s := range tt.steps {
				clk.Advance(s.advance)
				switch {
				case s.forget != "":
					tab.ForgetKey(ctx, s.forget)
				case s.read != "":
					tab.Conversation(ctx, s.read)
				case s.id != "":
					tab.Keep(ctx, s.id, s.c)
				}
			}
			for id, want := range tt.want {
				c, ok := tab.Conversation(ctx, id)
				if ok != (want != "") || c.Key != want {
					t.Errorf("Conversation(%.20s) = %+v %v, want key %q", id, c, ok, want)
				}
			}
		})
	}
}

// The table's byte count follows what it holds through replacements,
// evictions and removals.
func TestConversationTableBytes(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tab := NewConversationTable(2, time.Hour, clk)
	ctx := context.Background()
	c := Conversation{Key: "k", Items: make([]byte, 100)}
	tab.Keep(ctx, "r1", c)
	tab.Keep(ctx, "r1", c)
	tab.Keep(ctx, "r2", c)
	tab.Keep(ctx, "r3", c) // evicts r1
	if got, want := tab.bytes, 2*c.size(); got != want || tab.Len() != 2 {
		t.Fatalf("bytes = %d with %d entries, want %d with 2", got, tab.Len(), want)
	}
	tab.ForgetKey(ctx, "k")
	if tab.bytes != 0 || tab.Len() != 0 {
		t.Fatalf("bytes = %d with %d entries after ForgetKey, want 0 with 0", tab.bytes, tab.Len())
	}
}
