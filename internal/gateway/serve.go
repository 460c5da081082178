package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve answers HTTP on ln until ctx ends, then shuts down gracefully:
// it stops accepting, lets in-flight requests (streams included) finish
// within grace, then closes what is left. With admin.listen (and
// admin.token) set it also serves the admin API and dashboard there, and
// stops that listener the same way before returning.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	stopAdmin, aerr := g.serveAdminListener(ctx, grace) // admin.listen: the admin API on its own address
	if aerr != nil {
		return aerr
	}
	defer stopAdmin()
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // h2c for clients that speak it
	srv := &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: g.readHeaderTimeout,
		ReadTimeout:       g.readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		Protocols:         &protocols,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	began := g.clock.Now()
	g.log.Info("shutting down: no new connections; waiting for requests in flight", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		g.log.Warn("grace period over; closing remaining connections", "grace", grace.String())
		err = srv.Close()
	} else {
		g.log.Info("requests in flight finished", "took", g.clock.Now().Sub(began).Round(time.Millisecond).String())
	}
	// The losers of hedged races end on their own goroutines, after their
	// requests: wait for them too, within the same grace.
	if derr := g.proxy.Drain(sctx); derr != nil {
		g.log.Warn("grace period over; hedged attempts still unwinding", "err", derr)
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// Close flushes buffered request logs and closes the store.
func (g *Gateway) Close(ctx context.Context) error {
	var errs []error
	if g.logs != nil {
		errs = append(errs, g.logs.Close(ctx))
	}
	g.stop()
	g.bg.Wait()
	// Attempts still unwinding give their leases back before the shared
	// state closes.
	if err := g.proxy.Drain(ctx); err != nil {
		errs = append(errs, err)
	}
	if g.shared != nil {
		errs = append(errs, g.shared.Close())
	}
	errs = append(errs, g.store.Close())
	if g.tracer != nil { // last: the spans of the requests drained above
		errs = append(errs, g.tracer.Shutdown(ctx))
	}
	err := errors.Join(errs...)
	if err != nil {
		g.log.Error("stopped, with errors", "err", err)
	} else {
		g.log.Info("stopped: request logs and spend saved")
	}
	return err
}
