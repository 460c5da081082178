package pricing

// Kind says where a price came from.
type Kind uint8

// Kinds of Source. The zero Kind is KindUnpriced.
const (
	// KindUnpriced: no rule and no catalogue entry prices the model. An
	// unpriced request is never free: spend counts it as 0, lowest-cost
	// sorts it last and max_price filters it (docs/pricing.md).
	KindUnpriced Kind = iota
	// KindConfig: the upstream's `prices` or `price`.
	KindConfig
	// KindCatalogue: the catalogue, scaled by price_multiplier.
	KindCatalogue
)

// Source is where a price came from: its Kind and, for the catalogue, the
// catalogue's date.
type Source struct {
	Kind Kind
	// Date is the catalogue's date (YYYY-MM-DD) for KindCatalogue, else "".
	Date string
}

// Priced reports whether the price is known (its Kind is not KindUnpriced).
func (s Source) Priced() bool { return s.Kind != KindUnpriced }

// String returns "unpriced", "config" or "catalogue DATE", as
// `switchyard prices` and the request log show it.
func (s Source) String() string {
	switch s.Kind {
	case KindConfig:
		return "config"
	case KindCatalogue:
		return "catalogue " + s.Date
	}
	return "unpriced"
}
