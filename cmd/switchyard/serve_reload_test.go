package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchyard/internal/mock"
)

// logWatcher collects serve's log and signals each time it gains a line
// that contains one of the awaited messages.
type logWatcher struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
	hit chan struct{}
}

func (w *logWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	select {
	case w.hit <- struct{}{}:
	default:
	}
	return n, err
}

func (w *logWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// await waits until the log contains s, at most 30 s.
func (w *logWatcher) await(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.hit:
		case <-deadline:
			t.Fatalf("the log never said %q:\n%s", s, w)
		}
	}
	return w.String()
}

// reloadConfig is a configuration with one upstream on base.
func reloadConfig(dir, base, extra string) string {
	return `listen: "127.0.0.1:0"
store: {driver: sqlite, dsn: ` + filepath.Join(dir, "sy.db") + `}
health: {interval: 0s}
keys:
  - {name: k, key: sk-reload-test}
upstreams:
  - {name: up, provider: openai-compatible, base_url: ` + base + `/v1, models: [gpt-4o]` + extra + `}
`
}

var servingAddr = regexp.MustCompile(`"msg":"switchyard serving","addr":"([^"]+)"`)

// TestServeReloadsOnHangup: serve --config reloads the file on SIGHUP. A
// valid file applies (the upstream moves to another server); a file with
// errors is refused, each error logged with its path, and the running
// configuration keeps serving.
func TestServeReloadsOnHangup(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "off")
	servers := map[string]string{}
	for _, name := range []string{"first", "second"} {
		srv := httptest.NewServer(mock.New(mock.Options{Name: name}))
		t.Cleanup(srv.Close)
		servers[name] = srv.URL
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "switchyard.yaml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(reloadConfig(dir, servers["first"], ""))

	ctx, cancel := context.WithCancel(context.Background())
	log := &logWatcher{hit: make(chan struct{}, 1)}
	cmd := newRootCmd()
	cmd.SetOut(log)
	cmd.SetErr(log)
	cmd.SetArgs([]string{"serve", "--config", path, "--grace", "1s"})
	errc := make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	m := servingAddr.FindStringSubmatch(log.await(t, `"msg":"switchyard serving"`))
	if m == nil {
		t.Fatalf("no address in the log:\n%s", log)
	}
	servedBy := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+m[1]+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-reload-test")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.Header.Get(mock.HeaderUpstream)
	}
	hangup := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	if got := servedBy(); got != "first" {
		t.Fatalf("served by %q before the reload, want first", got)
	}

	write(reloadConfig(dir, servers["second"], ""))
	hangup()
	log.await(t, `"msg":"config reloaded"`)
	if got := servedBy(); got != "second" {
		t.Errorf("served by %q after the reload, want second", got)
	}

	write(reloadConfig(dir, servers["first"], ", wieght: 2"))
	hangup()
	out := log.await(t, "the running configuration is kept")
	for _, want := range []string{
		`"msg":"config reload refused","file":"` + path + `","error":"upstreams[0].wieght: unknown key; did you mean weight?"`,
		`"msg":"config reload refused: the running configuration is kept","file":"` + path + `","errors":1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if got := servedBy(); got != "second" {
		t.Errorf("served by %q after a refused reload, want second (kept)", got)
	}
	if strings.Contains(out, "sk-reload-test") {
		t.Errorf("the log shows the client key:\n%s", out)
	}
}

// TestServeDemoIgnoresHangup: serve --demo has no file to reload, so a
// SIGHUP is logged and ignored; without the handler it would end the
// process (the default action), which the test would not survive.
func TestServeDemoIgnoresHangup(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "off")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	log := &logWatcher{hit: make(chan struct{}, 1)}
	cmd := newRootCmd()
	cmd.SetOut(log)
	cmd.SetErr(log)
	cmd.SetArgs([]string{"serve", "--demo", "--listen", "127.0.0.1:0", "--grace", "1s"})
	errc := make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve --demo: %v", err)
		}
	}()
	log.await(t, "Press Ctrl-C to stop.")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	log.await(t, `"msg":"SIGHUP ignored: serve --demo has no configuration file to reload; change it through the admin API"`)
	select {
	case err := <-errc:
		t.Fatalf("serve --demo ended on SIGHUP: %v", err)
	default:
	}
}
