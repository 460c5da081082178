package gateway_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

// errStoreDown is the failure failingStore injects.
var errStoreDown = errors.New("store down")

// failingStore is a real sqlite store that fails one step of gateway.New
// and counts Close calls instead of closing (the test closes it).
type failingStore struct {
	store.Store
	fail   string          // "seed", "catalog" or "spend": the step that fails; "" none
	wait   <-chan struct{} // nil, or seeding waits for it (at most 5 s)
	closes atomic.Int32
}

func newFailingStore(t *testing.T, fail string) *failingStore {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "switchyard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &failingStore{Store: st, fail: fail}
}

func (s *failingStore) UpsertUpstream(ctx context.Context, u config.Upstream) error {
	if s.wait != nil {
		select {
		case <-s.wait:
		case <-time.After(5 * time.Second):
		}
	}
	if s.fail == "seed" {
		return errStoreDown
	}
	return s.Store.UpsertUpstream(ctx, u)
}

func (s *failingStore) ListUpstreams(ctx context.Context) ([]config.Upstream, error) {
	if s.fail == "catalog" {
		return nil, errStoreDown
	}
	return s.Store.ListUpstreams(ctx)
}

func (s *failingStore) LoadSpend(ctx context.Context, since time.Time) ([]store.SpendTotal, error) {
	if s.fail == "spend" {
		return nil, errStoreDown
	}
	return s.Store.LoadSpend(ctx, since)
}

func (s *failingStore) Close() error {
	s.closes.Add(1)
	return nil
}

// fakeRedis listens where the gateway's Redis client connects and returns
// the URL to give it, asking for one pre-warmed connection
// (min_idle_conns=1), which the client dials in the background as soon as
// it is made. accepted receives once that connection is up, closed once the
// client has closed it. Nothing is ever sent on it: the connection only
// witnesses whether the client was closed.
func fakeRedis(t *testing.T) (url string, accepted, closed <-chan struct{}) {
	t.Helper()
	ln := listen(t)
	up, down := make(chan struct{}), make(chan struct{})
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		close(up)
		var b [64]byte
		for {
			if _, err := conn.Read(b[:]); err != nil { // EOF: the client closed it
				close(down)
				return
			}
		}
	}()
	return "redis://" + ln.Addr().String() + "/0?min_idle_conns=1", up, down
}

// refusingPostgres returns a postgres DSN whose server, once wait receives
// (or 5 s have passed), hangs up on every connection: opening that store
// fails, but only after wait.
func refusingPostgres(t *testing.T, wait <-chan struct{}) string {
	t.Helper()
	ln := listen(t)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case <-wait:
			case <-time.After(5 * time.Second):
			}
			_ = conn.Close()
		}
	}()
	return "postgres://switchyard@" + ln.Addr().String() + "/switchyard?sslmode=disable&connect_timeout=10"
}

// listen listens on a loopback port until the end of t.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// TestNewFailureReleasesWhatItOpened: when gateway.New fails after it has
// made the Redis client, the client is closed (its connection ends), and a
// store the caller passed in opts.Store is never closed: it is the
// caller's. When New succeeds, Gateway.Close closes that store once.
func TestNewFailureReleasesWhatItOpened(t *testing.T) {
	tests := []struct {
		name     string
		redis    bool   // state.driver: redis
		ownStore bool   // no opts.Store: New opens a postgres store, which fails
		fail     string // the failingStore step that fails
		edit     func(*config.Config)
	}{
		{name: "succeeds, caller's store, with redis", redis: true},
		{name: "seeding fails, caller's store", fail: "seed"},
		{name: "loading the catalog fails, caller's store", fail: "catalog"},
		{name: "loading spend fails, caller's store", fail: "spend"},
		{name: "bad route strategy, caller's store",
			edit: func(c *config.Config) { c.Defaults.Strategy = "fastest" }},
		{name: "opening the store fails, with redis", redis: true, ownStore: true},
		{name: "seeding fails, with redis", redis: true, fail: "seed"},
		{name: "loading spend fails, with redis", redis: true, fail: "spend"},
		{name: "bad route strategy, with redis", redis: true,
			edit: func(c *config.Config) { c.Defaults.Strategy = "fastest" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Store.DSN = filepath.Join(t.TempDir(), "switchyard.db")
			cfg.Health.Interval = 0
			cfg.Upstreams = []config.Upstream{upstreamAt("up", config.ProviderOpenAI, "http://127.0.0.1:1", 0, "gpt-4o")}
			// With Redis, New fails only once the client's connection is
			// up, so that whether New closed the client shows.
			var redisUp, redisClosed <-chan struct{}
			if tt.redis {
				cfg.State.Driver = "redis"
				cfg.State.RedisURL, redisUp, redisClosed = fakeRedis(t)
			}
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			var opts gateway.Options
			var st *failingStore
			if tt.ownStore {
				cfg.Store.Driver, cfg.Store.DSN = "postgres", refusingPostgres(t, redisUp)
			} else {
				st = newFailingStore(t, tt.fail)
				st.wait = redisUp
				opts.Store = st
			}
			wantErr := tt.fail != "" || tt.edit != nil || tt.ownStore

			g, err := gateway.New(context.Background(), &cfg, opts)
			if (err != nil) != wantErr {
				t.Fatalf("New error = %v, want error %v", err, wantErr)
			}
			if tt.fail != "" && !errors.Is(err, errStoreDown) {
				t.Errorf("New error = %v, want it to wrap %v", err, errStoreDown)
			}
			if tt.ownStore && !strings.Contains(err.Error(), "opening postgres store") {
				t.Errorf("New error = %v, want opening the postgres store to fail", err)
			}
			if err == nil {
				if err := g.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
			}
			if st != nil {
				want := int32(0) // New failed: the caller still owns its store
				if err == nil {
					want = 1 // Gateway.Close closes it
				}
				if got := st.closes.Load(); got != want {
					t.Errorf("caller's store closed %d times, want %d", got, want)
				}
			}
			if redisClosed != nil {
				select {
				case <-redisClosed:
				case <-time.After(5 * time.Second):
					t.Errorf("the Redis client's connection is still open 5s after New/Close returned: the client leaked")
				}
			}
		})
	}
}

// TestNewFailureShutsDownTracer: when gateway.New fails after it has built
// the tracer provider (loading spend fails), the provider is shut down:
// its batch span processor's goroutine ends. The collector address is
// never dialled (no span is made), so nothing else witnesses the leak.
func TestNewFailureShutsDownTracer(t *testing.T) {
	cfg := config.Default()
	cfg.Store.DSN = filepath.Join(t.TempDir(), "switchyard.db")
	cfg.Health.Interval = 0
	cfg.Upstreams = []config.Upstream{upstreamAt("up", config.ProviderOpenAI, "http://127.0.0.1:1", 0, "gpt-4o")}
	cfg.Tracing.OTLPEndpoint = "http://127.0.0.1:1"
	before := batchSpanProcessors()

	_, err := gateway.New(context.Background(), &cfg, gateway.Options{Store: newFailingStore(t, "spend")})
	if !errors.Is(err, errStoreDown) {
		t.Fatalf("New error = %v, want it to wrap %v", err, errStoreDown)
	}
	// A processor shut down has left its loop before Shutdown returned, so
	// it never shows here; a leaked one's goroutine may not have started
	// when New returns, so look over many scheduling rounds.
	for range 200 {
		if n := batchSpanProcessors(); n > before {
			t.Fatalf("%d batch span processors running after New failed, %d before: the tracer provider leaked", n, before)
		}
		runtime.Gosched()
	}
}

// batchSpanProcessors counts the goroutines of OpenTelemetry batch span
// processors running in this process.
func batchSpanProcessors() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "go.opentelemetry.io/otel/sdk/trace.(*batchSpanProcessor).processQueue(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
