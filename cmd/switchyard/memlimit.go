package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"switchyard/internal/clock"
)

// memoryGovernor keeps memory_limit_mb a soft limit. The Go runtime's limit
// makes the collector run more often as memory nears it; but when what the
// process holds outgrows the limit for good — a burst leaves thousands of
// keep-alive connections with their buffers and stacks, and a fragmented
// heap — the collector would run without pause and take the CPU from the
// requests (a GC death spiral: a gateway that was overloaded once stays
// slow). The governor watches the runtime's memory every interval; when it
// stays above 90% of the limit for three checks in a row it raises the limit
// to twice what is in use, and logs why; when use falls under a quarter of a
// raised limit it lowers the limit again, to twice what is in use but never
// under memory_limit_mb.
type memoryGovernor struct {
	configured int64 // bytes, from memory_limit_mb
	current    int64
	high       int   // consecutive checks above 90% of current
	lastLogged int64 // the limit last set
}

// governorInterval is how often the governor reads the runtime's memory.
const governorInterval = time.Second

// step takes one reading of the memory in use (bytes the runtime holds and
// has not returned to the OS) and returns the limit to set, and whether it
// changed.
func (g *memoryGovernor) step(used int64) (limit int64, changed bool) {
	switch {
	case used > g.current/10*9:
		g.high++
		if g.high >= 3 {
			g.high = 0
			g.current = 2 * used
			return g.current, true
		}
	case g.current > g.configured && used < g.current/4:
		g.high = 0
		g.current = max(g.configured, 2*used)
		return g.current, true
	default:
		g.high = 0
	}
	return g.current, false
}

// runMemoryGovernor keeps the soft memory limit of limit bytes, already
// set, from starving the process, until ctx ends.
func runMemoryGovernor(ctx context.Context, clk clock.Clock, logger *slog.Logger, limit int64) {
	g := &memoryGovernor{configured: limit, current: limit, lastLogged: limit}
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(governorInterval):
		}
		metrics.Read(sample)
		used := int64(sample[0].Value.Uint64() - sample[1].Value.Uint64())
		next, changed := g.step(used)
		if !changed {
			continue
		}
		debug.SetMemoryLimit(next)
		if next > g.lastLogged {
			logger.Warn("soft memory limit raised: the process holds more than memory_limit_mb, and the collector would run without pause",
				"in_use_mib", used>>20, "limit_mib", next>>20, "memory_limit_mb", limit>>20)
		} else {
			logger.Info("soft memory limit lowered as memory use fell", "in_use_mib", used>>20, "limit_mib", next>>20, "memory_limit_mb", limit>>20)
		}
		g.lastLogged = next
	}
}
