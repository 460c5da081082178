package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/store"
	"switchyard/internal/store/internal/watch"
)

// DefaultPollInterval is how often Watch reads the configuration change
// counter as a fallback to notifications, which a broken connection loses.
const DefaultPollInterval = 5 * time.Second

// notifyChannel is the channel the configuration trigger notifies, with the
// schema's name as payload (migration 0003).
const notifyChannel = "switchyard_config"

// closeTimeout bounds closing the listener connection.
const closeTimeout = 5 * time.Second

// Watch calls onChange after upstreams, keys or routes changed, until ctx
// ends (see store.Watcher). It holds a connection of its own, outside the
// pool, that LISTENs on switchyard_config, where a trigger announces every
// committed change to this schema, by any instance or any SQL session: such a
// change is reported at once. When that connection fails, Watch reconnects
// with a backoff from 250ms to 5s and calls onChange once it listens again.
// As a fallback for lost notifications it also polls the change counter the
// trigger raises, every DefaultPollInterval. The first calls come when the
// listener first listens and when the poll first reads the counter.
func (s *Store) Watch(ctx context.Context, onChange func()) error {
	wctx, leave, err := s.watchers.Join(ctx)
	if err != nil {
		return fmt.Errorf("watching postgres store: %w", err)
	}
	defer leave()
	sig := watch.NewSignal()
	var wg sync.WaitGroup
	wg.Go(func() { s.listen(wctx, sig) })
	wg.Go(func() { watch.Poll(wctx, s.clock, s.pollEvery, s.configVersion, sig, sig.Notify) })
	sig.Deliver(wctx, onChange)
	wg.Wait()
	if ctx.Err() == nil {
		return fmt.Errorf("watching postgres store: %w", store.ErrClosed)
	}
	return nil
}

// listen keeps a listener connection up until ctx ends, reconnecting after
// a failure with an exponential backoff that restarts once a connection
// listened.
func (s *Store) listen(ctx context.Context, sig watch.Signal) {
	backoff := s.backoffMin
	for {
		listened := s.listenOnce(ctx, sig)
		if listened {
			backoff = s.backoffMin
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(backoff):
		}
		backoff = min(2*backoff, s.backoffMax)
	}
}

// listenOnce connects, LISTENs and notifies sig for every notification about
// this schema until the connection fails or ctx ends. Once it listens it
// notifies sig, as changes may have been missed while it did not. It
// reports whether it got as far as listening.
func (s *Store) listenOnce(ctx context.Context, sig watch.Signal) (listened bool) {
	conn, err := pgx.ConnectConfig(ctx, s.listenConfig.Copy())
	if err != nil {
		return false
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return false
	}
	if s.onListen != nil {
		s.onListen(conn.PgConn().PID())
	}
	sig.Notify()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		if n.Channel == notifyChannel && n.Payload == s.schema {
			sig.Notify()
		}
	}
}

// configVersion reads the configuration change counter.
func (s *Store) configVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT version FROM config_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading config version: %w", err)
	}
	return v, nil
}
