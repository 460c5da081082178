package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// attack runs vegeta for d: at rate req/s when rate > 0 (vegeta adds
// workers as needed), else as fast as workers closed-loop workers can. It
// returns what it measured and how long the attack took, from its start
// until the last answer.
func attack(client *http.Client, url string, header http.Header, body []byte, rate, workers int, d time.Duration) (*summary, time.Duration) {
	opts := []func(*vegeta.Attacker){vegeta.Client(client), vegeta.MaxBody(0), vegeta.Redirects(vegeta.NoFollow)}
	if workers > 0 {
		opts = append(opts, vegeta.Workers(uint64(workers)), vegeta.MaxWorkers(uint64(workers)))
	}
	atk := vegeta.NewAttacker(opts...)
	tgt := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: url, Body: body, Header: header})
	var s summary
	start := time.Now()
	for res := range atk.Attack(tgt, vegeta.Rate{Freq: rate, Per: time.Second}, d, "") {
		err := res.Error
		if err == "" && (res.Code < 200 || res.Code > 299) {
			err = fmt.Sprintf("status %d", res.Code)
		}
		s.add(res.Latency, 0, err)
	}
	return &s, time.Since(start)
}

// streams runs n workers for d, each sending one streaming request after the
// other and reading it to its end. TTFT is the time to the first line that
// starts with "data:".
func streams(ctx context.Context, client *http.Client, url string, header http.Header, body []byte, n int, d time.Duration) (*summary, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(d)
	results := make([]summary, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				total, ttft, err := oneStream(ctx, client, url, header, body, nil)
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				results[i].add(total, ttft, msg)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var s summary
	for i := range results {
		s.merge(&results[i])
	}
	return &s, elapsed
}

// dataPrefix starts an SSE data line.
var dataPrefix = []byte("data:")

// oneStream sends one streaming request and reads it to the end, calling
// onData (when not nil) for each data line.
func oneStream(ctx context.Context, client *http.Client, url string, header http.Header, body []byte, onData func()) (total, ttft time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header = header.Clone()
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	r := bufio.NewReaderSize(resp.Body, 4<<10)
	for {
		line, err := r.ReadSlice('\n')
		if bytes.HasPrefix(line, dataPrefix) {
			if ttft == 0 {
				ttft = time.Since(start)
			}
			if onData != nil {
				onData()
			}
		}
		if err != nil {
			if err == bufio.ErrBufferFull {
				continue
			}
			if ttft == 0 {
				return 0, 0, fmt.Errorf("stream ended without a data line: %w", err)
			}
			if !errors.Is(err, io.EOF) {
				return 0, ttft, fmt.Errorf("reading the stream: %w", err)
			}
			return time.Since(start), ttft, nil
		}
	}
}
