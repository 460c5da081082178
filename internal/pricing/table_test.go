package pricing

import (
	"fmt"
	"reflect"
	"testing"

	"switchyard/internal/config"
)

// TestTable: upstreams and models in configuration order; a pattern is
// followed by the catalogue, model_map and prices names it matches that
// models does not list.
func TestTable(t *testing.T) {
	cat := testCatalogue(t) // m-upstream, m-client
	ups := []config.Upstream{
		{Name: "a", Models: []string{"m-client", "m-*"}, ModelMap: map[string]string{"m-mapped": "m-upstream"},
			Prices: map[string]config.Price{"m-priced": {InputPerMTok: 9}, "m-x*": {InputPerMTok: 8}}},
		{Name: "b", Models: []string{"other-*"}},
	}
	var got []string
	for _, r := range Table(ups, cat) {
		got = append(got, fmt.Sprintf("%s %s via=%q pattern=%v %v %v", r.Upstream, r.Model, r.Via, r.Pattern, r.Price.InputPerMTok, r.Source))
	}
	want := []string{
		`a m-client via="" pattern=false 10 catalogue 2026-01-02`,
		`a m-* via="" pattern=true 0 unpriced`,
		`a m-mapped via="m-*" pattern=false 1 catalogue 2026-01-02`,
		`a m-priced via="m-*" pattern=false 9 config`,
		`a m-upstream via="m-*" pattern=false 1 catalogue 2026-01-02`,
		`b other-* via="" pattern=true 0 unpriced`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Table() =\n%q\nwant\n%q", got, want)
	}
}
