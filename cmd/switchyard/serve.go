package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/state"
	"switchyard/internal/tracing"
)

func newServeCmd() *cobra.Command {
	var (
		cfgPath    string
		demo       bool
		listen     string
		adminToken string
		grace      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--demo [--admin-token T]] [--listen ADDR]",
		Short: "Serve the client API",
		Long: "Serve the client API with the configuration in FILE, or with --demo: three in-process\n" +
			"mock upstreams, an embedded SQLite store and a ready client key, no setup needed. The demo's\n" +
			"admin token is the same at every start: it is kept in $XDG_STATE_HOME/switchyard-demo\n" +
			"(~/.switchyard/demo without XDG_STATE_HOME), unless --admin-token sets one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cmd, cfgPath, demo, adminToken, listen, grace)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (switchyard.yaml)")
	cmd.Flags().BoolVar(&demo, "demo", false, "serve a demo: in-process mock upstreams, no keys needed")
	cmd.Flags().StringVar(&listen, "listen", "", "client API address (overrides the config's listen)")
	cmd.Flags().StringVar(&adminToken, "admin-token", "", "the demo's admin token (default: the one kept between starts)")
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

func serve(ctx context.Context, cmd *cobra.Command, cfgPath string, demo bool, adminToken, listen string, grace time.Duration) error {
	var (
		cfg *config.Config
		d   *gateway.Demo
	)
	out := cmd.OutOrStdout()
	switch {
	case demo && cfgPath != "":
		return errors.New("use either --config or --demo, not both")
	case adminToken != "" && !demo:
		return errors.New("--admin-token is for --demo; with --config the file's admin.token applies")
	case demo:
		var err error
		if d, err = startDemo(ctx, listen, adminToken); err != nil {
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
	logger := newLogger(cmd.ErrOrStderr(), cfg.Log.Level, cfg.Log.Format)
	state.LogRedisClient(logger) // go-redis's own lines (a Sentinel naming a new primary) as ours
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
	g, err := gateway.New(ctx, cfg, gateway.Options{Logger: logger, Version: version, ConfigDir: configDir(cfgPath)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = g.Close(context.Background())
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	addr := ln.Addr().String()
	stopReload := reloadOnHangup(ctx, logger, g, cfgPath)
	defer stopReload()
	logServing(logger, addr, cfg)
	if d != nil {
		printDemo(out, addr, cfg.Admin.Token, d.TokenFile, cfg.Upstreams)
	}
	serveErr := g.Serve(ctx, ln, grace)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(serveErr, g.Close(closeCtx))
}

// reloadOnHangup reloads the configuration file at path on each SIGHUP
// until ctx ends or the returned stop is called
// (docs/reference.md#reloading-the-configuration-file): the file is
// loaded and validated as at start; a file with errors is refused, each
// error logged, and the running configuration kept; a valid one is
// applied as an admin API change (Gateway.ApplyFile). Without a file
// (serve --demo) a SIGHUP is logged and ignored rather than ending the
// process. SIGHUP is caught from the moment this returns.
func reloadOnHangup(ctx context.Context, logger *slog.Logger, g *gateway.Gateway, path string) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if path == "" {
					logger.Warn("SIGHUP ignored: serve --demo has no configuration file to reload; change it through the admin API")
					continue
				}
				reloadFile(ctx, logger, g, path)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// reloadFile loads, validates and applies the configuration file once,
// logging the outcome.
func reloadFile(ctx context.Context, logger *slog.Logger, g *gateway.Gateway, path string) {
	cfg, err := config.Load(path)
	if errs, ok := errors.AsType[config.Errors](err); ok {
		for _, e := range errs {
			logger.Error("config reload refused", "file", path, "error", e.Error())
		}
		logger.Error("config reload refused: the running configuration is kept", "file", path, "errors", len(errs))
		return
	}
	if err != nil {
		logger.Error("config reload refused: the running configuration is kept", "file", path, "err", err)
		return
	}
	for _, w := range cfg.Warnings {
		logger.Warn("config", "warning", w.Error())
	}
	restart, err := g.ApplyFile(ctx, cfg)
	if err != nil {
		logger.Error("config reload failed", "file", path, "err", err)
		return
	}
	if len(restart) > 0 {
		logger.Warn("config reload: these settings apply at the next start", "settings", strings.Join(restart, ", "))
	}
	logger.Info("config reloaded", "file", path, "upstreams", len(cfg.Upstreams), "keys", len(cfg.Keys), "routes", len(cfg.Routes))
}

// logServing logs the start line: the address, the store and state drivers
// in use (store=sqlite state=memory), the number of upstreams and the
// version. Tests and scripts wait for its message, "switchyard serving".
func logServing(logger *slog.Logger, addr string, cfg *config.Config) {
	logger.Info("switchyard serving", "addr", addr, "store", cfg.Store.Driver, "state", cfg.State.Driver,
		"upstreams", len(cfg.Upstreams), "version", version)
}

// startDemo starts the demo on listen (default 127.0.0.1:8080), with
// adminToken or else the admin token kept in the demo's state directory.
func startDemo(ctx context.Context, listen, adminToken string) (*gateway.Demo, error) {
	if listen == "" {
		listen = "127.0.0.1:8080"
	}
	stateDir, dirErr := gateway.DefaultDemoStateDir()
	d, err := gateway.StartDemo(ctx, gateway.DemoOptions{Listen: listen, StateDir: stateDir, AdminToken: adminToken})
	if err != nil {
		return nil, err
	}
	if dirErr != nil && adminToken == "" {
		d.Config.Warnings = append(d.Config.Warnings, config.FieldError{Path: "admin.token",
			Msg: "using a new demo token for this start only: " + dirErr.Error()})
	}
	return d, nil
}

// printDemo prints the demo's banner: where it serves, its key, models,
// the upstreams behind each model (ups), the admin token (and the file
// keeping it, when one does) and curl lines.
func printDemo(out io.Writer, addr, adminToken, tokenFile string, ups []config.Upstream) {
	kept := ""
	if tokenFile != "" {
		kept = "\n              the same at every start: kept in " + tokenFile
	}
	fmt.Fprintf(out, `
Switchyard demo is serving on http://%[1]s
  client key: %[2]s
  models:     %[3]s (3 mock upstreams, 2 tiers), %[4]s (Anthropic Messages API),
              %[6]s (Anthropic, Bedrock, Vertex and OpenAI-compatible upstreams: any SDK, translated),
              %[7]s (Gemini, Vertex and OpenAI upstreams; Gemini clients: /v1beta),
              %[8]s (/v1/embeddings, on %[3]s's upstreams)
  upstreams:  name (provider) by model; tier 1 serves when tier 0 cannot
%[10]s  dashboard:  http://%[1]s/admin/  (admin token: %[5]s)%[9]s
  metrics:    http://%[1]s/metrics

Try it:
  curl -s http://%[1]s/v1/chat/completions \
    -H 'Authorization: Bearer %[2]s' -H 'Content-Type: application/json' \
    -d '{"model":"%[3]s","messages":[{"role":"user","content":"Hello!"}]}'

  curl -s http://%[1]s/v1/embeddings \
    -H 'Authorization: Bearer %[2]s' -H 'Content-Type: application/json' \
    -d '{"model":"%[8]s","input":"Hello!"}'

  ANTHROPIC_BASE_URL=http://%[1]s ANTHROPIC_API_KEY=%[2]s claude -p --model %[6]s 'Hello!'

Press Ctrl-C to stop.
`, addr, gateway.DemoKey, gateway.DemoOpenAIModel, gateway.DemoAnthropicModel, adminToken, gateway.DemoMixedModel, gateway.DemoGeminiModel,
		gateway.DemoEmbeddingModel, kept, upstreamsByModel(ups))
}

// upstreamsByModel lists, one model a line in the order the models first
// appear in ups, the upstreams that serve it: name (provider), with its
// tier when not 0. Long lines wrap under the first upstream.
func upstreamsByModel(ups []config.Upstream) string {
	const width = 120
	var models []string
	by := map[string][]string{}
	for _, u := range ups {
		item := u.Name + " (" + u.Provider
		if u.Priority != 0 {
			item += fmt.Sprintf(", tier %d", u.Priority)
		}
		item += ")"
		for _, m := range u.Models {
			if _, seen := by[m]; !seen {
				models = append(models, m)
			}
			by[m] = append(by[m], item)
		}
	}
	pad := 0
	for _, m := range models {
		pad = max(pad, len(m)+1)
	}
	var b strings.Builder
	for _, m := range models {
		line := fmt.Sprintf("    %-*s ", pad, m+":")
		indent := strings.Repeat(" ", len(line))
		for i, item := range by[m] {
			switch {
			case i == 0:
			case len(line)+2+len(item) > width:
				b.WriteString(line + ",\n")
				line = indent
			default:
				line += ", "
			}
			line += item
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// newLogger returns a logger on stderr at level, one JSON object per line
// or, with format "text", key=value pairs; a line logged within a traced
// request carries its trace_id.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(tracing.LogHandler(h))
}
