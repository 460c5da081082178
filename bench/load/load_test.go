package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"switchyard/bench/internal/record"
	"switchyard/internal/mock"
)

// TestRunAgainstMock runs each mode for a moment against an in-process mock
// on loopback and checks the record it prints.
func TestRunAgainstMock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const ttft = 5 * time.Millisecond
	_, url, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{Behavior: mock.Behavior{TTFT: ttft, TPS: 1000, CompletionTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode     string
		rate     int
		protocol string
	}{
		{mode: record.ModeSerial},
		{mode: record.ModeRate, rate: 200},
		{mode: record.ModeMax},
		{mode: record.ModeStream},
		{mode: record.ModeStream, protocol: "anthropic"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.protocol, func(t *testing.T) {
			var out bytes.Buffer
			c := config{
				target: "direct", mode: tt.mode, url: url, key: "sk-test", model: "gpt-4o", protocol: tt.protocol,
				rate: tt.rate, concurrency: 4, duration: 200 * time.Millisecond, warmup: 50 * time.Millisecond,
			}
			if err := run(ctx, c, &out); err != nil {
				t.Fatal(err)
			}
			var rec record.Record
			if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
				t.Fatalf("decoding %q: %v", out.String(), err)
			}
			if rec.Requests == 0 || rec.Errors != 0 || rec.RPS <= 0 || rec.P50Ms <= 0 || rec.P99Ms < rec.P50Ms {
				t.Errorf("record = %+v", rec)
			}
			if rec.Mode != tt.mode || rec.Target != "direct" {
				t.Errorf("mode %q target %q", rec.Mode, rec.Target)
			}
			if tt.mode == record.ModeStream {
				if rec.TTFTP50Ms < ms(ttft) || rec.P50Ms < rec.TTFTP50Ms {
					t.Errorf("ttft p50 %v ms, total p50 %v ms; want ≥ %v ms and total ≥ ttft", rec.TTFTP50Ms, rec.P50Ms, ms(ttft))
				}
			} else if rec.TTFTP50Ms != 0 {
				t.Errorf("ttft %v for a JSON run", rec.TTFTP50Ms)
			}
		})
	}
}

func TestRunFailsFast(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, url, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{Behavior: mock.Behavior{ForceStatus: http.StatusUnauthorized}})
	if err != nil {
		t.Fatal(err)
	}
	c := config{mode: record.ModeSerial, url: url, model: "gpt-4o", duration: time.Hour}
	if err := run(ctx, c, &bytes.Buffer{}); err == nil {
		t.Error("run against a mock answering 401: no error")
	}
}

// TestRunStreams holds a few long streams against an in-process mock and
// checks the streams-mode record: every event of the window counted, the
// rates and TTFT filled in.
func TestRunStreams(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const ttft = 5 * time.Millisecond
	_, url, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{Behavior: mock.Behavior{TTFT: ttft, TPS: 200, CompletionTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c := config{target: "direct", mode: record.ModeStreams, url: url, key: "sk-test", model: "gpt-4o",
		concurrency: 8, duration: 400 * time.Millisecond, warmup: 100 * time.Millisecond}
	if err := run(ctx, c, &out); err != nil {
		t.Fatal(err)
	}
	var rec record.Record
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("decoding %q: %v", out.String(), err)
	}
	if rec.Mode != record.ModeStreams || rec.Concurrency != 8 || rec.Case() != "8 streams" {
		t.Errorf("mode %q concurrency %d case %q", rec.Mode, rec.Concurrency, rec.Case())
	}
	// 8 streams at 200 events/s each for 0.4 s: about 640 events.
	if rec.Errors != 0 || rec.Events < 200 || rec.EventsPerSec < 500 || rec.TTFTP50Ms < ms(ttft) {
		t.Errorf("record = %+v", rec)
	}
}
