package gateway_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the integrity check reads the crashed file directly

	"switchyard/internal/mock"
)

// buildSwitchyard builds cmd/switchyard into a temporary directory and
// returns the binary's path; the test is skipped when the build fails.
func buildSwitchyard(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "switchyard")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/switchyard")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("building switchyard: %v\n%s", err, out)
	}
	return bin
}

// writeProcessConfig writes a switchyard.yaml with one OpenAI upstream at
// mockURL serving gpt-4o, the test key, request logs on and the sqlite file dsn.
func writeProcessConfig(t *testing.T, mockURL, dsn string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	yaml := fmt.Sprintf(`listen: "127.0.0.1:0"
store:
  driver: sqlite
  dsn: %q
log:
  level: info
  requests: true
health:
  interval: 0s
keys:
  - name: e2e
    key: %s
upstreams:
  - name: oa
    provider: openai
    base_url: %s/v1
    api_key: sk-upstream-oa
    models: [gpt-4o]
`, dsn, testKey, mockURL)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// proc is a running `switchyard serve`.
type proc struct {
	cmd    *exec.Cmd
	url    string
	exited chan error // receives cmd.Wait's result once

	mu    sync.Mutex
	lines []string // what it logged, a JSON object per line
}

// log returns the lines the process has logged so far.
func (p *proc) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// startProcess runs `bin serve --config cfg args...` and waits (at most 30 s)
// for its "switchyard serving" log line to learn the address. The process is
// killed at the end of the test if still running.
func startProcess(t *testing.T, bin, cfg string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--config", cfg}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "switchyard serving" {
				addr <- line.Addr
			}
		}
		p.exited <- cmd.Wait() // after stderr is drained, as Wait requires
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // an error only says it already exited
	select {
	case a := <-addr:
		p.url = "http://" + a
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("switchyard exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("switchyard did not log its address within 30 s")
	}
	return p
}

// wait returns the process's exit error, failing the test after limit.
func (p *proc) wait(t *testing.T, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(limit):
		t.Fatalf("switchyard still running %v after the signal", limit)
		return nil
	}
}

// chatOnce sends one non-streaming chat request and returns its status.
func chatOnce(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// integrityCheck runs PRAGMA integrity_check on the sqlite file at dsn.
func integrityCheck(t *testing.T, dsn string) string {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	return res
}

// TestKillNineSQLite: SIGKILL in the middle of logged traffic leaves a
// sqlite file that passes integrity_check, and a restarted process on it is
// ready and serving at once.
func TestKillNineSQLite(t *testing.T) {
	bin := buildSwitchyard(t)
	_, url := startMock(t, "oa", mock.Behavior{})
	dsn := filepath.Join(t.TempDir(), "switchyard.db")
	cfg := writeProcessConfig(t, url, dsn)
	p := startProcess(t, bin, cfg)

	// Load from 4 goroutines until 300 requests have succeeded, then kill.
	const workers, before = 4, 300
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ok atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{}}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				status, err := chatOnce(ctx, client, p.url)
				if err != nil {
					return // the process died under us: expected
				}
				if status == http.StatusOK && ok.Add(1) >= before {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d requests succeeded in 60 s", ok.Load())
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := p.wait(t, 10*time.Second)
	if ws, isWait := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !isWait || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the process was not killed by SIGKILL: %v", err)
	}
	cancel()
	wg.Wait()

	if res := integrityCheck(t, dsn); res != "ok" {
		t.Fatalf("integrity_check after SIGKILL = %q, want ok", res)
	}

	// Restart on the same file: ready and serving at once.
	p2 := startProcess(t, bin, cfg)
	ready := false
	for deadline := time.Now().Add(10 * time.Second); !ready && time.Now().Before(deadline); {
		resp, err := http.Get(p2.url + "/readyz")
		if err == nil {
			ready = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
	}
	if !ready {
		t.Fatal("the restarted process is not ready within 10 s")
	}
	if status, err := chatOnce(context.Background(), http.DefaultClient, p2.url); err != nil || status != http.StatusOK {
		t.Fatalf("first request after the restart: %d, %v", status, err)
	}
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p2.wait(t, 30*time.Second); err != nil {
		t.Fatalf("the restarted process exited with %v", err)
	}
	if res := integrityCheck(t, dsn); res != "ok" {
		t.Fatalf("integrity_check after the restart = %q, want ok", res)
	}
}

// TestSIGTERMFinishesStreams: SIGTERM while streams are in flight lets
// every stream end with [DONE], then the process exits 0 within the grace.
func TestSIGTERMFinishesStreams(t *testing.T) {
	bin := buildSwitchyard(t)
	// About a second per stream: 100 ms to the first token, then 15 at 16/s.
	_, url := startMock(t, "slow", mock.Behavior{TTFT: 100 * time.Millisecond, TPS: 16, CompletionTokens: 16})
	cfg := writeProcessConfig(t, url, filepath.Join(t.TempDir(), "switchyard.db"))
	const grace = 10 * time.Second
	p := startProcess(t, bin, cfg, "--grace", grace.String())

	const streams = 4
	bodies := make([]*bufio.Reader, streams)
	for i := range streams {
		req, err := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"slow please"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: status %d", i, resp.StatusCode)
		}
		bodies[i] = bufio.NewReader(resp.Body)
		readEvent(t, bodies[i]) // in flight
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, streams)
	for i, br := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rest, err := io.ReadAll(br)
			switch events := parseSSE(rest); {
			case err != nil:
				errs[i] = fmt.Errorf("stream %d broke: %w", i, err)
			case len(events) == 0 || events[len(events)-1].data != "[DONE]":
				errs[i] = fmt.Errorf("stream %d ended without [DONE]: %q", i, rest)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := p.wait(t, grace+10*time.Second); err != nil {
		t.Fatalf("switchyard exited with %v after SIGTERM, want status 0", err)
	}
}
