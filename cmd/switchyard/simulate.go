package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"switchyard/internal/config"
	"switchyard/internal/pricing"
	"switchyard/internal/sim"
)

func newSimulateCmd() *cobra.Command {
	var (
		cfgPath, scenarioPath, outDir string
		seed                          uint64
	)
	cmd := &cobra.Command{
		Use:   "simulate --config FILE --scenario FILE --out DIR [--seed N]",
		Short: "Replay a traffic scenario through the routing in virtual time",
		Long: "Simulate a scenario (traffic phases, sessions, and each upstream provider's latency,\n" +
			"rate limits, errors, outages, brown-outs and hangs) through the gateway's real balancer,\n" +
			"breakers, limits, queues and affinity on a virtual clock: no sockets, no sleeping.\n" +
			"Writes summary.md, summary.json and SVG charts to DIR. The same seed gives the same bytes.\n" +
			"See docs/simulator.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.LoadForSimulation(cfgPath)
			if err != nil {
				return fmt.Errorf("loading %s:\n%w", cfgPath, err)
			}
			cfg.Pricing.Catalogue = pricing.ResolveCatalogue(cfg.Pricing.Catalogue, configDir(cfgPath))
			sc, err := sim.LoadScenario(scenarioPath, cfg)
			if err != nil {
				return fmt.Errorf("loading scenario %s:\n%w", scenarioPath, err)
			}
			if sc.Name == "" {
				sc.Name = strings.TrimSuffix(filepath.Base(scenarioPath), filepath.Ext(scenarioPath))
			}
			if !cmd.Flags().Changed("seed") {
				seed = sc.Seed
			}
			rep, err := sim.Run(cfg, sc, seed)
			if err != nil {
				return err
			}
			if err := rep.WriteDir(outDir); err != nil {
				return err
			}
			o := rep.Summary.Overall
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d requests over %s, %.2f%% succeeded, latency p95 %.0f ms; wrote %s\n",
				sc.Name, o.Requests, sc.Duration, 100*o.SuccessRate, o.LatencyMs.P95, outDir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgPath, "config", "", "gateway configuration file, as for serve (required)")
	f.StringVar(&scenarioPath, "scenario", "", "scenario file (required)")
	f.StringVar(&outDir, "out", "", "output directory, created if missing (required)")
	f.Uint64Var(&seed, "seed", 0, "random seed (default: the scenario's seed, else 1)")
	_ = cmd.MarkFlagRequired("config")
	_ = cmd.MarkFlagRequired("scenario")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
