package affinity

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
)

func TestStateRef(t *testing.T) {
	long := strings.Repeat("x", MaxStateIDLen+1)
	tests := []struct {
		name     string
		ref      StateRef
		want     StateRef
		kind, id string
	}{
		{"response", ResponseRef("resp_1"), "response:resp_1", "response", "resp_1"},
		{"conversation", ConversationRef("conv_1"), "conversation:conv_1", "conversation", "conv_1"},
		{"same id, other kind", ConversationRef("resp_1"), "conversation:resp_1", "conversation", "resp_1"},
		{"id with a colon", ResponseRef("a:b"), "response:a:b", "response", "a:b"},
		{"empty id", ResponseRef(""), "", "", ""},
		{"longest id", ResponseRef(long[1:]), StateRef("response:" + long[1:]), "response", long[1:]},
		{"overlong id", ConversationRef(long), "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ref != tt.want || tt.ref.Kind() != tt.kind || tt.ref.ID() != tt.id {
				t.Errorf("ref %q (kind %q, id %q), want %q (%q, %q)", tt.ref, tt.ref.Kind(), tt.ref.ID(), tt.want, tt.kind, tt.id)
			}
		})
	}
}

// pinStep is one step of a PinTable scenario: advance the clock, then pin
// (pin != "") or ask for refs and expect want ("" = unknown).
type pinStep struct {
	advance time.Duration
	pin     string // the upstream to pin refs to
	refs    []StateRef
	want    string
	wantRef StateRef
}

func TestPinTable(t *testing.T) {
	r1, r2, c1 := ResponseRef("resp_1"), ResponseRef("resp_2"), ConversationRef("conv_1")
	const ttl = time.Hour
	tests := []struct {
		name  string
		max   int
		steps []pinStep
	}{
		{"unknown", 10, []pinStep{{refs: []StateRef{r1}}}},
		{"pinned", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{r1, c1}},
			{refs: []StateRef{r1}, want: "up-a", wantRef: r1},
			{refs: []StateRef{c1}, want: "up-a", wantRef: c1},
			{refs: []StateRef{r2}},
		}},
		{"first known ref wins", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{r1}},
			{pin: "up-b", refs: []StateRef{c1}},
			{refs: []StateRef{r2, c1, r1}, want: "up-b", wantRef: c1},
			{refs: []StateRef{r1, c1}, want: "up-a", wantRef: r1},
		}},
		{"kinds do not mix", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{ResponseRef("x")}},
			{refs: []StateRef{ConversationRef("x")}},
		}},
		{"live until the ttl", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{r1}},
			{advance: ttl - time.Nanosecond, refs: []StateRef{r1}, want: "up-a", wantRef: r1},
			{advance: time.Nanosecond, refs: []StateRef{r1}},
		}},
		{"a lookup does not extend the ttl", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{r1}},
			{advance: ttl / 2, refs: []StateRef{r1}, want: "up-a", wantRef: r1},
			{advance: ttl / 2, refs: []StateRef{r1}},
		}},
		{"pinning again starts a new ttl", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{c1}},
			{advance: ttl / 2, pin: "up-a", refs: []StateRef{c1}},
			{advance: ttl / 2, refs: []StateRef{c1}, want: "up-a", wantRef: c1},
			{advance: ttl / 2, refs: []StateRef{c1}},
		}},
		{"expired ref skipped for a live one", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{r1}},
			{advance: ttl / 2, pin: "up-b", refs: []StateRef{c1}},
			{advance: ttl / 2, refs: []StateRef{r1, c1}, want: "up-b", wantRef: c1},
		}},
		{"least recently used evicted", 2, []pinStep{
			{pin: "up-a", refs: []StateRef{r1}},
			{pin: "up-b", refs: []StateRef{r2}},
			{refs: []StateRef{r1}, want: "up-a", wantRef: r1}, // r1 is now the most recent
			{pin: "up-c", refs: []StateRef{c1}},               // evicts r2
			{refs: []StateRef{r2}},
			{refs: []StateRef{r1}, want: "up-a", wantRef: r1},
			{refs: []StateRef{c1}, want: "up-c", wantRef: c1},
		}},
		{"empty refs and upstream ignored", 10, []pinStep{
			{pin: "up-a", refs: []StateRef{"", ResponseRef("")}},
			{refs: []StateRef{""}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			p := NewPinTable(tt.max, ttl, clk)
			ctx := context.Background()
			for i, s := range tt.steps {
				clk.Advance(s.advance)
				if s.pin != "" {
					p.Pin(ctx, s.pin, s.refs...)
					continue
				}
				got, ref, ok := p.Holder(ctx, s.refs...)
				if got != s.want || ref != s.wantRef || ok != (s.want != "") {
					t.Fatalf("step %d: Holder(%q) = (%q, %q, %v), want (%q, %q)", i, s.refs, got, ref, ok, s.want, s.wantRef)
				}
			}
		})
	}
}

func TestPinTableIgnoresEmptyUpstream(t *testing.T) {
	p := NewPinTable(10, time.Hour, clock.NewFake(t0))
	p.Pin(context.Background(), "", ResponseRef("resp_1"))
	if n := p.Len(); n != 0 {
		t.Fatalf("Len = %d after pinning to no upstream, want 0", n)
	}
}

func TestPinTableDefaults(t *testing.T) {
	p := NewPinTable(0, 0, nil)
	if p.TTL() != DefaultResponseTTL {
		t.Errorf("TTL = %s, want %s", p.TTL(), DefaultResponseTTL)
	}
	for i := range DefaultMaxPins + 1 {
		p.Pin(context.Background(), "up", ResponseRef("resp_"+strconv.Itoa(i)))
	}
	if n := p.Len(); n != DefaultMaxPins {
		t.Errorf("Len = %d after %d pins, want the bound %d", n, DefaultMaxPins+1, DefaultMaxPins)
	}
}

// BenchmarkPinTable: a Responses turn's cost in memory, over tables of
// several sizes: one lookup of its previous response and one pin of its
// new one.
func BenchmarkPinTable(b *testing.B) {
	for _, size := range []int{1_000, 100_000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			p := NewPinTable(size, time.Hour, clock.NewFake(t0))
			ctx := context.Background()
			refs := make([]StateRef, size)
			for i := range refs {
				refs[i] = ResponseRef("resp_" + strconv.Itoa(i))
				p.Pin(ctx, "up-a", refs[i])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, _, ok := p.Holder(ctx, refs[i%size]); !ok {
					b.Fatal("miss")
				}
				p.Pin(ctx, "up-a", refs[(i+size/2)%size])
			}
		})
	}
}
