package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// errProcFormat is returned when a /proc file does not look as expected.
var errProcFormat = errors.New("unexpected /proc format")

// cpuTime returns the user+system CPU time of process pid, from
// /proc/PID/stat (all threads, 10 ms resolution).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading cpu time: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line. The command name (field 2) is in parentheses and may contain spaces
// and parentheses, so fields are counted after the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("parsing stat: no ')': %w", errProcFormat)
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("parsing stat: %d fields: %w", len(f)+2, errProcFormat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// peakRSS returns process pid's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading peak rss: %w", err)
	}
	return parseStatusKB(b, "VmHWM")
}

// currentRSS returns process pid's resident set size now (VmRSS) in bytes.
func currentRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading rss: %w", err)
	}
	return parseStatusKB(b, "VmRSS")
}

// parseStatusKB returns the value of a "Name:  1234 kB" line of
// /proc/PID/status, in bytes.
func parseStatusKB(status []byte, name string) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("parsing %s %q: %w", name, line, errProcFormat)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %w", name, err)
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("parsing status: no %s line: %w", name, errProcFormat)
}

// resetPeakRSS sets process pid's VmHWM back to its current RSS (Linux ≥ 4.0;
// needs the right to write /proc/PID/clear_refs, which the owner has).
func resetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting peak rss: %w", err)
	}
	return nil
}
