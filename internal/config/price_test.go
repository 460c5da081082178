package config

import (
	"math"
	"reflect"
	"testing"
)

// TestValidatePrices has one case per pricing rule: the mutation must
// produce exactly the wanted error, or none.
func TestValidatePrices(t *testing.T) {
	var ok FieldError
	tests := []validateCase{
		{"cache read negative", func(c *Config) { c.Upstreams[0].Price.CacheReadPerMTok = -0.1 },
			FieldError{"upstreams[0].price.cache_read_per_mtok", "must be a number ≥ 0, got -0.1"}},
		{"cache write infinite", func(c *Config) { c.Upstreams[0].Price.CacheWritePerMTok = math.Inf(1) },
			FieldError{"upstreams[0].price.cache_write_per_mtok", "must be a number ≥ 0, got +Inf"}},
		{"prices entry negative", func(c *Config) { c.Upstreams[0].Prices = map[string]Price{"gpt-4o*": {OutputPerMTok: -2}} },
			FieldError{"upstreams[0].prices.gpt-4o*.output_per_mtok", "must be a number ≥ 0, got -2"}},
		{"prices pattern malformed", func(c *Config) { c.Upstreams[1].Prices = map[string]Price{"claude-[": {InputPerMTok: 1}} },
			FieldError{"upstreams[1].prices.claude-[", `invalid pattern "claude-[": syntax error in pattern`}},
		{"prices key empty", func(c *Config) { c.Upstreams[0].Prices = map[string]Price{"": {InputPerMTok: 1}} },
			FieldError{"upstreams[0].prices", "model patterns (keys) must not be empty"}},
		{"prices name not served", func(c *Config) { c.Upstreams[0].Prices = map[string]Price{"gpt-5": {InputPerMTok: 1}} },
			FieldError{"upstreams[0].prices.gpt-5", `no pattern in models matches "gpt-5", so the price is never used`}},
		{"prices glob matching nothing served", func(c *Config) { c.Upstreams[0].Prices = map[string]Price{"claude-*": {InputPerMTok: 1}} },
			FieldError{"upstreams[0].prices.claude-*", `no pattern in models matches "claude-*", so the price is never used`}},
		{"prices glob over served names", func(c *Config) { c.Upstreams[0].Prices = map[string]Price{"gpt-4o*": {InputPerMTok: 1}} }, ok},
		{"prices glob inside a served glob", func(c *Config) { c.Upstreams[1].Prices = map[string]Price{"claude-3*": {InputPerMTok: 1}} }, ok},
		{"price multiplier zero", func(c *Config) { c.Upstreams[0].PriceMultiplier = 0 },
			FieldError{"upstreams[0].price_multiplier", "must be a number > 0 (1 = list price, 0.8 = 20% off), got 0"}},
		{"price multiplier negative", func(c *Config) { c.Upstreams[0].PriceMultiplier = -1 },
			FieldError{"upstreams[0].price_multiplier", "must be a number > 0 (1 = list price, 0.8 = 20% off), got -1"}},
		{"price multiplier NaN", func(c *Config) { c.Upstreams[0].PriceMultiplier = math.NaN() },
			FieldError{"upstreams[0].price_multiplier", "must be a number > 0 (1 = list price, 0.8 = 20% off), got NaN"}},
		{"price multiplier infinite", func(c *Config) { c.Upstreams[0].PriceMultiplier = math.Inf(1) },
			FieldError{"upstreams[0].price_multiplier", "must be a number > 0 (1 = list price, 0.8 = 20% off), got +Inf"}},
		{"price multiplier discount", func(c *Config) { c.Upstreams[0].PriceMultiplier = 0.8 }, ok},
		{"catalogue empty", func(c *Config) { c.Pricing.Catalogue = "" },
			FieldError{"pricing.catalogue", "required; must be builtin, none or the path of a YAML or JSON file"}},
		{"catalogue misspelt", func(c *Config) { c.Pricing.Catalogue = "buitlin" },
			FieldError{"pricing.catalogue", `must be builtin, none or the path of a YAML or JSON file; got "buitlin"; did you mean builtin?`}},
		{"catalogue none", func(c *Config) { c.Pricing.Catalogue = "none" }, ok},
		{"catalogue file", func(c *Config) { c.Pricing.Catalogue = "prices/none.yaml" }, ok},
		{"catalogue bare file name", func(c *Config) { c.Pricing.Catalogue = "catalogue" }, ok},
	}
	runValidateCases(t, tests)
}

func TestParsePrices(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cfg := mustParse(t, minimalUpstream, nil)
		if cfg.Pricing.Catalogue != CatalogueBuiltin || cfg.Upstreams[0].PriceMultiplier != 1 || cfg.Upstreams[0].Prices != nil {
			t.Errorf("catalogue %q, multiplier %v, prices %v; want builtin, 1, none",
				cfg.Pricing.Catalogue, cfg.Upstreams[0].PriceMultiplier, cfg.Upstreams[0].Prices)
		}
	})
	t.Run("every key", func(t *testing.T) {
		cfg := mustParse(t, "pricing: {catalogue: ./prices.json}\n"+minimalUpstream+`    price: {input_per_mtok: 2.5, output_per_mtok: 10, cache_read_per_mtok: 1.25, cache_write_per_mtok: 3}
    prices:
      gpt-4o-mini*: {input_per_mtok: 0.15, output_per_mtok: 0.6, cache_read_per_mtok: 0.075}
    price_multiplier: 0.8
`, nil)
		u := cfg.Upstreams[0]
		want := Upstream{
			Price:           Price{InputPerMTok: 2.5, OutputPerMTok: 10, CacheReadPerMTok: 1.25, CacheWritePerMTok: 3},
			Prices:          map[string]Price{"gpt-4o-mini*": {InputPerMTok: 0.15, OutputPerMTok: 0.6, CacheReadPerMTok: 0.075}},
			PriceMultiplier: 0.8,
		}
		if cfg.Pricing.Catalogue != "./prices.json" || u.Price != want.Price || !reflect.DeepEqual(u.Prices, want.Prices) || u.PriceMultiplier != want.PriceMultiplier {
			t.Errorf("got catalogue %q, price %+v, prices %+v, multiplier %v; want ./prices.json, %+v", cfg.Pricing.Catalogue, u.Price, u.Prices, u.PriceMultiplier, want)
		}
	})
	for _, tc := range []struct {
		name, doc string
		want      Errors
	}{
		{"unknown key in a prices entry", minimalUpstream + "    prices: {gpt-4o: {input_per_mtoks: 1}}\n",
			Errors{{"upstreams[0].prices.gpt-4o.input_per_mtoks", "unknown key; did you mean input_per_mtok?"}}},
		{"unknown key in pricing", "pricing: {catalog: none}\n" + minimalUpstream,
			Errors{{"pricing.catalog", "unknown key; did you mean catalogue?"}}},
		{"multiplier explicitly zero", minimalUpstream + "    price_multiplier: 0\n",
			Errors{{"upstreams[0].price_multiplier", "must be a number > 0 (1 = list price, 0.8 = 20% off), got 0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseErrors(t, tc.doc, nil); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestPricePatterns(t *testing.T) {
	prices := map[string]Price{"*": {}, "gpt-4o*": {}, "gpt-4o-mini": {}, "gpt-?o*": {}, "gpt-4o-mini*": {}, "a": {}}
	want := []string{"gpt-4o-mini", "a", "gpt-4o-mini*", "gpt-4o*", "gpt-?o*", "*"}
	if got := PricePatterns(prices); !reflect.DeepEqual(got, want) {
		t.Errorf("PricePatterns() = %q, want %q", got, want)
	}
}

func TestPriceEffective(t *testing.T) {
	tests := []struct{ in, want Price }{
		{Price{InputPerMTok: 2, OutputPerMTok: 8}, Price{InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 2, CacheWritePerMTok: 2}},
		{Price{InputPerMTok: 3, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}, Price{InputPerMTok: 3, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}},
		{Price{}, Price{}},
	}
	for _, tc := range tests {
		if got := tc.in.Effective(); got != tc.want {
			t.Errorf("%+v.Effective() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
