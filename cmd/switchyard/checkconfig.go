package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"switchyard/internal/config"
	"switchyard/internal/pricing"
	"switchyard/internal/provider"
)

// errInvalidConfig makes the command exit 1 after its errors are printed.
var errInvalidConfig = errors.New("configuration is invalid")

func newCheckConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a configuration file and print every error with its path",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			cfg, err := config.Load(args[0])
			var errs config.Errors
			if errors.As(err, &errs) {
				for _, e := range errs {
					fmt.Fprintln(out, e.Error())
				}
				// A blank line sets the count, which main prints on stderr, apart from the list.
				fmt.Fprintln(cmd.ErrOrStderr())
				return fmt.Errorf("%s: %w (%s)", args[0], errInvalidConfig, count(len(errs), "error"))
			}
			if err != nil {
				return err
			}
			cat, err := pricing.LoadCatalogue(cfg.Pricing.Catalogue, configDir(args[0]))
			if err != nil {
				fmt.Fprintln(out, "pricing.catalogue:", err)
				fmt.Fprintln(cmd.ErrOrStderr())
				return fmt.Errorf("%s: %w (%s)", args[0], errInvalidConfig, count(1, "error"))
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintln(out, "warning:", w.Error())
			}
			for _, w := range unpricedWarnings(pricing.Table(cfg.Upstreams, cat)) {
				fmt.Fprintln(out, "warning:", w)
			}
			printCredentialSources(out, cfg)
			if cfg.State.Driver == "redis" {
				fmt.Fprintln(out, cfg.State.Describe())
			}
			fmt.Fprintf(out, "%s: ok (%s, %s, %s)\n", args[0], count(len(cfg.Upstreams), "upstream"),
				count(len(cfg.Keys), "key"), count(len(cfg.Routes), "route"))
			return nil
		},
	}
}

// printCredentialSources prints, for each upstream whose credentials may
// come from the platform or the environment (Bedrock, Vertex, Azure
// OpenAI), where they will come from; never a secret.
func printCredentialSources(out io.Writer, cfg *config.Config) {
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		p, ok := provider.Builtin().Lookup(u.Provider)
		if !ok {
			continue
		}
		if cs, ok := p.(provider.CredentialSourcer); ok {
			if src := cs.CredentialSource(u.Adapter()); src != "" {
				fmt.Fprintf(out, "upstream %s: credentials: %s\n", u.Name, src)
			}
		}
	}
}

// count writes n and the noun, plural unless n is 1: "1 error", "2 errors".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
