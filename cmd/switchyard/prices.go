package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"switchyard/internal/config"
	"switchyard/internal/pricing"
)

func newPricesCmd() *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "prices [--config FILE]",
		Short: "Print the token prices in force for each upstream and model",
		Long: "Print, for each upstream of the configuration file and each model it serves, the price in\n" +
			"USD per million tokens (input, output, cache read, cache write) and where it comes from:\n" +
			"config (price or prices), catalogue DATE (the price catalogue, times price_multiplier) or\n" +
			"unpriced. A pattern of models is followed by the catalogue's models it matches.\n" +
			"Without --config, print the built-in catalogue. See docs/pricing.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfgPath == "" {
				return printCatalogue(cmd.OutOrStdout(), pricing.Builtin())
			}
			cfg, cat, err := loadPriced(cfgPath)
			if err != nil {
				return err
			}
			return printPrices(cmd.OutOrStdout(), pricing.Table(cfg.Upstreams, cat))
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (default: print the built-in catalogue)")
	return cmd
}

// printPrices writes rows as a table; a model a pattern matched is
// indented under it.
func printPrices(out io.Writer, rows []pricing.Row) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UPSTREAM\tMODEL\tINPUT\tOUTPUT\tCACHE_READ\tCACHE_WRITE\tSOURCE")
	for _, r := range rows {
		model := r.Model
		if r.Via != "" {
			model = "  " + model
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Upstream, model, priceColumns(r.Price, r.Source))
	}
	fmt.Fprintln(tw, "(USD per million tokens)")
	return tw.Flush()
}

// printCatalogue writes every model of c with its price.
func printCatalogue(out io.Writer, c *pricing.Catalogue) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tINPUT\tOUTPUT\tCACHE_READ\tCACHE_WRITE\tSOURCE")
	src := pricing.Source{Kind: pricing.KindCatalogue, Date: c.Date()}
	for _, m := range c.Models() {
		p, _ := c.Lookup(m)
		fmt.Fprintf(tw, "%s\t%s\n", m, priceColumns(p, src))
	}
	fmt.Fprintln(tw, "(USD per million tokens)")
	return tw.Flush()
}

// priceColumns is the four prices and the source, tab-separated; "-" for
// the prices of an unpriced model.
func priceColumns(p config.Price, src pricing.Source) string {
	if !src.Priced() {
		return "-\t-\t-\t-\t" + src.String()
	}
	// Rounded to a millionth of a dollar: 0.15 × 0.8 shows as 0.12.
	f := func(x float64) string { return strconv.FormatFloat(math.Round(x*1e6)/1e6, 'f', -1, 64) }
	return f(p.InputPerMTok) + "\t" + f(p.OutputPerMTok) + "\t" + f(p.CacheReadPerMTok) + "\t" + f(p.CacheWritePerMTok) + "\t" + src.String()
}

// unpricedWarnings returns check-config's warning for each unpriced
// (upstream, model): a model name, or a pattern of models that matches no
// model of the catalogue (a pattern that does is listed through those).
func unpricedWarnings(rows []pricing.Row) []string {
	var out []string
	for i, r := range rows {
		if r.Source.Priced() || r.Via != "" {
			continue
		}
		if r.Pattern && i+1 < len(rows) && rows[i+1].Via == r.Model && rows[i+1].Upstream == r.Upstream {
			continue
		}
		what := "model " + strconv.Quote(r.Model)
		if r.Pattern {
			what = "models matching " + strconv.Quote(r.Model)
		}
		out = append(out, fmt.Sprintf("upstream %s: %s unpriced (spend counts its requests as 0, lowest-cost routing sorts it last); "+
			"set upstreams[].price or upstreams[].prices, or list it in the price catalogue (docs/pricing.md)", r.Upstream, what))
	}
	return out
}

// configDir is the directory of the configuration file at path, which a
// relative pricing.catalogue is read from; "" (the working directory) for
// no file (--demo).
// loadPriced loads the configuration file at path and the price catalogue
// it names (a relative file beside it).
func loadPriced(path string) (*config.Config, *pricing.Catalogue, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, fmt.Errorf("loading %s:\n%w", path, err)
	}
	cat, err := pricing.LoadCatalogue(cfg.Pricing.Catalogue, configDir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("loading pricing.catalogue: %w", err)
	}
	return cfg, cat, nil
}

func configDir(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Dir(path)
}
