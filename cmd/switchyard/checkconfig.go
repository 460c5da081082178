package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"switchyard/internal/config"
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
				return fmt.Errorf("%s: %w (%d errors)", args[0], errInvalidConfig, len(errs))
			}
			if err != nil {
				return err
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintln(out, "warning:", w.Error())
			}
			fmt.Fprintf(out, "%s: ok (%d upstreams, %d keys, %d routes)\n", args[0], len(cfg.Upstreams), len(cfg.Keys), len(cfg.Routes))
			return nil
		},
	}
}
