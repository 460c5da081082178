package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
)

func TestStreamIdleTimeoutEndsStream(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stall until the gateway gives up
	})
	d := config.Default().Defaults
	d.StreamIdleTimeout = 5 * time.Second
	f := newFixture(t, []config.Upstream{upstreamCfg("s", config.ProviderOpenAI, upstreamServer(t, h), "m")}, fixtureOpts{defaults: &d})
	resp := f.post("/v1/chat/completions", `{"model":"m","stream":true}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: {\"n\":1}\n" {
		t.Fatalf("first event %q %v", line, err)
	}
	// The gateway arms its idle timer before relaying the first event.
	f.clock.Advance(4 * time.Second)
	f.clock.Advance(time.Second)
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "stream idle timeout") || !strings.Contains(string(rest), `"code":"stream_interrupted"`) {
		t.Fatalf("rest of stream %q", rest)
	}
}

func TestWholeRequestTimeout(t *testing.T) {
	var f *fixture
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		for f.clock.Pending() > 1 { // wait until the gateway has the headers (first-byte timer stopped)
			time.Sleep(time.Millisecond)
		}
		f.clock.Advance(10 * time.Second) // the body never ends: the whole-request timeout fires
		<-r.Context().Done()
	})
	d := config.Default().Defaults
	d.Timeout, d.FirstByteTimeout = 10*time.Second, 5*time.Second
	f = newFixture(t, []config.Upstream{upstreamCfg("slow", config.ProviderOpenAI, upstreamServer(t, h), "m")}, fixtureOpts{defaults: &d})
	resp := f.post("/v1/chat/completions", `{"model":"m"}`)
	body := readAll(t, resp)
	if resp.StatusCode != 502 || !strings.Contains(body, "reading response: request timeout") {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestFallbackModels(t *testing.T) {
	var mainHits, fbHits atomic.Int64
	fbModel := make(chan string, 1)
	fb := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fbModel <- gjson.GetBytes(b, "model").Str
		chatOK(&fbHits)(w, r)
	})
	main := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mainHits.Add(1)
		status(503)(w, r)
	})
	routes := []config.Route{{Model: "gpt-4o", FallbackModels: []string{"gpt-4o-mini"}}}
	f := newFixture(t, []config.Upstream{
		upstreamCfg("big", config.ProviderOpenAI, upstreamServer(t, main), "gpt-4o"),
		upstreamCfg("small", config.ProviderOpenAI, upstreamServer(t, fb), "gpt-4o-mini"),
	}, fixtureOpts{routes: routes})
	resp := f.post("/v1/chat/completions", chatBody)
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := <-fbModel; got != "gpt-4o-mini" {
		t.Fatalf("fallback upstream got model %q", got)
	}
	if mainHits.Load() != 1 || resp.Header.Get("X-Switchyard-Upstream") != "small" || resp.Header.Get("X-Switchyard-Attempts") != "2" {
		t.Fatalf("main hits %d, served by %s after %s attempts", mainHits.Load(),
			resp.Header.Get("X-Switchyard-Upstream"), resp.Header.Get("X-Switchyard-Attempts"))
	}
}

func TestUpstreamAccountHeadersAreNotPassedOn(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-remaining-requests", "3")
		w.Header().Set("anthropic-ratelimit-requests-remaining", "3")
		w.Header().Set("openai-organization", "org-secret")
		w.Header().Set("X-Request-Id", "upstream-id")
		w.Header().Set("openai-processing-ms", "12")
		chatOK(new(atomic.Int64))(w, r)
	})
	f := newFixture(t, []config.Upstream{upstreamCfg("u", config.ProviderOpenAI, upstreamServer(t, h), "gpt-4o")}, fixtureOpts{})
	resp := f.post("/v1/chat/completions", chatBody, "X-Request-Id", "client-chosen-id")
	readAll(t, resp)
	for _, k := range []string{"X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining", "Openai-Organization"} {
		if v := resp.Header.Get(k); v != "" {
			t.Errorf("%s passed to the client: %q", k, v)
		}
	}
	if resp.Header.Get("X-Request-Id") != "client-chosen-id" || resp.Header.Get("X-Upstream-Request-Id") != "upstream-id" {
		t.Errorf("request ids: %q / %q", resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Upstream-Request-Id"))
	}
	if resp.Header.Get("Openai-Processing-Ms") != "12" {
		t.Error("ordinary upstream header dropped")
	}
}

func TestMaxConcurrencyIsNeverExceeded(t *testing.T) {
	const limit = 2
	var inFlight, maxSeen atomic.Int64
	gate := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := maxSeen.Load()
			if n <= m || maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		<-gate
		inFlight.Add(-1)
		chatOK(new(atomic.Int64))(w, r)
	})
	capped := upstreamCfg("capped", config.ProviderOpenAI, upstreamServer(t, h), "gpt-4o")
	capped.MaxConcurrency = limit
	var overflow atomic.Int64
	spill := upstreamCfg("spill", config.ProviderOpenAI, upstreamServer(t, chatOK(&overflow)), "gpt-4o")
	spill.Priority = 1
	f := newFixture(t, []config.Upstream{capped, spill}, fixtureOpts{})
	done := make(chan int, 6)
	for i := 0; i < 6; i++ {
		go func() {
			resp := f.post("/v1/chat/completions", chatBody)
			readAll(t, resp)
			done <- resp.StatusCode
		}()
	}
	// Four requests cannot get a slot on "capped" and spill to tier 1.
	for i := 0; i < 4; i++ {
		if code := <-done; code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	close(gate)
	for i := 0; i < 2; i++ {
		<-done
	}
	if maxSeen.Load() > limit || overflow.Load() != 4 {
		t.Fatalf("max in flight %d (limit %d), spilled %d (want 4)", maxSeen.Load(), limit, overflow.Load())
	}
}
