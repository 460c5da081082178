//go:build !unix

// Package benchutil holds what the benchmarks of several packages share.
package benchutil

import "testing"

// ReportCPU reports nothing where getrusage does not exist.
func ReportCPU(*testing.B, int64) {}

// CPUNow is -1: unknown.
func CPUNow() int64 { return -1 }
