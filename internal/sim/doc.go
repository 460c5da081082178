// Package sim is Switchyard's virtual-time traffic simulator (DESIGN.md §1,
// issue 8 "See it before production"): it replays a scenario — traffic
// phases, sessions, and a model of every upstream provider with its latency,
// rate limits, errors, outages, brown-outs and hangs — through the gateway's
// real routing components (the proxy's planning hook, balancer, breakers,
// RPM/TPM limiter, slots, statistics, affinity table, retry budget, spend),
// driven by a clock.Fake, without goroutines, sleeping or sockets.
//
// The engine is a single-goroutine discrete-event loop: a min-heap of events
// ordered by (virtual time, sequence number). Every random choice comes from
// a seeded PCG stream, one per concern (each traffic phase, each upstream's
// provider model, the probe jitter, the balancers), so the same scenario and
// seed give byte-identical outputs, and adding an upstream does not reshuffle
// the traffic. docs/simulator.md describes the scenario format and outputs.
package sim
