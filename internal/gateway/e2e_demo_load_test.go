package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/gateway"
)

// loadResult counts a load loop's answers.
type loadResult struct {
	total, failed int
	byStatus      map[int]int
	firstErrors   []string
}

// demoLoad runs workers loops of POST /v1/chat/completions for model
// against base until d has passed: each worker sends its next request as
// soon as the previous answer is read, every other one streamed. A request
// fails when its status is not 200 or its stream does not end with [DONE].
func demoLoad(ctx context.Context, base, key, model string, workers int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu  sync.Mutex
		res = loadResult{byStatus: map[int]int{}}
		wg  sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				stream := (w+i)%2 == 0
				status, err := demoRequest(ctx, hc, base, key, model, stream)
				if ctx.Err() != nil {
					return // cut by the end of the run, not an answer
				}
				mu.Lock()
				res.total++
				res.byStatus[status]++
				if err != nil {
					res.failed++
					if len(res.firstErrors) < 5 {
						res.firstErrors = append(res.firstErrors, err.Error())
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// demoRequest sends one chat completion and reads its whole answer.
func demoRequest(ctx context.Context, hc *http.Client, base, key, model string, stream bool) (int, error) {
	body := fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"Hello!"}]}`, model, stream)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return resp.StatusCode, err
	case resp.StatusCode != http.StatusOK:
		return resp.StatusCode, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	case stream && !bytes.HasSuffix(bytes.TrimSpace(b), []byte("data: [DONE]")):
		return resp.StatusCode, fmt.Errorf("stream did not end with [DONE]: %q", b[max(len(b)-200, 0):])
	}
	return resp.StatusCode, nil
}

// TestDemoSurvivesLoadLoop: a new user's first load test against `serve
// --demo` — 16 workers sending gpt-4o-mini chat completions as fast as the
// answers come, streamed and not, for 10 s — gets under 1% errors, while
// the demo still shows limits at work: an upstream answered 429, the
// request it failed got its answer from another upstream, and that
// upstream is cooling down.
func TestDemoSurvivesLoadLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s load loop")
	}
	const (
		workers = 16
		run     = 10 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	demo, err := gateway.StartDemo(ctx, gateway.DemoOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(demo.Cleanup)
	demo.Config.Store.DSN = filepath.Join(t.TempDir(), "demo.db")
	e := serveGateway(t, demo.Config, gateway.Options{Seed: 1})

	res := demoLoad(ctx, e.URL, gateway.DemoKey, gateway.DemoOpenAIModel, workers, run)
	s := scrapeMetrics(t, e, "")
	limited, _ := s.value("switchyard_rate_limited_total", nil)
	t.Logf("%d requests, %d failed %v, %v upstream 429s; first errors %q", res.total, res.failed, res.byStatus, limited, res.firstErrors)
	// At least one answer a second per worker: the loop ran, nothing hung.
	if res.total < workers*int(run/time.Second) {
		t.Errorf("only %d requests in %s", res.total, run)
	}
	if float64(res.failed) >= 0.01*float64(res.total) {
		t.Errorf("%d of %d requests failed, want under 1%%", res.failed, res.total)
	}
	if limited < 1 {
		t.Errorf("switchyard_rate_limited_total = %v: no upstream answered 429", limited)
	}
	cooling := 0.0
	for _, up := range demo.Config.Upstreams {
		if slices.Contains(up.Models, gateway.DemoOpenAIModel) {
			v, _ := s.value("switchyard_upstream_cooldown_active", l{"upstream": up.Name})
			cooling += v
		}
	}
	if cooling < 1 {
		t.Errorf("no %s upstream is cooling down after the loop", gateway.DemoOpenAIModel)
	}
	checkMinuteFits(t, e, demo, run)

	absorbed := 0
	for _, lg := range e.RequestLogs() {
		if lg.Status != http.StatusOK {
			continue
		}
		var got429, won bool
		for _, a := range lg.Tried {
			got429 = got429 || a.Outcome == "rate_limited"
			won = won || (a.Won && a.Outcome == "success")
		}
		if got429 && won {
			absorbed++
		}
	}
	t.Logf("%d answered requests had an attempt answered 429", absorbed)
	if absorbed == 0 {
		t.Error("no request answered 200 after an attempt answered 429")
	}
}

// checkMinuteFits fails the test unless every demo gpt-4o-mini upstream
// that answered no 429 could go on at the rate the loop of length run used
// it for a whole minute within its RPM and TPM limits (GET
// /admin/api/state): the loop would not run the pool dry later.
func checkMinuteFits(t *testing.T, e *env, demo *gateway.Demo, run time.Duration) {
	t.Helper()
	r := rawRequest(t, http.MethodGet, e.URL+"/admin/api/state", nil, "Authorization", "Bearer "+demo.Config.Admin.Token)
	var st struct {
		Upstreams []struct {
			Name          string
			RPMUsed       float64 `json:"rpm_used"`
			RPMLimit      float64 `json:"rpm_limit"`
			TPMUsed       float64 `json:"tpm_used"`
			TPMLimit      float64 `json:"tpm_limit"`
			RateLimited5m int     `json:"rate_limited_5m"`
		}
	}
	if err := json.Unmarshal(r.body, &st); r.status != http.StatusOK || err != nil {
		t.Fatalf("GET /admin/api/state: status %d (%v): %s", r.status, err, r.body)
	}
	perMinute := float64(time.Minute) / float64(run)
	for _, u := range st.Upstreams {
		if !slices.ContainsFunc(demo.Config.Upstreams, func(c config.Upstream) bool {
			return c.Name == u.Name && slices.Contains(c.Models, gateway.DemoOpenAIModel)
		}) || u.RateLimited5m > 0 {
			continue
		}
		t.Logf("  %s: %v requests, %v tokens in %s; limits %v RPM, %v TPM", u.Name, u.RPMUsed, u.TPMUsed, run, u.RPMLimit, u.TPMLimit)
		if u.RPMLimit > 0 && u.RPMUsed*perMinute >= u.RPMLimit {
			t.Errorf("%s: %v requests in %s, %v a minute at that rate, over its %v RPM", u.Name, u.RPMUsed, run, u.RPMUsed*perMinute, u.RPMLimit)
		}
		if u.TPMLimit > 0 && u.TPMUsed*perMinute >= u.TPMLimit {
			t.Errorf("%s: %v tokens in %s, %v a minute at that rate, over its %v TPM", u.Name, u.TPMUsed, run, u.TPMUsed*perMinute, u.TPMLimit)
		}
	}
}
