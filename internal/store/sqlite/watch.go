package sqlite

import (
	"context"
	"fmt"
	"time"

	"switchyard/internal/store"
	"switchyard/internal/store/internal/watch"
)

// DefaultPollInterval is how often Watch reads the configuration change
// counter. A change made by another process on the same file is therefore
// reported within about this long.
const DefaultPollInterval = 2 * time.Second

// Watch calls onChange after upstreams, keys or routes changed, until ctx
// ends (see store.Watcher). It polls config_version, a counter that triggers
// raise on every insert, update and delete of those tables, every
// DefaultPollInterval: a change made by another process on the same file,
// or through this Store, is reported within that period. Watch calls
// onChange once when it has read the counter for the first time.
func (s *Store) Watch(ctx context.Context, onChange func()) error {
	wctx, leave, err := s.watchers.Join(ctx)
	if err != nil {
		return fmt.Errorf("watching sqlite store: %w", err)
	}
	defer leave()
	sig := watch.NewSignal()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		watch.Poll(wctx, s.clock, s.pollEvery, s.configVersion, sig, sig.Notify)
	}()
	sig.Deliver(wctx, onChange)
	<-polled
	if ctx.Err() == nil {
		return fmt.Errorf("watching sqlite store: %w", store.ErrClosed)
	}
	return nil
}

// configVersion reads the configuration change counter.
func (s *Store) configVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.r.QueryRowContext(ctx, `SELECT version FROM config_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading config version: %w", err)
	}
	return v, nil
}
