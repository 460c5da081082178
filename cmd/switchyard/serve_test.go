package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/config"
)

// bannerWriter collects the output of `serve` and closes printed when the
// demo's banner is complete.
type bannerWriter struct {
	mu      sync.Mutex // guards buf and done
	buf     bytes.Buffer
	done    bool
	printed chan struct{}
}

func (w *bannerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), "Press Ctrl-C to stop.") {
		w.done = true
		close(w.printed)
	}
	return n, err
}

func (w *bannerWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// serveDemo runs `serve --demo` with args until it has printed its banner,
// stops it, and returns the banner.
func serveDemo(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &bannerWriter{printed: make(chan struct{})}
	cmd := newRootCmd()
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append([]string{"serve", "--demo", "--listen", "127.0.0.1:0", "--grace", "1s"}, args...))
	errc := make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	select {
	case <-out.printed:
	case err := <-errc:
		t.Fatalf("serve --demo %v ended before its banner: %v\n%s", args, err, out)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve --demo %v printed no banner in 30s:\n%s", args, out)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve --demo %v: %v", args, err)
	}
	return out.String()
}

var bannerToken = regexp.MustCompile(`\(admin token: (\S+)\)(\n +the same at every start: kept in (\S+))?`)

// TestServeDemoAdminToken: the demo's admin token is the same at every
// start (kept in $XDG_STATE_HOME/switchyard-demo, which the banner names),
// --admin-token wins, and --admin-token is refused without --demo. The
// banner also shows the embeddings model with its curl line, and the
// upstreams behind each model with their providers.
func TestServeDemoAdminToken(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("GOMEMLIMIT", "off") // keep this test process's memory limit as it is

	token := func(banner string) (tok, file string) {
		t.Helper()
		m := bannerToken.FindStringSubmatch(banner)
		if m == nil {
			t.Fatalf("no admin token in the banner:\n%s", banner)
		}
		return m[1], m[3]
	}
	first := serveDemo(t)
	tok1, file1 := token(first)
	tok2, file2 := token(serveDemo(t))
	wantFile := filepath.Join(state, "switchyard-demo", "admin-token")
	if tok1 != tok2 || file1 != wantFile || file2 != wantFile {
		t.Errorf("two starts: tokens %q (%s) and %q (%s), want one token kept in %s", tok1, file1, tok2, file2, wantFile)
	}
	tok3, file3 := token(serveDemo(t, "--admin-token", "sy-admin-from-flag"))
	if tok3 != "sy-admin-from-flag" || file3 != "" {
		t.Errorf("--admin-token: token %q kept in %q, want sy-admin-from-flag, not kept", tok3, file3)
	}
	if tok4, _ := token(serveDemo(t)); tok4 != tok1 {
		t.Errorf("after --admin-token the kept token is %q, want %q", tok4, tok1)
	}
	for _, want := range []string{
		"\n    claude-sonnet-4:        claude-anthropic (anthropic), claude-openai-compatible (openai-compatible),\n" +
			"                            claude-bedrock (bedrock), vertex (vertex)\n",
		"\n    gpt-4o-mini:            openai-fast (openai), openai-steady (openai), openai-backup (openai-compatible, tier 1)\n",
		"\n    gemini-2.5-flash:       gemini-openai (openai), gemini-google (gemini), vertex (vertex)\n",
		"text-embedding-3-small (/v1/embeddings, on gpt-4o-mini's upstreams)",
		`/v1/embeddings \`,
		`-d '{"model":"text-embedding-3-small","input":"Hello!"}'`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("banner lacks %q:\n%s", want, first)
		}
	}

	_, err := run(t, "serve", "--config", "testdata/valid.yaml", "--admin-token", "x")
	if err == nil || !strings.Contains(err.Error(), "--admin-token is for --demo") {
		t.Errorf("--config with --admin-token: %v, want the flag refused", err)
	}
}

// TestLogServing: the start line names the address, the store and state
// drivers in use, the number of upstreams and the version.
func TestLogServing(t *testing.T) {
	tests := []struct {
		name, store, state string
		want               string
	}{
		{"defaults", "sqlite", "memory", `"addr":"127.0.0.1:8080","store":"sqlite","state":"memory","upstreams":2,"version":"dev"}`},
		{"shared", "postgres", "redis", `"addr":"127.0.0.1:8080","store":"postgres","state":"redis","upstreams":2,"version":"dev"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Store.Driver, cfg.State.Driver = tt.store, tt.state
			cfg.Upstreams = make([]config.Upstream, 2)
			var buf bytes.Buffer
			logServing(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			})), "127.0.0.1:8080", &cfg)
			want := `{"level":"INFO","msg":"switchyard serving",` + tt.want + "\n"
			if got := buf.String(); got != want {
				t.Errorf("start line:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
