package gateway

import (
	"slices"
	"testing"

	"switchyard/internal/config"
)

// TestStaticChanges: a reloaded file's changes outside upstreams, keys and
// routes are named for the restart warning; those three are not.
func TestStaticChanges(t *testing.T) {
	base := config.Default()
	tests := []struct {
		name string
		edit func(*config.Config)
		want []string
	}{
		{"nothing", func(*config.Config) {}, nil},
		{"upstreams, keys and routes apply", func(c *config.Config) {
			c.Upstreams = []config.Upstream{{Name: "u"}}
			c.Keys = []config.Key{{Name: "k"}}
			c.Routes = []config.Route{{Model: "m"}}
		}, nil},
		{"listen and the store need a restart", func(c *config.Config) {
			c.Listen = "127.0.0.1:9999"
			c.Store.DSN = "other.db"
		}, []string{"listen", "store"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := config.Default()
			tt.edit(&next)
			if got := staticChanges(&base, &next); !slices.Equal(got, tt.want) {
				t.Errorf("staticChanges = %v, want %v", got, tt.want)
			}
		})
	}
}
