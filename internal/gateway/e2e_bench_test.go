package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// benchChatBody is the JSON chat request of the proxy benchmarks.
const benchChatBody = `{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello to the benchmark."}]}`

// benchChat posts benchChatBody to url b.N times, serially and in parallel.
// The mock has zero latency, so BenchmarkProxyChat − BenchmarkDirectMock is
// what the gateway adds.
func benchChat(b *testing.B, url, key string, session func(worker int64) string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	do := func(worker int64) error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(benchChatBody)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if session != nil {
			req.Header.Set("X-Session-Id", session(worker))
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := do(0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var workers atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			worker := workers.Add(1)
			for pb.Next() {
				if err := do(worker); err != nil {
					b.Error(err) // FailNow may not be called from a RunParallel goroutine
					return
				}
			}
		})
	})
}

// BenchmarkProxyChat: client → gateway → one zero-latency mock, JSON chat.
func BenchmarkProxyChat(b *testing.B) {
	_, url := startMock(b, "bench", mock.Behavior{})
	e := startGateway(b, spec{upstreams: []config.Upstream{upstreamAt("bench", config.ProviderOpenAI, url, 0, "gpt-4o")}})
	benchChat(b, e.URL+"/v1/chat/completions", testKey, nil)
}

// BenchmarkDirectMock: the same requests straight to the mock.
func BenchmarkDirectMock(b *testing.B) {
	_, url := startMock(b, "bench", mock.Behavior{})
	benchChat(b, url+"/v1/chat/completions", "sk-direct", nil)
}

// BenchmarkStateDriver measures what state.driver: redis adds to a request
// over memory: each request's latency through a gateway to a zero-latency
// mock, serially, reported as p50 and p99 in µs, and, for redis, the round
// trips per request on the hot path (admit, settle and affinity; the sync
// loop and lease renewals are background work). plain requests carry no
// session id; session requests do (one binding lookup more).
func BenchmarkStateDriver(b *testing.B) {
	_, url := startMock(b, "bench", mock.Behavior{})
	for _, driver := range []string{"memory", "redis"} {
		for _, session := range []bool{false, true} {
			name := driver + "/plain"
			if session {
				name = driver + "/session"
			}
			b.Run(name, func(b *testing.B) {
				edit := func(c *config.Config) {}
				if driver == "redis" {
					redisURL, prefix := sharedRedis(b)
					edit = func(c *config.Config) {
						c.State.Driver, c.State.RedisURL, c.State.RedisPrefix = "redis", redisURL, prefix
					}
				}
				e := startGateway(b, spec{
					upstreams: []config.Upstream{upstreamAt("bench", config.ProviderOpenAI, url, 0, "gpt-4o")},
					edit: func(c *config.Config) {
						c.Log.Requests = false
						c.Affinity.Enabled = true
						edit(c)
					},
				})
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
				send := func(i int) {
					req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(benchChatBody))
					req.Header.Set("Authorization", "Bearer "+testKey)
					req.Header.Set("Content-Type", "application/json")
					if session {
						req.Header.Set("X-Session-Id", "bench-"+strconv.Itoa(i%64))
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
				for i := range 200 { // warm the connections, the scripts and the view
					send(i)
				}
				before := hotPathRoundTrips(b, client, e.URL)
				var lat []time.Duration
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					send(i)
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				if driver == "redis" {
					b.ReportMetric((hotPathRoundTrips(b, client, e.URL)-before)/float64(len(lat)), "redis-rt/req")
				}
			})
		}
	}
}

// hotPathRoundTrips sums the admit, settle and affinity round trips the
// gateway at url has counted.
func hotPathRoundTrips(b *testing.B, client *http.Client, url string) float64 {
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var n float64
	for _, op := range []string{"admit", "settle", "affinity"} {
		m := regexp.MustCompile(`switchyard_state_redis_round_trips_total\{op="` + op + `"\} (\S+)`).FindSubmatch(body)
		if m != nil {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			n += v
		}
	}
	return n
}
