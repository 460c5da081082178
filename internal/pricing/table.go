package pricing

import (
	"slices"

	"switchyard/internal/config"
)

// Row is one line of the price table in force (`switchyard prices`): the
// price of a model on an upstream, and where it came from.
type Row struct {
	// Upstream is the upstream's name.
	Upstream string
	// Model is a client model name, or a pattern of upstreams[].models.
	Model string
	// Pattern says Model is a pattern; it is priced as a client model of
	// that name would be (an exact `prices` key, then `price`).
	Pattern bool
	// Via is, for a model listed because a pattern of models matches it,
	// that pattern; "" otherwise.
	Via    string
	Price  config.Price
	Source Source
}

// Table returns the prices in force for ups over catalogue c, upstreams and
// their models in configuration order. A pattern of models is followed by
// the names it matches among the catalogue's models and the upstream's
// model_map and `prices` keys, in byte order, unless models lists the name
// itself.
func Table(ups []config.Upstream, c *Catalogue) []Row {
	var rows []Row
	for i := range ups {
		u := &ups[i]
		p := For(u, c)
		row := func(model, via string) Row {
			price, src := p.Lookup(model)
			return Row{Upstream: u.Name, Model: model, Pattern: via == "" && config.IsGlob(model), Via: via, Price: price, Source: src}
		}
		for _, m := range u.Models {
			rows = append(rows, row(m, ""))
			if !config.IsGlob(m) {
				continue
			}
			for _, name := range matchedNames(u, c, m) {
				rows = append(rows, row(name, m))
			}
		}
	}
	return rows
}

// matchedNames returns the model names pattern matches that u does not
// list by name: from c's models, u's model_map and u's `prices` keys.
func matchedNames(u *config.Upstream, c *Catalogue, pattern string) []string {
	var out []string
	add := func(name string) {
		if !config.IsGlob(name) && config.Glob(pattern, name) && !slices.Contains(u.Models, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, name := range c.Models() {
		add(name)
	}
	for name := range u.ModelMap {
		add(name)
	}
	for name := range u.Prices {
		add(name)
	}
	slices.Sort(out)
	return out
}
