//go:build !unix

package codec

import "testing"

// agReportCPU reports nothing where getrusage does not exist.
func agReportCPU(*testing.B, int64) {}

// agCPUNow is -1: unknown.
func agCPUNow() int64 { return -1 }
