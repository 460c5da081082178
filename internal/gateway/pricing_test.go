package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/gateway"
)

// TestNewLoadsPriceCatalogue: pricing.catalogue is read from the
// configuration's directory when the gateway starts; a bad file stops the
// start with an error naming it and the entry, before the store is opened.
func TestNewLoadsPriceCatalogue(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("date: 2026-01-01\nmodels:\n  m: {input_per_mtok: -3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		catalogue string
		want      []string // in the error
	}{
		{"bad.yaml", []string{"pricing.catalogue", filepath.Join(dir, "bad.yaml"), "models.m.input_per_mtok"}},
		{"missing.yaml", []string{"pricing.catalogue", filepath.Join(dir, "missing.yaml")}},
	} {
		t.Run(tc.catalogue, func(t *testing.T) {
			cfg := config.Default()
			cfg.Store.DSN = filepath.Join(t.TempDir(), "never-opened.db")
			cfg.Pricing.Catalogue = tc.catalogue
			g, err := gateway.New(context.Background(), &cfg, gateway.Options{ConfigDir: dir})
			if err == nil {
				_ = g.Close(context.Background())
				t.Fatal("gateway started; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if _, statErr := os.Stat(cfg.Store.DSN); statErr == nil {
				t.Error("the store was opened before the catalogue was read")
			}
		})
	}
}
