package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/tracing"
)

func newServeCmd() *cobra.Command {
	var (
		cfgPath string
		demo    bool
		listen  string
		grace   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--demo] [--listen ADDR]",
		Short: "Serve the client API",
		Long: "Serve the client API with the configuration in FILE, or with --demo: three in-process\n" +
			"mock upstreams, an embedded SQLite store and a ready client key, no setup needed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cmd, cfgPath, demo, listen, grace)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (switchyard.yaml)")
	cmd.Flags().BoolVar(&demo, "demo", false, "serve a demo: in-process mock upstreams, no keys needed")
	cmd.Flags().StringVar(&listen, "listen", "", "client API address (overrides the config's listen)")
	cmd.Flags().DurationVar(&grace, "grace", 30*time.Second, "how long in-flight requests may finish on SIGTERM")
	return cmd
}

// memoryLimit returns the soft memory limit in bytes for memory_limit_mb,
// or 0 to leave the runtime's: when mb is 0 or GOMEMLIMIT is set.
func memoryLimit(mb int) int64 {
	if mb <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	return int64(mb) << 20
}

func serve(ctx context.Context, cmd *cobra.Command, cfgPath string, demo bool, listen string, grace time.Duration) error {
	var cfg *config.Config
	out := cmd.OutOrStdout()
	switch {
	case demo && cfgPath != "":
		return errors.New("use either --config or --demo, not both")
	case demo:
		if listen == "" {
			listen = "127.0.0.1:8080"
		}
		d, err := gateway.StartDemo(ctx, listen)
		if err != nil {
			return err
		}
		defer d.Cleanup()
		cfg = d.Config
	case cfgPath != "":
		c, err := config.Load(cfgPath)
		if err != nil {
			return fmt.Errorf("loading %s:\n%w", cfgPath, err)
		}
		cfg = c
	default:
		return errors.New("need --config FILE or --demo")
	}
	if listen != "" {
		cfg.Listen = listen
	}
	logger := newLogger(cfg.Log.Level, cfg.Log.Format)
	for _, w := range cfg.Warnings {
		logger.Warn("config", "warning", w.Error())
	}
	if limit := memoryLimit(cfg.MemoryLimitMB); limit > 0 {
		debug.SetMemoryLimit(limit)
		govCtx, stopGov := context.WithCancel(ctx)
		defer stopGov()
		go runMemoryGovernor(govCtx, clock.Real{}, logger, limit)
		logger.Debug("soft memory limit", "mib", cfg.MemoryLimitMB)
	}
	g, err := gateway.New(ctx, cfg, gateway.Options{Logger: logger, Version: version})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = g.Close(context.Background())
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	addr := ln.Addr().String()
	logger.Info("switchyard serving", "addr", addr, "upstreams", len(cfg.Upstreams), "version", version)
	if demo {
		printDemo(out, addr, cfg.Admin.Token)
	}
	serveErr := g.Serve(ctx, ln, grace)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(serveErr, g.Close(closeCtx))
}

func printDemo(out interface{ Write([]byte) (int, error) }, addr, adminToken string) {
	fmt.Fprintf(out, `
Switchyard demo is serving on http://%[1]s
  client key: %[2]s
  models:     %[3]s (3 mock upstreams, 2 tiers), %[4]s (Anthropic Messages API),
              %[6]s (Anthropic, Bedrock, Vertex and OpenAI-compatible upstreams: any SDK, translated),
              %[7]s (Gemini, Vertex and OpenAI upstreams; Gemini clients: /v1beta)
  dashboard:  http://%[1]s/admin/  (admin token: %[5]s)
  metrics:    http://%[1]s/metrics

Try it:
  curl -s http://%[1]s/v1/chat/completions \
    -H 'Authorization: Bearer %[2]s' -H 'Content-Type: application/json' \
    -d '{"model":"%[3]s","messages":[{"role":"user","content":"Hello!"}]}'

  ANTHROPIC_BASE_URL=http://%[1]s ANTHROPIC_API_KEY=%[2]s claude -p --model %[6]s 'Hello!'

Press Ctrl-C to stop.
`, addr, gateway.DemoKey, gateway.DemoOpenAIModel, gateway.DemoAnthropicModel, adminToken, gateway.DemoMixedModel, gateway.DemoGeminiModel)
}

// newLogger returns a logger on stderr at level, one JSON object per line
// or, with format "text", key=value pairs; a line logged within a traced
// request carries its trace_id.
func newLogger(level, format string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewJSONHandler(os.Stderr, opts)
	if format == "text" {
		h = slog.NewTextHandler(os.Stderr, opts)
	}
	return slog.New(tracing.LogHandler(h))
}
