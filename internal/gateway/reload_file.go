package gateway

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"switchyard/internal/config"
)

// ApplyFile applies cfg, the configuration file read again and validated
// (switchyard serve does it on SIGHUP; docs/reference.md#reloading-the-configuration-file),
// as the admin API applies a change: its upstreams, keys and routes are
// stored as at start, replacing the stored ones of the same name, and
// routing is rebuilt from the store without dropping in-flight requests.
// Elements the file no longer lists stay stored (the admin API deletes
// them), as at a restart. It returns the top-level settings that differ
// from the running ones and apply only at the next start (listen, store,
// defaults, …), for the caller to log.
func (g *Gateway) ApplyFile(ctx context.Context, cfg *config.Config) (restartNeeded []string, err error) {
	if err := g.seedStore(ctx, cfg); err != nil {
		return nil, fmt.Errorf("storing the configuration file's elements: %w", err)
	}
	if err := g.Reload(ctx); err != nil {
		return nil, err
	}
	return staticChanges(g.cfg, cfg), nil
}

// staticChanges returns the yaml keys of the top-level settings of next
// that differ from running's, leaving out the upstreams, keys and routes
// (which apply) and the warnings.
func staticChanges(running, next *config.Config) []string {
	a, b := reflect.ValueOf(*running), reflect.ValueOf(*next)
	var out []string
	for i := range a.NumField() {
		f := a.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "", "-", "upstreams", "keys", "routes":
			continue
		}
		if !f.IsExported() {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}
