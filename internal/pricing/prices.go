package pricing

import (
	"sync"
	"sync/atomic"

	"switchyard/internal/config"
)

// maxCached bounds the client models whose price a Prices remembers; a
// model beyond it is resolved on every Lookup (still correct, no longer
// allocation-free). A client naming more distinct models than this on one
// upstream is an attack or a bug, not traffic to optimise.
const maxCached = 1024

// priced is one resolved lookup.
type priced struct {
	price config.Price
	src   Source
}

// Prices are one upstream's price rules resolved against a catalogue: what
// `price`, `prices` and `price_multiplier` say, for every client model. It
// is immutable but for its cache of resolved models, and safe for
// concurrent use; a nil *Prices prices nothing.
type Prices struct {
	rules    rules
	resolved atomic.Pointer[map[string]priced] // client model → price; replaced whole, never written
	mu       sync.Mutex                        // serialises writers of resolved
}

// rules are an upstream's price settings, as Lookup applies them.
type rules struct {
	patterns   []string                // keys of prices, in config.PricePatterns order
	prices     map[string]config.Price // upstreams[].prices, cache prices filled in
	price      config.Price            // upstreams[].price, cache prices filled in
	priceSet   bool                    // price takes part (any field set)
	modelMap   map[string]string       // client model → upstream model
	multiplier float64                 // applied to catalogue prices
	catalogue  *Catalogue
}

// For resolves u's price rules against c (nil: no catalogue). Every model
// u serves by name (not by glob) is resolved at once; others on their first
// Lookup.
func For(u *config.Upstream, c *Catalogue) *Prices {
	r := rules{
		patterns:   config.PricePatterns(u.Prices),
		prices:     make(map[string]config.Price, len(u.Prices)),
		price:      u.Price.Effective(),
		priceSet:   u.Price.Set(),
		modelMap:   u.ModelMap,
		multiplier: u.PriceMultiplier,
		catalogue:  c,
	}
	if r.multiplier == 0 { // built in code, or stored before the key existed
		r.multiplier = 1
	}
	for k, p := range u.Prices {
		r.prices[k] = p.Effective()
	}
	p := &Prices{rules: r}
	m := make(map[string]priced, len(u.Models)+len(u.ModelMap))
	add := func(model string) {
		if len(m) < maxCached {
			price, src := r.resolve(model)
			m[model] = priced{price, src}
		}
	}
	for _, model := range u.Models {
		if !config.IsGlob(model) {
			add(model)
		}
	}
	for model := range u.ModelMap {
		add(model)
	}
	p.resolved.Store(&m)
	return p
}

// Lookup returns the price of clientModel on the upstream and where it
// came from, first found (docs/pricing.md#lookup):
//
//  1. the `prices` entry matching clientModel (config.PricePatterns order);
//  2. `price`, when any of its fields is set;
//  3. the catalogue's entry for the upstream model (after model_map), ×
//     price_multiplier;
//  4. the catalogue's entry for clientModel, × price_multiplier;
//  5. unpriced (the zero Price).
//
// An unset cache price is the input price (config.Price.Effective). Once a
// model has been seen, Lookup does not allocate.
func (p *Prices) Lookup(clientModel string) (config.Price, Source) {
	if p == nil {
		return config.Price{}, Source{}
	}
	if e, ok := (*p.resolved.Load())[clientModel]; ok {
		return e.price, e.src
	}
	price, src := p.rules.resolve(clientModel)
	p.remember(clientModel, priced{price, src})
	return price, src
}

// remember adds a resolved model to the cache, copying it (readers never
// lock), unless the cache is full.
func (p *Prices) remember(model string, e priced) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := *p.resolved.Load()
	if _, ok := old[model]; ok || len(old) >= maxCached {
		return
	}
	m := make(map[string]priced, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[model] = e
	p.resolved.Store(&m)
}

// resolve applies the lookup order of Lookup.
func (r *rules) resolve(clientModel string) (config.Price, Source) {
	if price, ok := r.prices[clientModel]; ok {
		return price, Source{Kind: KindConfig}
	}
	for _, pat := range r.patterns {
		if config.Glob(pat, clientModel) {
			return r.prices[pat], Source{Kind: KindConfig}
		}
	}
	if r.priceSet {
		return r.price, Source{Kind: KindConfig}
	}
	upstreamModel := clientModel
	if m, ok := r.modelMap[clientModel]; ok {
		upstreamModel = m
	}
	if price, ok := r.catalogue.Lookup(upstreamModel); ok {
		return price.Scale(r.multiplier), Source{Kind: KindCatalogue, Date: r.catalogue.Date()}
	}
	if upstreamModel != clientModel {
		if price, ok := r.catalogue.Lookup(clientModel); ok {
			return price.Scale(r.multiplier), Source{Kind: KindCatalogue, Date: r.catalogue.Date()}
		}
	}
	return config.Price{}, Source{}
}
