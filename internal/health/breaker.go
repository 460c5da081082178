package health

import (
	"fmt"
	"sync"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// Breakers holds one circuit breaker per upstream name.
//
// This is the minimal breaker of the foundation: `failure_threshold`
// consecutive server errors (or one auth error) open it for `open_duration`;
// once that has passed it lets traffic through again (half-open), where one
// more failure re-opens it and a success closes it. Safe for concurrent use.
type Breakers struct {
	clock clock.Clock
	cfg   config.Circuit

	mu   sync.Mutex // guards byUp
	byUp map[string]*breaker
}

type breaker struct {
	failures  int
	tripped   bool // opened at least once since the last success
	openUntil time.Time
	reason    string
}

// View is a breaker's state as the balancer sees it.
type View struct {
	// Open is true while the breaker rejects traffic.
	Open bool
	// Reason says why it opened.
	Reason string
	// Until is when an open breaker lets traffic through again.
	Until time.Time
}

// NewBreakers returns breakers configured by cfg, timed by clk.
func NewBreakers(cfg config.Circuit, clk clock.Clock) *Breakers {
	return &Breakers{clock: clk, cfg: cfg, byUp: map[string]*breaker{}}
}

// View returns the breaker state of upstream name now.
func (b *Breakers) View(name string) View {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.byUp[name]
	if br == nil || !br.tripped {
		return View{}
	}
	now := b.clock.Now()
	if now.Before(br.openUntil) {
		return View{Open: true, Reason: br.reason, Until: br.openUntil}
	}
	return View{Reason: br.reason}
}

// Record feeds one attempt's outcome for upstream name into its breaker.
func (b *Breakers) Record(name string, o Outcome, detail string) {
	if o != Success && o != ServerError && o != AuthError {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.byUp[name]
	if br == nil {
		if o == Success {
			return
		}
		br = &breaker{}
		b.byUp[name] = br
	}
	now := b.clock.Now()
	switch o {
	case Success:
		*br = breaker{}
	case AuthError:
		b.openLocked(br, now, "auth error: "+detail)
	case ServerError:
		br.failures++
		if br.tripped || br.failures >= b.cfg.FailureThreshold {
			b.openLocked(br, now, fmt.Sprintf("%d consecutive failures, last: %s", br.failures, detail))
		}
	}
}

// openLocked opens br until now + open_duration; b.mu must be held.
func (b *Breakers) openLocked(br *breaker, now time.Time, reason string) {
	br.tripped = true
	br.openUntil = now.Add(b.cfg.OpenDuration)
	br.reason = reason
}

// Forget drops the breaker of an upstream that no longer exists.
func (b *Breakers) Forget(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byUp, name)
}
