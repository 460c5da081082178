// Command barehop is the floor of the Switchyard load benchmark
// (bench/run.sh): one httputil.ReverseProxy hop to -upstream with a tuned
// HTTP/1.1 transport and nothing else — no auth, routing, breaker, metrics or
// logs. What it adds over calling the upstream directly is the least any Go
// reverse proxy can add; Switchyard's overhead is judged against it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	upstream := flag.String("upstream", "", "base URL to forward every request to (required)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *upstream); err != nil {
		log.Fatalf("barehop: %v", err)
	}
}

// newTransport is the upstream transport: HTTP/1.1 keep-alive with an idle
// pool larger than any benchmark's concurrency, and no compression.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 60 * time.Second,
	}
}

// newProxy forwards every request to target. FlushInterval stays 0:
// ReverseProxy already flushes every write of a text/event-stream or
// unknown-length response at once, so SSE is relayed event by event while a
// JSON body goes out in one write. Copy buffers come from a pool.
func newProxy(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:  newTransport(),
		BufferPool: newBufferPool(),
	}
}

// bufferPool is an httputil.BufferPool of 32 KiB copy buffers.
type bufferPool struct{ p sync.Pool }

var _ httputil.BufferPool = (*bufferPool)(nil)

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

// Get returns a buffer.
func (b *bufferPool) Get() []byte { return *b.p.Get().(*[]byte) }

// Put returns buf to the pool.
func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

func run(ctx context.Context, listen, upstream string) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Scheme == "" || target.Host == "" {
		return fmt.Errorf("-upstream must be a base URL such as http://127.0.0.1:9001, got %q", upstream)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	fmt.Printf("barehop listening on http://%s -> %s\n", ln.Addr(), target)
	srv := &http.Server{Handler: newProxy(target), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
