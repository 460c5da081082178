package pricing

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"switchyard/internal/config"
)

// Catalogue is a dated list of model prices (docs/pricing.md#the-catalogue):
// the built-in one (Builtin) or a file (LoadCatalogue). It is immutable;
// a nil *Catalogue is the empty one (`catalogue: none`).
type Catalogue struct {
	date   string
	prices map[string]config.Price // model name as listed → price, cache prices filled in
	models []string                // the listed names, sorted
}

// catalogueFile is the shape of the embedded catalogue and of a catalogue
// file, YAML or JSON.
type catalogueFile struct {
	// Date is when the prices were read, YYYY-MM-DD. Required.
	Date string `yaml:"date" json:"date"`
	// Models maps a model name to its price in USD per million tokens.
	Models map[string]config.Price `yaml:"models" json:"models"`
}

//go:embed catalogue.yaml
var builtinYAML []byte

// builtin parses the embedded catalogue once; it is immutable afterwards.
var builtin = sync.OnceValue(func() *Catalogue {
	c, err := parseCatalogue(builtinYAML)
	if err != nil {
		panic("pricing: the built-in catalogue is invalid: " + err.Error())
	}
	return c
})

// Builtin returns the catalogue shipped in the binary (catalogue.yaml).
func Builtin() *Catalogue { return builtin() }

// LoadCatalogue returns the catalogue spec names (config.Pricing.Catalogue):
// "builtin" (or "") the built-in one, "none" nil, anything else the YAML or
// JSON file at that path, relative to baseDir (the configuration file's
// directory) unless absolute. A file that cannot be read or parsed, or
// holds an invalid entry, is an error naming the file and the entry.
func LoadCatalogue(spec, baseDir string) (*Catalogue, error) {
	switch spec {
	case "", config.CatalogueBuiltin:
		return Builtin(), nil
	case config.CatalogueNone:
		return nil, nil
	}
	path := ResolveCatalogue(spec, baseDir)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading price catalogue: %w", err)
	}
	c, err := parseCatalogue(data)
	if err != nil {
		return nil, fmt.Errorf("price catalogue %s: %w", path, err)
	}
	return c, nil
}

// ResolveCatalogue returns spec with a relative file path made relative to
// baseDir instead of the working directory; "builtin", "none" and absolute
// paths are returned as they are.
func ResolveCatalogue(spec, baseDir string) string {
	switch spec {
	case "", config.CatalogueBuiltin, config.CatalogueNone:
		return spec
	}
	if filepath.IsAbs(spec) || baseDir == "" {
		return spec
	}
	return filepath.Join(baseDir, spec)
}

// parseCatalogue decodes and checks a catalogue; its errors name the entry
// ("models.gpt-4o.input_per_mtok: …").
func parseCatalogue(data []byte) (*Catalogue, error) {
	var f catalogueFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("parsing: %s", yaml.FormatError(err, false, true))
	}
	var errs []error
	if _, err := time.Parse(time.DateOnly, f.Date); err != nil {
		errs = append(errs, fmt.Errorf("date: must be a date YYYY-MM-DD, got %q", f.Date))
	}
	if len(f.Models) == 0 {
		errs = append(errs, errors.New("models: at least one model price is required"))
	}
	c := &Catalogue{date: f.Date, prices: make(map[string]config.Price, len(f.Models))}
	for name, p := range f.Models {
		c.models = append(c.models, name)
		c.prices[name] = p.Effective()
	}
	sort.Strings(c.models)
	for _, name := range c.models {
		errs = append(errs, checkEntry(name, f.Models[name])...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// checkEntry returns what is wrong with one model's entry.
func checkEntry(name string, p config.Price) []error {
	path := "models." + name
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "*?[") {
		return []error{fmt.Errorf("%s: a model name, not empty and without glob characters", path)}
	}
	if problems := p.Problems(); len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, e := range problems {
			errs[i] = fmt.Errorf("%s.%s", path, e.Error())
		}
		return errs
	}
	if p.InputPerMTok == 0 && p.OutputPerMTok == 0 {
		return []error{fmt.Errorf("%s: input_per_mtok or output_per_mtok is required (a listed model is never free)", path)}
	}
	return nil
}

// Date returns the catalogue's date (YYYY-MM-DD); "" for nil.
func (c *Catalogue) Date() string {
	if c == nil {
		return ""
	}
	return c.date
}

// Models returns the model names the catalogue lists, sorted. The caller
// must not modify the slice.
func (c *Catalogue) Models() []string {
	if c == nil {
		return nil
	}
	return c.models
}

// Lookup returns the listed price of model: the entry named exactly so,
// else the entry of its normalised name (Normalize), with unset cache
// prices at the input price. It does not allocate.
func (c *Catalogue) Lookup(model string) (config.Price, bool) {
	if c == nil {
		return config.Price{}, false
	}
	if p, ok := c.prices[model]; ok {
		return p, true
	}
	if n := Normalize(model); n != model {
		if p, ok := c.prices[n]; ok {
			return p, true
		}
	}
	return config.Price{}, false
}
