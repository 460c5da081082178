package config

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Price is a model's token price on an upstream, in USD per million tokens
// (docs/pricing.md). A plain value: the zero Price is "not set".
type Price struct {
	// InputPerMTok is USD per million input tokens (prompt tokens neither
	// read from nor written to the provider's cache), ≥ 0. Default 0.
	InputPerMTok float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	// OutputPerMTok is USD per million output tokens, ≥ 0. Default 0.
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
	// CacheReadPerMTok is USD per million prompt tokens read from the
	// provider's prompt cache, ≥ 0. Default 0: cache reads are billed at
	// InputPerMTok (see Effective).
	CacheReadPerMTok float64 `yaml:"cache_read_per_mtok" json:"cache_read_per_mtok"`
	// CacheWritePerMTok is USD per million prompt tokens written to the
	// provider's prompt cache, ≥ 0. Default 0: cache writes are billed at
	// InputPerMTok (see Effective).
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok" json:"cache_write_per_mtok"`
}

// Set reports whether any field of p is set (non-zero): an upstream's
// `price` takes part in the price lookup only then.
func (p Price) Set() bool { return p != Price{} }

// Effective returns p with an unset (zero) cache price replaced by the
// input price, so a price that gives only input and output never makes
// cached tokens free. A cache price is unset exactly when it is 0; a
// provider that really charges nothing for cache reads is rare enough
// that it is not expressible.
func (p Price) Effective() Price {
	if p.CacheReadPerMTok == 0 {
		p.CacheReadPerMTok = p.InputPerMTok
	}
	if p.CacheWritePerMTok == 0 {
		p.CacheWritePerMTok = p.InputPerMTok
	}
	return p
}

// Scale returns p with every price multiplied by m.
func (p Price) Scale(m float64) Price {
	return Price{InputPerMTok: p.InputPerMTok * m, OutputPerMTok: p.OutputPerMTok * m,
		CacheReadPerMTok: p.CacheReadPerMTok * m, CacheWritePerMTok: p.CacheWritePerMTok * m}
}

// Pricing is the top-level pricing block (docs/config.md#pricing).
type Pricing struct {
	// Catalogue is where prices come from for an upstream model no
	// `price`/`prices` covers: "builtin" (default; the list prices shipped
	// in the binary, dated), "none", or the path of a YAML or JSON file of
	// the same shape, relative to the configuration file's directory.
	Catalogue string `yaml:"catalogue" json:"catalogue"`
}

// Catalogue names of Pricing.Catalogue that are not files.
const (
	CatalogueBuiltin = "builtin"
	CatalogueNone    = "none"
)

// PricePatterns returns the keys of prices (upstreams[].prices) in match
// order: the first whose Glob matches a client model gives its price.
// Names without glob metacharacters come first (an exact name beats any
// pattern), then patterns longest first (the more specific
// `gpt-4o-mini*` before `gpt-4o*`), ties in byte order.
func PricePatterns(prices map[string]Price) []string {
	keys := make([]string, 0, len(prices))
	for k := range prices {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if ga, gb := IsGlob(a), IsGlob(b); ga != gb {
			return !ga
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	return keys
}

// check validates a price at path: each field a finite amount ≥ 0.
func (p Price) check(v *validator, path string) {
	v.amount(subPath(path, "input_per_mtok"), p.InputPerMTok)
	v.amount(subPath(path, "output_per_mtok"), p.OutputPerMTok)
	v.amount(subPath(path, "cache_read_per_mtok"), p.CacheReadPerMTok)
	v.amount(subPath(path, "cache_write_per_mtok"), p.CacheWritePerMTok)
}

// checkPrices validates an upstream's price, prices and price_multiplier.
func (u *Upstream) checkPrices(v *validator, p func(string) string) {
	u.Price.check(v, p("price"))
	for _, k := range slices.Sorted(maps.Keys(u.Prices)) {
		kp := p("prices." + k)
		if k == "" {
			v.add(p("prices"), "model patterns (keys) must not be empty")
			continue
		}
		if err := checkGlob(k); err != nil {
			v.add(kp, "invalid pattern %q: %v", k, err)
			continue
		}
		if len(u.Models) > 0 && !servesPattern(u.Models, k) {
			v.add(kp, "no pattern in models matches %q, so the price is never used", k)
		}
		u.Prices[k].check(v, kp)
	}
	if m := u.PriceMultiplier; !(m > 0) || math.IsInf(m, 0) {
		v.add(p("price_multiplier"), "must be a number > 0 (1 = list price, 0.8 = 20%% off), got %v", m)
	}
}

// servesPattern reports whether a prices key can match a model the
// upstream serves: a name must be served; a pattern is accepted when it
// matches a served name or is matched by a served pattern, or a served
// pattern is itself a glob (two globs may overlap in ways not worth
// deciding).
func servesPattern(models []string, key string) bool {
	if !IsGlob(key) {
		return MatchAny(models, key)
	}
	for _, m := range models {
		if IsGlob(m) || Glob(key, m) {
			return true
		}
	}
	return false
}

// checkPricing validates the top-level pricing block. A catalogue file is
// read when the gateway starts (pricing.LoadCatalogue), where its
// directory is known.
func (c *Config) checkPricing(v *validator) {
	if c.Pricing.Catalogue == "" {
		v.add("pricing.catalogue", "required; must be %s, %s or the path of a YAML or JSON file",
			CatalogueBuiltin, CatalogueNone)
		return
	}
	switch c.Pricing.Catalogue {
	case CatalogueBuiltin, CatalogueNone:
		return
	}
	if near := suggestValue(c.Pricing.Catalogue, []string{CatalogueBuiltin, CatalogueNone}); len(near) > 0 &&
		!strings.ContainsAny(c.Pricing.Catalogue, "./\\") {
		v.add("pricing.catalogue", "must be %s, %s or the path of a YAML or JSON file; got %q; did you mean %s?",
			CatalogueBuiltin, CatalogueNone, c.Pricing.Catalogue, orList(near))
	}
}

// Problems returns what is wrong with p, each with its field's name as the
// path ("input_per_mtok: must be a number ≥ 0, got -1"): what a catalogue
// file's entries are checked with.
func (p Price) Problems() Errors {
	v := &validator{}
	p.check(v, "")
	return v.errs
}
