// Command load is the load generator of the Switchyard load benchmark
// (bench/run.sh, docs/benchmarks.md). It sends JSON chat completions to one
// target (the mock directly, the bare hop, or Switchyard) in one of four
// modes, warms up without measuring, measures for -duration, and prints one
// JSON line (record.Record) on stdout:
//
//	serial  one request at a time (vegeta, rate 0, 1 worker)
//	rate    a fixed -rate req/s, open loop (vegeta)
//	max     a closed loop of -concurrency workers (vegeta, rate 0)
//	stream  a closed loop of -concurrency streaming requests, timing the
//	        first SSE data line (TTFT) and the whole stream
//	streams -concurrency long streams held open at once (the mock set to
//	        stream slowly), measured in one window after the warm-up:
//	        events per second, CPU per event, RSS per stream (longstreams.go)
//
// With -pid it also reports that process's CPU per request and peak RSS.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"switchyard/bench/internal/record"
)

// config is the command line.
type config struct {
	target      string
	mode        string
	url         string
	key         string
	model       string
	protocol    string
	rate        int
	concurrency int
	duration    time.Duration
	warmup      time.Duration
	pid         int
}

func main() {
	var c config
	flag.StringVar(&c.target, "target", "", "name of the target in the output (direct, barehop, switchyard)")
	flag.StringVar(&c.mode, "mode", record.ModeSerial, "serial | rate | max | stream | streams")
	flag.StringVar(&c.url, "url", "", "base URL of the target, such as http://127.0.0.1:9001 (required)")
	flag.StringVar(&c.key, "key", "sk-bench", "bearer token sent with every request")
	flag.StringVar(&c.model, "model", "gpt-4o", "model of the chat requests")
	flag.StringVar(&c.protocol, "protocol", "openai", "client protocol: openai (POST /v1/chat/completions) or anthropic (POST /v1/messages)")
	flag.IntVar(&c.rate, "rate", 1000, "rate mode: requests per second")
	flag.IntVar(&c.concurrency, "concurrency", 64, "max and stream modes: concurrent workers")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "measured time")
	flag.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured time before it")
	flag.IntVar(&c.pid, "pid", 0, "process whose CPU and peak RSS to report (0 = none)")
	flag.Parse()
	if err := run(context.Background(), c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// messagesBody is chatBody's request in Anthropic's Messages protocol.
func messagesBody(model string, stream bool) []byte {
	s := `{"model":"` + model + `","max_tokens":256,"system":"You are terse.","messages":[{"role":"user","content":"Say hello to the benchmark."}]`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + "}")
}

// chatBody is a JSON chat request (the one of internal/gateway's proxy
// benchmarks); streamBody is the same with stream: true.
func chatBody(model string, stream bool) []byte {
	s := `{"model":"` + model + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello to the benchmark."}]`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + "}")
}

func run(ctx context.Context, c config, out io.Writer) error {
	if c.url == "" {
		return errors.New("-url is required")
	}
	client := newClient(c.concurrency)
	url := strings.TrimSuffix(c.url, "/") + "/v1/chat/completions"
	header := http.Header{
		"Authorization": {"Bearer " + c.key},
		"Content-Type":  {"application/json"},
	}
	stream := c.mode == record.ModeStream || c.mode == record.ModeStreams
	body := chatBody(c.model, stream)
	switch c.protocol {
	case "", "openai":
	case "anthropic":
		url = strings.TrimSuffix(c.url, "/") + "/v1/messages"
		header = http.Header{"X-Api-Key": {c.key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
		body = messagesBody(c.model, stream)
	default:
		return fmt.Errorf("unknown -protocol %q: want openai or anthropic", c.protocol)
	}
	if err := check(ctx, client, url, header, body); err != nil {
		return err
	}
	if c.mode == record.ModeStreams {
		return runStreams(ctx, c, client, url, header, body, out)
	}

	var measure func(time.Duration) (*summary, time.Duration)
	switch c.mode {
	case record.ModeSerial:
		c.concurrency = 1
		measure = func(d time.Duration) (*summary, time.Duration) { return attack(client, url, header, body, 0, 1, d) }
	case record.ModeRate:
		if c.rate <= 0 {
			return errors.New("rate mode needs -rate > 0")
		}
		c.concurrency = 0
		measure = func(d time.Duration) (*summary, time.Duration) {
			return attack(client, url, header, body, c.rate, 0, d)
		}
	case record.ModeMax:
		measure = func(d time.Duration) (*summary, time.Duration) {
			return attack(client, url, header, body, 0, c.concurrency, d)
		}
	case record.ModeStream:
		measure = func(d time.Duration) (*summary, time.Duration) {
			return streams(ctx, client, url, header, body, c.concurrency, d)
		}
	default:
		return fmt.Errorf("unknown -mode %q", c.mode)
	}
	if c.concurrency < 0 {
		return errors.New("-concurrency must be positive")
	}

	rec := record.Record{Target: c.target, Mode: c.mode, Concurrency: c.concurrency}
	if c.mode == record.ModeRate {
		rec.Rate = c.rate
	}
	if c.pid > 0 {
		rec.PeakRSSReset = resetPeakRSS(c.pid) == nil
	}
	if c.warmup > 0 {
		measure(c.warmup)
	}

	var targetCPU0 time.Duration
	if c.pid > 0 {
		var err error
		if targetCPU0, err = cpuTime(c.pid); err != nil {
			return err
		}
	}
	selfCPU0 := selfCPU()
	s, elapsed := measure(c.duration)
	selfCPU1 := selfCPU()
	if c.pid > 0 {
		targetCPU1, err := cpuTime(c.pid)
		if err != nil {
			return err
		}
		rss, err := peakRSS(c.pid)
		if err != nil {
			return err
		}
		rec.CPUUsPerReq = perRequest(targetCPU1-targetCPU0, s.requests)
		rec.PeakRSSMB = float64(rss) / 1e6
	}

	rec.Seconds = elapsed.Seconds()
	rec.Requests, rec.Errors, rec.FirstError = s.requests, s.errors, s.firstErr
	rec.RPS = float64(s.requests) / elapsed.Seconds()
	rec.P50Ms, rec.P99Ms, rec.TTFTP50Ms, rec.TTFTP99Ms = s.quantiles()
	rec.LoadCPUUsPerReq = perRequest(selfCPU1-selfCPU0, s.requests)
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", line)
	return err
}

// newClient is an HTTP/1.1 keep-alive client with room for every worker's
// connection (workers of them, at least 1024).
func newClient(workers int) *http.Client {
	idle := max(workers, 1024)
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        idle,
			MaxIdleConnsPerHost: idle,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
}

// check sends one request and fails unless it answers 200, so that a wrong
// key or URL stops the benchmark at once instead of measuring errors.
func check(ctx context.Context, client *http.Client, url string, header http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("checking %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("checking %s: status %d: %s", url, resp.StatusCode, b)
	}
	return nil
}

// runStreams is the streams mode: c.concurrency long streams at once,
// one record for the window after the warm-up.
func runStreams(ctx context.Context, c config, client *http.Client, url string, header http.Header, body []byte, out io.Writer) error {
	if c.concurrency <= 0 {
		return errors.New("streams mode needs -concurrency > 0")
	}
	rec := record.Record{Target: c.target, Mode: c.mode, Concurrency: c.concurrency}
	if c.pid > 0 {
		rss, err := currentRSS(c.pid)
		if err != nil {
			return err
		}
		rec.BaseRSSMB = float64(rss) / 1e6
		rec.PeakRSSReset = resetPeakRSS(c.pid) == nil
	}
	var (
		targetCPU [2]time.Duration
		self      [2]time.Duration
		werr      error
	)
	window := func(end bool) {
		i := 0
		if end {
			i = 1
		}
		self[i] = selfCPU()
		if c.pid > 0 {
			cpu, err := cpuTime(c.pid)
			werr = cmp.Or(werr, err)
			targetCPU[i] = cpu
		}
	}
	r, elapsed := longStreams(ctx, client, url, header, body, c.concurrency, c.warmup, c.duration, window)
	if werr != nil {
		return werr
	}
	if c.pid > 0 {
		rss, err := peakRSS(c.pid)
		if err != nil {
			return err
		}
		rec.PeakRSSMB = float64(rss) / 1e6
		cpu := targetCPU[1] - targetCPU[0]
		rec.CPUUsPerReq = perRequest(cpu, r.requests)
		rec.CPUUsPerEvent = perRequest(cpu, int(r.events))
		rec.CPUCores = cpu.Seconds() / elapsed.Seconds()
		rec.RSSPerStreamKB = max(rec.PeakRSSMB-rec.BaseRSSMB, 0) * 1e3 / float64(c.concurrency)
	}
	rec.Seconds = elapsed.Seconds()
	rec.Requests, rec.Errors, rec.FirstError = r.requests, r.errors, r.firstErr
	rec.Events = r.events
	rec.RPS = float64(r.requests) / elapsed.Seconds()
	rec.EventsPerSec = float64(r.events) / elapsed.Seconds()
	rec.P50Ms, rec.P99Ms, rec.TTFTP50Ms, rec.TTFTP99Ms = r.quantiles()
	rec.LoadCPUUsPerReq = perRequest(self[1]-self[0], r.requests)
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", line)
	return err
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perRequest is cpu / n in microseconds, 0 for no requests.
func perRequest(cpu time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(cpu) / float64(time.Microsecond) / float64(n)
}
