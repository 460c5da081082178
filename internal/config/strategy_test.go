package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard/internal/balancer"
)

// strategyErr returns the message Validate gives defaults.strategy set to
// name, or "" when it accepts the name.
func strategyErr(t *testing.T, name string) string {
	t.Helper()
	c := validConfig()
	c.Defaults.Strategy = name
	c.Routes[0].RouteSettings = c.Defaults
	for _, e := range c.Validate() {
		if e.Path == "defaults.strategy" {
			return e.Msg
		}
	}
	return ""
}

// TestStrategyNamesComeFromTheBalancer: config accepts a strategy name
// exactly when the balancer can build it, and the list check-config offers
// is the balancer's registry, so the two cannot drift apart.
func TestStrategyNamesComeFromTheBalancer(t *testing.T) {
	names := append(balancer.StrategyNames(),
		"fastest", "random", "Weighted-Random", "least_conn", "smooth-wrr ", "wrr")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			_, err := balancer.New(balancer.Options{Strategy: name, Now: time.Now})
			builds := err == nil
			if !builds && !errors.Is(err, balancer.ErrUnknownStrategy) {
				t.Fatalf("balancer.New(%q) = %v, want nil or ErrUnknownStrategy", name, err)
			}
			msg := strategyErr(t, name)
			if accepted := msg == ""; accepted != builds {
				t.Errorf("config accepts %q = %v (%q), balancer builds it = %v", name, accepted, msg, builds)
			}
		})
	}

	msg := strategyErr(t, "fastest")
	list, ok := strings.CutPrefix(msg, "must be one of ")
	if !ok {
		t.Fatalf("defaults.strategy error = %q, want it to list the valid names", msg)
	}
	list, _, _ = strings.Cut(list, ";")
	if offered := strings.Split(list, ", "); !slices.Equal(offered, balancer.StrategyNames()) {
		t.Errorf("config offers %v, want the balancer's registry %v", offered, balancer.StrategyNames())
	}
}
