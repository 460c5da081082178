package affinity

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"switchyard/internal/clock"
	"switchyard/internal/codec"
)

// chatBody returns an OpenAI chat body of about size bytes whose messages
// come first and whose extra top-level fields (tail) come last, the worst
// place for a peek.
func chatBody(size int, tail string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","stream":true,"messages":[`)
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"Turn %d: please summarise the \"design\" section\nand list its rules, one a line."}`, i)
	}
	b.WriteString(`]`)
	b.WriteString(tail)
	b.WriteString(`}`)
	return []byte(b.String())
}

// clientHeaders are the headers of a typical SDK request.
func clientHeaders() http.Header {
	h := http.Header{}
	for k, v := range map[string]string{
		"Authorization": "Bearer sk-test", "Content-Type": "application/json", "Accept": "application/json",
		"User-Agent": "OpenAI/Go 3.0.0", "X-Stainless-Lang": "go", "X-Stainless-Os": "Linux",
		"X-Stainless-Arch": "x64", "X-Stainless-Runtime": "go", "X-Stainless-Retry-Count": "0",
		"Accept-Encoding": "gzip", "Content-Length": "4096",
	} {
		h.Set(k, v)
	}
	return h
}

func BenchmarkExtract(b *testing.B) {
	withHeader := clientHeaders()
	withHeader.Set("X-Session-Id", "sess-0f8fad5b-d9cb-469f")
	anthropic := []byte(`{"model":"claude-sonnet-4","max_tokens":1024,"metadata":{"user_id":"user_` + testHash +
		`_account__session_` + testUUID + `"},"messages":[{"role":"user","content":"hi"}]}`)
	cases := []struct {
		name  string
		proto codec.Family
		h     http.Header
		body  []byte
		want  string
	}{
		{"header_hit_4KB", codec.FamilyOpenAI, withHeader, chatBody(4096, ""), "sess-0f8fad5b-d9cb-469f"},
		{"body_hit_4KB_first_rule_last", codec.FamilyOpenAI, clientHeaders(), chatBody(4096, `,"prompt_cache_key":"pck-123"`), "pck-123"},
		{"body_hit_4KB_third_rule", codec.FamilyOpenAI, clientHeaders(), chatBody(4096, `,"previous_response_id":"resp_123"`), "resp_123"},
		{"anthropic_user_id", codec.FamilyAnthropic, clientHeaders(), anthropic, testUUID},
		{"miss_4KB", codec.FamilyOpenAI, clientHeaders(), chatBody(4096, ""), ""},
		{"miss_64KB", codec.FamilyOpenAI, clientHeaders(), chatBody(64<<10, ""), ""},
	}
	for _, c := range cases {
		if id, _ := Extract(c.proto, c.h, c.body); id != c.want {
			b.Fatalf("%s: Extract = %q, want %q", c.name, id, c.want)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				Extract(c.proto, c.h, c.body)
			}
		})
	}
}

func BenchmarkTableGet(b *testing.B) {
	for _, size := range []int{1000, 10000, 100000} {
		tb := NewTable(size, clock.Real{}) // the production clock
		keys := make([]Key, size)
		for i := range keys {
			keys[i] = Key{APIKey: "team-a", Route: "gpt-4o", Session: fmt.Sprintf("sess-%08d", i)}
			tb.Bind(keys[i], "up-a", DefaultPolicy)
		}
		b.Run(fmt.Sprintf("hit_%d", size), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := tb.Get(keys[i], DefaultPolicy); !ok {
					b.Fatal("miss")
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
		b.Run(fmt.Sprintf("hit_parallel_%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					tb.Get(keys[i], DefaultPolicy)
					if i++; i == len(keys) {
						i = 0
					}
				}
			})
		})
	}
}

func BenchmarkTableBind(b *testing.B) {
	const size = 10000
	tb := NewTable(size, clock.Real{})
	keys := make([]Key, 4*size) // 4× the bound: most Binds evict
	for i := range keys {
		keys[i] = Key{APIKey: "team-a", Route: "gpt-4o", Session: fmt.Sprintf("sess-%08d", i)}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tb.Bind(keys[i], "up-a", DefaultPolicy)
		if i++; i == len(keys) {
			i = 0
		}
	}
}
