package main

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"switchyard/internal/clock"
)

// memoryGovernor keeps memory_limit_mb a soft limit. The Go runtime's limit
// makes the collector run more often as memory nears it; but when what the
// process holds outgrows the limit for good — a surge of long streams whose
// buffers alone are more than the limit, a burst that leaves thousands of
// keep-alive connections and a fragmented heap — the collector would run
// without pause and take the CPU from the requests (a GC death spiral: a
// gateway that was overloaded once stays slow). The governor reads the
// runtime's memory and the collector's share of the CPU every
// governorInterval; when memory stays above 90% of the limit while the
// collector takes at least spiralShare of the CPU, for raiseAfter checks in
// a row (three quarters of a second), it raises the limit to twice what is
// in use, and logs why. Near the limit with the collector at ease — JSON
// traffic, whose garbage the limit exists to bound — it leaves the limit
// alone. When use stays under a quarter of a raised limit for lowerAfter
// checks (two seconds) it lowers the limit again, to twice what is in use
// but never under memory_limit_mb. Lowering waits longer than raising, so
// that the lull between two waves of traffic does not bring back the
// spiral.
//
// Measured with 1,000 streams arriving within a second at the default 40 MiB
// (docs/benchmarks.md#the-memory-governor-and-a-surge-of-streams): checked
// every second on memory alone, the collector ran 73–99 times in the surge's
// first 6 s and the gateway spent 86–88 µs of CPU per event; as now, 39–40
// times and 53–57 µs, and JSON traffic near the limit keeps it.
type memoryGovernor struct {
	configured int64 // bytes, from memory_limit_mb
	current    int64
	high       int   // consecutive checks above 90% of current
	low        int   // consecutive checks under a quarter of a raised current
	lastLogged int64 // the limit last set
}

const (
	// governorInterval is how often the governor reads the runtime's memory.
	governorInterval = 250 * time.Millisecond
	// raiseAfter is the checks in a row above 90% of the limit, with the
	// collector at spiralShare of the CPU or more, that raise it.
	raiseAfter = 3
	// spiralShare is the collector's share of the CPU (of GOMAXPROCS ×
	// the interval) that, near the limit, is a spiral: its background
	// workers alone take a quarter, and the requests' allocations assist
	// it on top. Steady JSON traffic at full load measures 5–10%.
	spiralShare = 0.25
	// lowerAfter is the checks in a row under a quarter of a raised limit
	// that lower it.
	lowerAfter = 8
)

// step takes one reading of the memory in use (bytes the runtime holds and
// has not returned to the OS) and of the collector's share of the CPU since
// the last reading, and returns the limit to set, and whether it changed.
func (g *memoryGovernor) step(used int64, gcShare float64) (limit int64, changed bool) {
	switch {
	case used > g.current/10*9 && gcShare >= spiralShare:
		g.high, g.low = g.high+1, 0
		if g.high >= raiseAfter {
			g.high = 0
			g.current = 2 * used
			return g.current, true
		}
	case g.current > g.configured && used < g.current/4:
		g.high, g.low = 0, g.low+1
		if g.low >= lowerAfter {
			g.low = 0
			g.current = max(g.configured, 2*used)
			return g.current, true
		}
	default:
		g.high, g.low = 0, 0
	}
	return g.current, false
}

// runMemoryGovernor keeps the soft memory limit of limit bytes, already
// set, from starving the process, until ctx ends.
func runMemoryGovernor(ctx context.Context, clk clock.Clock, logger *slog.Logger, limit int64) {
	g := &memoryGovernor{configured: limit, current: limit, lastLogged: limit}
	sample := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
	}
	var lastGC, lastTotal float64
	for {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(governorInterval):
		}
		metrics.Read(sample)
		used := int64(sample[0].Value.Uint64() - sample[1].Value.Uint64())
		gc, total := sample[2].Value.Float64(), sample[3].Value.Float64()
		var gcShare float64
		if total > lastTotal {
			gcShare = (gc - lastGC) / (total - lastTotal)
		}
		lastGC, lastTotal = gc, total
		next, changed := g.step(used, gcShare)
		if !changed {
			continue
		}
		debug.SetMemoryLimit(next)
		if next > g.lastLogged {
			logger.Warn("soft memory limit raised: the process holds more than memory_limit_mb, and the collector would run without pause",
				"in_use_mib", used>>20, "limit_mib", next>>20, "memory_limit_mb", limit>>20, "gc_cpu_share", math.Round(gcShare*100)/100)
		} else {
			logger.Info("soft memory limit lowered as memory use fell", "in_use_mib", used>>20, "limit_mib", next>>20, "memory_limit_mb", limit>>20)
		}
		g.lastLogged = next
	}
}
