package config

import (
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary YAML to Parse. It checks that Parse does not
// panic; that it returns a Config or an error, never both nor neither; that
// a Config it returns passes Validate; and that an error is a non-empty
// Errors whose every entry has a message.
func FuzzParse(f *testing.F) {
	f.Add(minimalUpstream)
	f.Add("upstreams: [{name: a, base_url: '${BASE_URL}', models: [x]}]\n")
	f.Add("keys:\n  - name: k\n    key: ${UNSET}\n")
	f.Fuzz(func(t *testing.T, data string) {
		lookup := env(map[string]string{"BASE_URL": "http://127.0.0.1:9000/v1", "OPENAI_API_KEY": "sk-test", "EMPTY": ""})
		cfg, err := Parse([]byte(data), lookup)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse() = %v, %v", cfg, err)
		}
		if err == nil {
			if errs := cfg.Validate(); len(errs) > 0 {
				t.Fatalf("Parse() succeeded but Validate() = %v", errs)
			}
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("Parse() error %T %v, want non-empty Errors", err, err)
		}
		for i, e := range es {
			if e.Msg == "" {
				t.Fatalf("error %d at %q has no message", i, e.Path)
			}
		}
	})
}
