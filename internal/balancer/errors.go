package balancer

import "errors"

// Sentinel errors returned by New; classify them with errors.Is.
var (
	// ErrUnknownStrategy means Options.Strategy names no registered strategy.
	ErrUnknownStrategy = errors.New("unknown strategy")
	// ErrNoClock means Options.Now is nil; the balancer never reads the wall
	// clock on its own.
	ErrNoClock = errors.New("options.Now is required")
)
