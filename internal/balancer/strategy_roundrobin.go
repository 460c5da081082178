package balancer

// newRoundRobin returns the round-robin strategy: it rotates over the tier's
// survivors in input order, one step per real pick, so n upstreams get exactly
// equal counts over every n picks (a b c a b c …). It is nginx's round robin,
// i.e. smooth weighted round robin (seed 002; strategy_smoothwrr.go) with
// every weight taken as 1: keeping the rotation as a current weight per
// upstream name, rather than a bare counter modulo the tier size, keeps it fair
// when a candidate drops out of a tier for a while (filtered, excluded) and
// lets SlowStart thin a recovering upstream's turns in proportion to its
// factor. The retry order is the rest of the rotation.
func newRoundRobin(strategyEnv) Strategy {
	return &smoothWRR{name: StrategyRoundRobin, unit: true, peers: map[string]*wrrPeer{}}
}
