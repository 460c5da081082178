package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchyard/internal/mock"
)

// newMockCmd builds `switchyard mock`: one mock LLM upstream on the network,
// for trying the gateway or testing a client without provider keys.
func newMockCmd() *cobra.Command {
	var (
		listen string
		opts   mock.Options
	)
	cmd := &cobra.Command{
		Use:   "mock",
		Short: "Serve a mock OpenAI/Anthropic upstream",
		Long: `Serve a mock LLM upstream that speaks the OpenAI and Anthropic wire formats
(chat/completions, completions, embeddings, responses, messages, models).

Its behaviour can be changed while it runs:
  curl -X PATCH BASE/_mock/behavior -d '{"error_rate":0.2,"ttft":"500ms"}'
  curl BASE/_mock/stats`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Behavior.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMock(ctx, cmd, listen, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9001", "address to listen on (\":0\" picks a free port)")
	f.StringVar(&opts.Name, "name", "mock", "name sent in the X-Mock-Upstream response header")
	f.DurationVar(&opts.Behavior.Latency, "latency", 0, "delay before each response (before the headers of a stream)")
	f.DurationVar(&opts.Behavior.TTFT, "ttft", 0, "streaming: delay before the first event")
	f.Float64Var(&opts.Behavior.TPS, "tps", 0, "streaming: tokens per second after the first (0 = as fast as possible)")
	f.Float64Var(&opts.Behavior.ErrorRate, "error-rate", 0, "probability (0–1) of answering 500")
	f.IntVar(&opts.Behavior.RPM, "rpm", 0, "requests-per-minute limit, answering 429 beyond it (0 = none)")
	f.IntVar(&opts.Behavior.TPM, "tpm", 0, "tokens-per-minute limit, answering 429 beyond it (0 = none)")
	f.IntVar(&opts.Behavior.CompletionTokens, "completion-tokens", 0, "tokens in each answer (0 = 16)")
	f.Int64Var(&opts.Seed, "seed", 0, "seed for the answers and the error draws")
	f.StringSliceVar(&opts.Models, "models", nil, "models listed by GET /models (default: a few gpt-* and claude-* names)")
	return cmd
}

// runMock serves until ctx ends, then shuts down gracefully.
func runMock(ctx context.Context, cmd *cobra.Command, listen string, opts mock.Options) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	srv := mock.New(opts)
	base := mock.BaseURL(ln.Addr())
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "mock upstream %q listening on %s\n", srv.Name(), base)
	fmt.Fprintf(out, "  OpenAI base_url:    %s/v1\n", base)
	fmt.Fprintf(out, "  Anthropic base_url: %s\n", base)
	fmt.Fprintf(out, "  behavior:           %s/_mock/behavior   stats: %s/_mock/stats\n", base, base)

	start := time.Now()
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(cmd.ErrOrStderr(), "mock upstream %q stopped after %s: %d requests, by status %v\n",
		srv.Name(), time.Since(start).Round(time.Second), st.Requests, st.ByStatus)
	return nil
}
