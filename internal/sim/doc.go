// Package sim is Switchyard's virtual-time traffic simulator
// (docs/simulator.md, issue 8 "See it before production"): it replays a
// scenario — traffic phases, sessions, and a model of every upstream provider
// with its latency, rate limits, errors, outages, brown-outs and hangs —
// through the gateway's real request path: the proxy's HTTP handler, its
// attempt loop, balancer, breakers, RPM/TPM limiter, slots and queues,
// statistics, affinity table, retry budget and spend, with no socket and no
// sleeping.
//
// Each request is a goroutine run by a cooperative scheduler that is also
// the virtual clock (sched): one runs at a time, until it blocks on the
// clock or the simulated upstream (transport), and timers fire in
// (time, sequence) order. Every random choice comes from a seeded PCG
// stream, one per concern (each traffic phase, each upstream's provider
// model, the probe jitter, the balancers), so the same scenario and seed
// give byte-identical outputs, and adding an upstream does not reshuffle the
// traffic. docs/simulator.md describes the scenario format and outputs.
package sim
