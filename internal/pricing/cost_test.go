package pricing

import (
	"math"
	"testing"

	"switchyard/internal/config"
)

func TestCost(t *testing.T) {
	p := config.Price{InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}
	tests := []struct {
		name string
		u    Usage
		want float64
	}{
		{"nothing", Usage{}, 0},
		{"input only", Usage{Input: 1_000_000}, 3},
		{"output only", Usage{Output: 1_000_000}, 15},
		{"cache read is part of input", Usage{Input: 1_000_000, CacheRead: 1_000_000}, 0.3},
		{"cache write is part of input", Usage{Input: 1_000_000, CacheWrite: 1_000_000}, 3.75},
		{"every kind", Usage{Input: 2_000_000, Output: 100_000, CacheRead: 500_000, CacheWrite: 250_000},
			1.25*3 + 0.5*0.3 + 0.25*3.75 + 0.1*15},
		{"negative counts count as 0", Usage{Input: -5, Output: -5, CacheRead: -5, CacheWrite: -5}, 0},
		{"cached beyond input never makes plain input negative", Usage{Input: 100, CacheRead: 300}, 300 * 0.3 / 1e6},
		{"small request", Usage{Input: 1234, Output: 56}, (1234*3 + 56*15) / 1e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cost(tc.u, p); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Cost(%+v) = %v, want %v", tc.u, got, tc.want)
			}
		})
	}
}

func TestSource(t *testing.T) {
	tests := []struct {
		src    Source
		want   string
		priced bool
	}{
		{Source{}, "unpriced", false},
		{Source{Kind: KindConfig}, "config", true},
		{Source{Kind: KindCatalogue, Date: "2026-11-01"}, "catalogue 2026-11-01", true},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.src.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if got := tc.src.Priced(); got != tc.priced {
				t.Errorf("Priced() = %v, want %v", got, tc.priced)
			}
		})
	}
}
