package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/pricing"
	"switchyard/internal/proxy"
	"switchyard/internal/state"
)

func newExplainCmd() *cobra.Command {
	var (
		cfgPath string
		req     proxy.ExplainRequest
		headers []string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "explain --config FILE --model M [--session S] [--stream] [--key NAME] [--input-tokens N] [--max-tokens N] [--provider JSON] [--header K=V]... [--tools] [--json]",
		Short: "Show the routing decision a request would get, without sending it",
		Long: "Compute a dry-run routing decision from the configuration file: the tiers, the filter\n" +
			"that dropped each candidate and why, each strategy score component and the final order;\n" +
			"with lowest-cost (or --provider '{\"sort\":\"price\"}') each candidate's estimated cost;\n" +
			"the route's rule that applies to a request with these --header, --key, --input-tokens,\n" +
			"--stream and --tools.\n" +
			"Live state (breakers, in-flight counts, latencies) starts empty, as after a restart.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.Header, err = proxy.ExplainHeaders(headers); err != nil {
				return fmt.Errorf("--%w", err)
			}
			cfg, cat, err := loadPriced(cfgPath)
			if err != nil {
				return err
			}
			return explain(cmd.Context(), cmd.OutOrStdout(), cfg, cat, req, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgPath, "config", "", "configuration file (required)")
	f.StringVar(&req.Model, "model", "", "client model name (required)")
	f.StringVar(&req.Session, "session", "", "session id")
	f.BoolVar(&req.Stream, "stream", false, "plan for a streaming request")
	f.StringVar(&req.Key, "key", "", "only what this client key (by name) may use")
	f.Int64Var(&req.InputTokens, "input-tokens", 1000, "the request's estimated prompt tokens, for cost estimates")
	f.Int64Var(&req.MaxTokens, "max-tokens", 0, "the request's max_tokens (0: not given), for cost estimates")
	f.StringVar(&req.Provider, "provider", "", `routing preferences as JSON, as in a request's "provider" field`)
	f.StringArrayVar(&headers, "header", nil, "a request header NAME=VALUE for the route's rules (repeatable)")
	f.BoolVar(&req.Tools, "tools", false, "the request declares tools, for the route's rules")
	f.BoolVar(&asJSON, "json", false, "print the decision as JSON")
	_ = cmd.MarkFlagRequired("config")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

func explain(ctx context.Context, out io.Writer, cfg *config.Config, prices *pricing.Catalogue, req proxy.ExplainRequest, asJSON bool) error {
	clk := clock.Real{}
	cat, err := proxy.NewCatalog(proxy.CatalogInput{
		Upstreams: cfg.Upstreams, Keys: cfg.Keys, Routes: cfg.Routes, Defaults: cfg.Defaults, Seed: 1, Now: clk.Now,
		Catalogue: prices,
	})
	if err != nil {
		return err
	}
	live := state.NewLocal(state.LocalOptions{Clock: clk, Breakers: health.NewBreakers(cfg.Circuit, clk)})
	srv := proxy.New(proxy.Options{Clock: clk, State: live}, cat)
	d, err := srv.Explain(ctx, req)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding decision: %w", err)
	}
	if asJSON {
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
	var v decisionView
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("reading decision: %w", err)
	}
	return v.render(out)
}

// decisionView is the part of a Decision's JSON the table shows.
type decisionView struct {
	Model     string `json:"model"`
	Key       string `json:"key"`
	Session   string `json:"session"`
	Stream    bool   `json:"stream"`
	Strategy  string `json:"strategy"`
	Rule      string `json:"rule"`
	Rerouted  string `json:"rerouted_by"`
	ElapsedNs int64  `json:"elapsed_ns"`
	Order     []string
	Waitable  []string
	Chosen    string
	Tiers     []struct {
		Priority   int
		Candidates []struct {
			Name   string
			Weight int
			Filter string
			Reason string
			Scores map[string]float64
			Rank   int
		}
	}
}

func (v decisionView) render(out io.Writer) error {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fmt.Fprintf(out, "model %s  strategy %s  session %s  stream %t  key %s\n", v.Model, v.Strategy, dash(v.Session), v.Stream, dash(v.Key))
	if v.Rerouted != "" {
		fmt.Fprintf(out, "re-routed by %s\n", v.Rerouted)
	}
	if v.Rule != "" {
		fmt.Fprintf(out, "rule: %s\n", v.Rule)
	}
	fmt.Fprintf(out, "order: %s  (chosen: %s)\n", dash(strings.Join(v.Order, " → ")), dash(v.Chosen))
	if len(v.Waitable) > 0 {
		fmt.Fprintf(out, "waitable: %s\n", strings.Join(v.Waitable, ", "))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	costs := v.hasCosts()
	head := "TIER\tUPSTREAM\tWEIGHT\tRANK\tFILTER\tREASON\t"
	if costs {
		head += "EST. COST\t"
	}
	fmt.Fprintln(tw, head+"SCORES")
	for _, t := range v.Tiers {
		for _, c := range t.Candidates {
			rank := "-"
			if c.Rank > 0 {
				rank = strconv.Itoa(c.Rank)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t", t.Priority, c.Name, c.Weight, rank, dash(c.Filter), dash(c.Reason))
			if costs {
				fmt.Fprintf(tw, "%s\t", costText(c.Scores))
			}
			fmt.Fprintf(tw, "%s\n", scoreText(c.Scores))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "\nplanned in %s\n", time.Duration(v.ElapsedNs))
	return err
}

// hasCosts reports whether the strategy estimated costs (lowest-cost, or a
// price sort), so the table shows them in a column of their own.
func (v decisionView) hasCosts() bool {
	for _, t := range v.Tiers {
		for _, c := range t.Candidates {
			if _, ok := c.Scores["estimated_cost_usd"]; ok {
				return true
			}
			if _, ok := c.Scores["unpriced"]; ok {
				return true
			}
		}
	}
	return false
}

// costText is a candidate's estimated cost in USD, "unpriced", or "-" when
// it was not estimated (filtered out).
func costText(scores map[string]float64) string {
	if usd, ok := scores["estimated_cost_usd"]; ok {
		return "$" + strconv.FormatFloat(usd, 'f', 6, 64)
	}
	if scores["unpriced"] == 1 {
		return "unpriced"
	}
	return "-"
}

// scoreText renders score components as sorted name=value pairs.
func scoreText(scores map[string]float64) string {
	if len(scores) == 0 {
		return "-"
	}
	names := make([]string, 0, len(scores))
	for n := range scores {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatFloat(scores[n], 'g', 4, 64)
	}
	return strings.Join(parts, " ")
}
