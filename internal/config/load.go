package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
)

// FieldError is one problem in a configuration, located by its key path.
type FieldError struct {
	// Path is the dotted key path, e.g. "upstreams[2].weight"; "" for the whole file.
	Path string
	// Msg says what is wrong.
	Msg string
}

func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errors is every problem found in a configuration. It is returned as an
// error by Load; callers print each entry on its own line.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Load reads, expands, defaults and validates the configuration file at path.
// On failure it returns Errors listing every problem found.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, os.LookupEnv)
}

// LoadForSimulation is Load for `switchyard simulate`, whose upstreams are
// never contacted: credentials the gateway would read from elsewhere (a
// Vertex service-account key file) need not be there, so a production
// configuration can be replayed on a laptop.
func LoadForSimulation(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return parse(data, os.LookupEnv, true)
}

// Parse decodes YAML bytes into a Config, expanding ${NAME} in string values
// with lookup, applying defaults and validating. On failure it returns Errors:
// every decoding and validation problem, an error whose value came from an
// unset environment variable saying so. On success, warnings (such as unset
// variables) are in Config.Warnings.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return parse(data, lookup, false)
}

// parse is Parse; simulated validates for a simulation (LoadForSimulation).
func parse(data []byte, lookup func(string) (string, bool), simulated bool) (*Config, error) {
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, Errors{{Msg: "parsing YAML: " + redactSource(yaml.FormatError(err, false, true), data)}}
	}
	if raw == nil {
		return nil, Errors{{Msg: "the file is empty: " + errNoUpstreams}}
	}
	cfg := Default()
	d := decoder{lookup: lookup, cfg: &cfg}
	d.decode(reflect.ValueOf(&cfg).Elem(), raw, "")
	for i := range cfg.Keys { // HashKey yields lowercase; compare like with like
		cfg.Keys[i].KeySHA256 = strings.ToLower(cfg.Keys[i].KeySHA256)
	}
	errs := d.errs
	for _, e := range append(cfg.validate(simulated), cfg.fileRules()...) {
		if !followsFrom(e, d.errs) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, explain(errs, cfg.Warnings)
	}
	return &cfg, nil
}

// errNoUpstreams is the message for a file that configures no upstream.
const errNoUpstreams = "at least one upstream is required; see switchyard.example.yaml"

// fileRules are the checks a configuration file must pass beyond Validate:
// it configures at least one upstream. A configuration built in code (the
// demo, the admin API's edits) is not held to them.
func (c *Config) fileRules() Errors {
	if len(c.Upstreams) == 0 {
		return Errors{{Path: "upstreams", Msg: errNoUpstreams}}
	}
	return nil
}

// explain appends to each error the warnings about the same path, so that
// `keys[0].key: one of key or key_sha256 is required` says which environment
// variable was unset.
func explain(errs, warnings Errors) Errors {
	for i, e := range errs {
		for _, w := range warnings {
			if w.Path == e.Path {
				errs[i].Msg += " (" + w.Msg + ")"
			}
		}
	}
	return errs
}

// followsFrom reports whether validation error e may only be a consequence of
// a decoding error (the field kept its default because its value was
// unusable), so that reporting it would mislead: e is on, above or below a
// path that failed to decode, or e checks a reference to upstream names or
// models (allowed_upstreams, fallback_models) while some failed to decode.
func followsFrom(e FieldError, decodeErrs Errors) bool {
	for _, d := range decodeErrs {
		if related(e.Path, d.Path) {
			return true
		}
		if upstreamsUnknown(d.Path) &&
			(strings.Contains(e.Path, ".allowed_upstreams[") || strings.Contains(e.Path, ".fallback_models[")) {
			return true
		}
	}
	return false
}

// upstreamsUnknown reports whether a decoding error at path leaves upstream
// names or models unknown: the list, an element, a name or a models list.
func upstreamsUnknown(path string) bool {
	if path == "" || path == "upstreams" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "upstreams[")
	if !ok {
		return false
	}
	_, field, _ := strings.Cut(rest, "]")
	return field == "" || field == ".name" || strings.HasPrefix(field, ".models")
}

// related reports whether one path is the other or lies under it.
func related(a, b string) bool {
	under := func(p, parent string) bool {
		return parent == "" || p == parent || strings.HasPrefix(p, parent+".") || strings.HasPrefix(p, parent+"[")
	}
	return under(a, b) || under(b, a)
}
