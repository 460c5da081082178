package limits

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 120 * time.Second, true},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0.0000000019", 1, true}, // digits beyond nanoseconds are dropped
		{"86400", MaxRetryAfter, true},
		{"999999999999999999999999", MaxRetryAfter, true},
		{now.Add(45 * time.Second).Format(http.TimeFormat), 45 * time.Second, true},
		{"Friday, 14-Mar-25 12:01:00 GMT", time.Minute, true}, // RFC 850
		{"Fri Mar 14 12:00:30 2025", 30 * time.Second, true},  // asctime
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1e3", 0, false},
		{"5s", 0, false},
		{"0x10", 0, false},
		{"NaN", 0, false},
		{"soon", 0, false},
		{"2025-03-14T12:00:30Z", 0, false}, // not an HTTP-date
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.in, now)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v, want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseResetDuration(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1s", time.Second, true},
		{"6m0s", 6 * time.Minute, true},
		{"20ms", 20 * time.Millisecond, true},
		{"1h2m3.5s", time.Hour + 2*time.Minute + 3500*time.Millisecond, true},
		{"0s", 0, true},
		{"59.56s", 59560 * time.Millisecond, true},
		{"30", 30 * time.Second, true},
		{"1.25", 1250 * time.Millisecond, true},
		{"1000000h", MaxRetryAfter, true},
		{"2025-03-14T12:00:30Z", 31 * time.Second, true}, // whole seconds round up
		{"2025-03-14T12:00:30.5Z", 30500 * time.Millisecond, true},
		{"2025-03-14T12:00:30.5Z", 30500 * time.Millisecond, true},
		{"2025-03-14T13:00:30+01:00", 31 * time.Second, true},
		{"2025-03-14T11:00:00Z", 0, true},
		{"1741953645", 45 * time.Second, true}, // a Unix time
		{"", 0, false},
		{"-1s", 0, false},
		{"1d", 0, false},
		{"soon", 0, false},
		{"Fri, 14 Mar 2025 12:00:30 GMT", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseResetDuration(tc.in, now)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("ParseResetDuration(%q) = %v, %v, want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// fuzzNow is the fixed now the fuzz targets parse against.
var fuzzNow = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

// checkWait is the property both parsers keep for every input: a result in
// [0, MaxRetryAfter], and 0 whenever parsing fails.
func checkWait(t *testing.T, fn string, in string, d time.Duration, ok bool) {
	t.Helper()
	if d < 0 || d > MaxRetryAfter {
		t.Fatalf("%s(%q) = %v, outside [0, %v]", fn, in, d, MaxRetryAfter)
	}
	if !ok && d != 0 {
		t.Fatalf("%s(%q) failed but returned %v", fn, in, d)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "1.5", "0", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "Fri Mar 14 12:00:30 2025", "99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := ParseRetryAfter(in, fuzzNow)
		checkWait(t, "ParseRetryAfter", in, d, ok)
		// A successful parse of whitespace-padded input gives the same wait.
		d2, ok2 := ParseRetryAfter(" "+in+" ", fuzzNow)
		if ok && (!ok2 || d2 != d) {
			t.Fatalf("padding %q changed the result: %v,%v → %v,%v", in, d, ok, d2, ok2)
		}
	})
}

func FuzzParseResetDuration(f *testing.F) {
	for _, s := range []string{"1s", "6m0s", "20ms", "1h2m3.5s", "30", "2025-03-14T12:00:30Z", "1741953645", "-1s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := ParseResetDuration(in, fuzzNow)
		checkWait(t, "ParseResetDuration", in, d, ok)
	})
}
