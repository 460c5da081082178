//go:build unix

package codec

import (
	"syscall"
	"testing"
)

// agReportCPU reports the process's CPU time per operation since start
// (from agCPUNow), as "cpu-ns/op": on a shared machine it measures the
// work better than the wall clock, which counts time the benchmark waited
// for a core.
func agReportCPU(b *testing.B, start int64) {
	if start >= 0 {
		b.ReportMetric(float64(agCPUNow()-start)/float64(b.N), "cpu-ns/op")
	}
}

// agCPUNow is the process's user and system CPU time in nanoseconds.
func agCPUNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
