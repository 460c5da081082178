//go:build unix

// Package benchutil holds what the benchmarks of several packages share.
package benchutil

import (
	"syscall"
	"testing"
)

// ReportCPU reports the process's CPU time per operation since start
// (from CPUNow), as "cpu-ns/op": on a shared machine it measures the work
// better than the wall clock, which counts time the benchmark waited for a
// core, and it counts the work of background goroutines (a batch
// exporter) that ns/op does not see.
func ReportCPU(b *testing.B, start int64) {
	if start >= 0 {
		b.ReportMetric(float64(CPUNow()-start)/float64(b.N), "cpu-ns/op")
	}
}

// CPUNow is the process's user and system CPU time in nanoseconds.
func CPUNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
