package pricing

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"switchyard/internal/config"
)

// testCatalogue lists m-upstream at 1/2 and m-client at 10/20.
func testCatalogue(t testing.TB) *Catalogue {
	t.Helper()
	c, err := parseCatalogue([]byte(`
date: 2026-01-02
models:
  m-upstream: {input_per_mtok: 1, output_per_mtok: 2, cache_read_per_mtok: 0.1, cache_write_per_mtok: 1.25}
  m-client: {input_per_mtok: 10, output_per_mtok: 20}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLookupPrecedence(t *testing.T) {
	cat := testCatalogue(t)
	configSrc := Source{Kind: KindConfig}
	catSrc := Source{Kind: KindCatalogue, Date: "2026-01-02"}
	glob := config.Price{InputPerMTok: 7, OutputPerMTok: 8, CacheReadPerMTok: 0.7}
	flat := config.Price{InputPerMTok: 5, OutputPerMTok: 6}
	tests := []struct {
		name      string
		u         config.Upstream
		model     string
		want      config.Price
		wantSrc   Source
		wantPrice bool
	}{
		{
			name:  "prices glob before price and catalogue",
			u:     config.Upstream{Prices: map[string]config.Price{"m-*": glob}, Price: flat, ModelMap: map[string]string{"m-client": "m-upstream"}},
			model: "m-client", want: config.Price{InputPerMTok: 7, OutputPerMTok: 8, CacheReadPerMTok: 0.7, CacheWritePerMTok: 7}, wantSrc: configSrc,
		},
		{
			name:  "price when no prices pattern matches",
			u:     config.Upstream{Prices: map[string]config.Price{"other-*": glob}, Price: flat, ModelMap: map[string]string{"m-client": "m-upstream"}},
			model: "m-client", want: config.Price{InputPerMTok: 5, OutputPerMTok: 6, CacheReadPerMTok: 5, CacheWritePerMTok: 5}, wantSrc: configSrc,
		},
		{
			name:  "price with only a cache field set still counts as set",
			u:     config.Upstream{Price: config.Price{CacheReadPerMTok: 0.5}},
			model: "m-client", want: config.Price{CacheReadPerMTok: 0.5}, wantSrc: configSrc,
		},
		{
			name:  "catalogue by upstream model after model_map",
			u:     config.Upstream{ModelMap: map[string]string{"m-client": "m-upstream"}},
			model: "m-client", want: config.Price{InputPerMTok: 1, OutputPerMTok: 2, CacheReadPerMTok: 0.1, CacheWritePerMTok: 1.25}, wantSrc: catSrc,
		},
		{
			name:  "catalogue by client model when the upstream model is not listed",
			u:     config.Upstream{ModelMap: map[string]string{"m-client": "deployment-7"}},
			model: "m-client", want: config.Price{InputPerMTok: 10, OutputPerMTok: 20, CacheReadPerMTok: 10, CacheWritePerMTok: 10}, wantSrc: catSrc,
		},
		{
			name:  "catalogue by normalised upstream model",
			u:     config.Upstream{ModelMap: map[string]string{"x": "us.vendor.m-upstream-20250101-v1:0"}},
			model: "x", want: config.Price{InputPerMTok: 1, OutputPerMTok: 2, CacheReadPerMTok: 0.1, CacheWritePerMTok: 1.25}, wantSrc: catSrc,
		},
		{
			name:  "multiplier scales catalogue prices",
			u:     config.Upstream{PriceMultiplier: 0.5},
			model: "m-upstream", want: config.Price{InputPerMTok: 0.5, OutputPerMTok: 1, CacheReadPerMTok: 0.05, CacheWritePerMTok: 0.625}, wantSrc: catSrc,
		},
		{
			name:  "multiplier leaves price alone",
			u:     config.Upstream{Price: flat, PriceMultiplier: 0.5},
			model: "m-upstream", want: config.Price{InputPerMTok: 5, OutputPerMTok: 6, CacheReadPerMTok: 5, CacheWritePerMTok: 5}, wantSrc: configSrc,
		},
		{
			name:  "multiplier leaves prices alone",
			u:     config.Upstream{Prices: map[string]config.Price{"m-upstream": glob}, PriceMultiplier: 3},
			model: "m-upstream", want: config.Price{InputPerMTok: 7, OutputPerMTok: 8, CacheReadPerMTok: 0.7, CacheWritePerMTok: 7}, wantSrc: configSrc,
		},
		{
			name:  "a prices entry of zeros is a price: the catalogue's is not used",
			u:     config.Upstream{Prices: map[string]config.Price{"*": {}}},
			model: "m-upstream", want: config.Price{}, wantSrc: configSrc,
		},
		{
			name:  "a price of zeros is not set: the catalogue's is used",
			u:     config.Upstream{Price: config.Price{}},
			model: "m-client", want: config.Price{InputPerMTok: 10, OutputPerMTok: 20, CacheReadPerMTok: 10, CacheWritePerMTok: 10}, wantSrc: catSrc,
		},
		{
			name:  "unpriced",
			u:     config.Upstream{ModelMap: map[string]string{"x": "y"}},
			model: "x", wantSrc: Source{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.u.Models = []string{"*"}
			p := For(&tc.u, cat)
			for i := range 2 { // resolved, then cached
				got, src := p.Lookup(tc.model)
				if got != tc.want || src != tc.wantSrc {
					t.Errorf("lookup %d: Lookup(%q) = %+v, %v; want %+v, %v", i, tc.model, got, src, tc.want, tc.wantSrc)
				}
			}
		})
	}
}

func TestLookupWithoutCatalogue(t *testing.T) {
	u := config.Upstream{Models: []string{"gpt-4o"}}
	if _, src := For(&u, nil).Lookup("gpt-4o"); src.Priced() {
		t.Errorf("no catalogue: source %v, want unpriced", src)
	}
	if _, src := For(&u, Builtin()).Lookup("gpt-4o"); src.Kind != KindCatalogue {
		t.Errorf("built-in catalogue: source %v, want the catalogue", src)
	}
	var nilPrices *Prices
	if p, src := nilPrices.Lookup("gpt-4o"); src.Priced() || p != (config.Price{}) {
		t.Errorf("nil Prices: %+v, %v; want unpriced", p, src)
	}
}

func TestPricesPatternOrder(t *testing.T) {
	price := func(n float64) config.Price { return config.Price{InputPerMTok: n, OutputPerMTok: n} }
	u := config.Upstream{Models: []string{"*"}, Prices: map[string]config.Price{
		"gpt-4o*":      price(1),
		"gpt-4o-mini*": price(2),
		"gpt-4o-mini":  price(3),
		"gpt-?o*":      price(4),
		"*":            price(5),
		"a*":           price(6),
		"b*":           price(7),
		"[ab]*":        price(8),
	}}
	tests := []struct {
		model string
		want  float64
	}{
		{"gpt-4o-mini", 3},            // exact before any glob
		{"gpt-4o-mini-2024-07-18", 2}, // the longest matching glob
		{"gpt-4o-2024-08-06", 1},      // "gpt-4o*" and "gpt-?o*" are as long: byte order
		{"gpt-3o", 4},                 //
		{"other", 5},                  // the catch-all, last
		{"abc", 8},                    // "[ab]*" is longer than "a*"
		{"org/gpt-4o", 5},             // '*' crosses '/'
	}
	p := For(&u, Builtin())
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			got, src := p.Lookup(tc.model)
			if got.InputPerMTok != tc.want || src.Kind != KindConfig {
				t.Errorf("Lookup(%q) = %v from %v, want %v from config", tc.model, got.InputPerMTok, src, tc.want)
			}
		})
	}
}

// TestLookupAllocs: a model the upstream names, and one it serves through a
// glob once seen, cost no allocation.
func TestLookupAllocs(t *testing.T) {
	u := config.Upstream{Models: []string{"gpt-4o", "claude-*"}, ModelMap: map[string]string{"gpt-4o": "gpt-4o-2024-08-06"},
		Prices: map[string]config.Price{"claude-3*": {InputPerMTok: 1}}}
	p := For(&u, Builtin())
	p.Lookup("claude-sonnet-4-20250514")
	for _, model := range []string{"gpt-4o", "claude-sonnet-4-20250514", "claude-3-5-haiku"} {
		p.Lookup(model)
		if n := testing.AllocsPerRun(100, func() { p.Lookup(model) }); n != 0 {
			t.Errorf("Lookup(%q): %v allocations, want 0", model, n)
		}
	}
}

// TestLookupBoundedCache: models beyond the cache's bound are still priced
// right, concurrent lookups of new models race nothing, and the cache
// stops growing at its bound.
func TestLookupBoundedCache(t *testing.T) {
	u := config.Upstream{Models: []string{"*"}, Prices: map[string]config.Price{"even-*": {InputPerMTok: 2}}}
	p := For(&u, Builtin())
	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	for g := range 4 {
		ns := make([]int, 2*maxCached)
		for i := range ns {
			ns[i] = rng.IntN(1 << 20)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range ns {
				model, want := fmt.Sprintf("odd-%d-%d", g, n), 0.0
				if n%2 == 0 {
					model, want = fmt.Sprintf("even-%d-%d", g, n), 2
				}
				if price, src := p.Lookup(model); price.InputPerMTok != want || src.Priced() != (want > 0) {
					t.Errorf("Lookup(%q) = %v, %v; want input %v", model, price.InputPerMTok, src, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := len(*p.resolved.Load()); n != maxCached {
		t.Errorf("cache holds %d models, want %d (its bound)", n, maxCached)
	}
}

// BenchmarkLookup measures the hot path: the price of a request's model.
func BenchmarkLookup(b *testing.B) {
	u := config.Upstream{Models: []string{"gpt-4o", "claude-*"}, ModelMap: map[string]string{"gpt-4o": "gpt-4o-2024-08-06"},
		Prices: map[string]config.Price{"claude-3*": {InputPerMTok: 1}, "claude-opus*": {InputPerMTok: 2}}}
	p := For(&u, Builtin())
	for _, model := range []string{"gpt-4o", "us.anthropic.claude-sonnet-4-20250514-v1:0"} {
		b.Run(model, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Lookup(model)
			}
		})
	}
}
