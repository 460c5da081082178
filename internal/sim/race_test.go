//go:build race

package sim

// raceEnabled: the race detector slows a scenario of tens of thousands of
// requests tenfold; .ci/run runs those tests without it.
const raceEnabled = true
