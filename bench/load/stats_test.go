package main

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"p50 of two is the lower", ms(1, 2), 0.5, time.Millisecond},
		{"p50 of three", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 0.5, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 1, 100 * time.Millisecond},
		{"p99 of ten is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{"tiny q is the min", ms(3, 4, 5), 0.0001, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("percentile(q=%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	var a, b summary
	a.add(3*time.Millisecond, 0, "")
	a.add(0, 0, "status 502")
	a.add(1*time.Millisecond, 0, "")
	b.add(2*time.Millisecond, time.Millisecond, "")
	b.add(0, 0, "EOF")
	a.merge(&b)
	if a.requests != 5 || a.errors != 2 || a.firstErr != "status 502" {
		t.Errorf("requests %d errors %d first %q, want 5, 2, status 502", a.requests, a.errors, a.firstErr)
	}
	p50, p99, t50, t99 := a.quantiles()
	if p50 != 2 || p99 != 3 || t50 != 1 || t99 != 1 {
		t.Errorf("quantiles = %v %v %v %v, want 2 3 1 1", p50, p99, t50, t99)
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{
			name: "plain",
			stat: "4242 (switchyard) S 1 4242 4242 0 -1 4194560 2811 0 0 0 150 37 0 0 20 0 8 0 3561 1300000000 9000 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0\n",
			want: 187 * clockTick,
		},
		{
			name: "name with spaces and parentheses",
			stat: "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1\n",
			want: 11 * clockTick,
		},
		{name: "truncated", stat: "7 (x) R 1 2 3", wantErr: true},
		{name: "no name", stat: "7 x R", wantErr: true},
		{name: "not a number", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 five 6 0 0\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("cpu = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStatusKB(t *testing.T) {
	const status = "Name:\tswitchyard\nVmPeak:\t 1300000 kB\nVmHWM:\t   41236 kB\nVmRSS:\t   39000 kB\n"
	got, err := parseStatusKB([]byte(status), "VmHWM")
	if err != nil || got != 41236*1024 {
		t.Errorf("VmHWM = %d, %v; want %d", got, err, 41236*1024)
	}
	if _, err := parseStatusKB([]byte(status), "VmSwap"); !errors.Is(err, errProcFormat) {
		t.Errorf("missing line: err = %v, want errProcFormat", err)
	}
	if _, err := parseStatusKB([]byte("VmHWM: 12 MB\n"), "VmHWM"); !errors.Is(err, errProcFormat) {
		t.Errorf("wrong unit: err = %v, want errProcFormat", err)
	}
}

func TestProcSelf(t *testing.T) {
	pid := os.Getpid()
	if _, err := cpuTime(pid); err != nil {
		t.Errorf("cpuTime(self): %v", err)
	}
	rss, err := peakRSS(pid)
	if err != nil || rss <= 0 {
		t.Errorf("peakRSS(self) = %d, %v", rss, err)
	}
}
