package main

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// longRun is what a streams-mode run measured: the streams' TTFTs and
// ends, and the events counted inside the measured window.
type longRun struct {
	summary
	events int64 // data lines received inside the window
}

// streamCounter counts the data lines every worker receives.
type streamCounter struct{ events atomic.Int64 }

// longStreams holds n streams open at once for warmup+d: each worker
// starts a stream, reads it to its end and starts the next. The workers
// start spread over the first second (or the warm-up, when shorter) so
// that n connections do not arrive in one burst. window is called at the
// start and at the end of the measured part (after warmup), for the
// caller's CPU and memory snapshots. Streams that start inside the window
// give the TTFT and total percentiles and the errors; events are counted
// inside the window whichever stream they belong to. Streams still open
// when the window ends are canceled: their TTFT counts, their end and
// their cancellation do not.
func longStreams(ctx context.Context, client *http.Client, url string, header http.Header, body []byte,
	n int, warmup, d time.Duration, window func(end bool)) (*longRun, time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		cnt       streamCounter
		measuring atomic.Bool
		stopped   atomic.Bool
		wg        sync.WaitGroup
	)
	results := make([]summary, n)
	spread := min(warmup, time.Second)
	for i := range results {
		delay := spread * time.Duration(i) / time.Duration(n)
		wg.Go(func() {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			for ctx.Err() == nil {
				counted := measuring.Load()
				total, ttft, err := oneStream(ctx, client, url, header, body, func() {
					if measuring.Load() {
						cnt.events.Add(1)
					}
				})
				switch {
				case !counted:
					continue // began in the warm-up
				case stopped.Load():
					// Cut by the window's end: its TTFT counts, not its end.
					if ttft > 0 {
						results[i].requests++
						results[i].ttft = append(results[i].ttft, ttft)
					}
					continue
				}
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				results[i].add(total, ttft, msg)
			}
		})
	}
	sleepCtx(ctx, warmup)
	window(false)
	e0 := cnt.events.Load()
	measuring.Store(true)
	start := time.Now()
	sleepCtx(ctx, d)
	stopped.Store(true)
	e1 := cnt.events.Load()
	elapsed := time.Since(start)
	window(true)
	cancel()
	wg.Wait()
	var r longRun
	for i := range results {
		r.merge(&results[i])
	}
	r.events = e1 - e0
	return &r, elapsed
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
