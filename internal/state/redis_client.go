package state

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/config"
)

// redisClient builds the go-redis client of cfg: one server from
// state.redis_url, or from state.redis a server (NewClient), the primary
// Sentinel names (NewFailoverClient) or a Redis Cluster (NewClusterClient),
// all behind redis.UniversalClient, and the reachability that reports on
// it. It connects lazily, so it fails only on a bad URL or an unreadable
// CA file. Every call is bounded by redis_timeout and never retried by the
// client: a failed call is served from local state and the sync loop is
// the retry.
func redisClient(cfg config.State) (redis.UniversalClient, *reachability, error) {
	timeout := cfg.RedisTimeout
	if !cfg.Redis.On() {
		ro, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("state.redis_url: %w", err)
		}
		ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = timeout, timeout, timeout
		ro.MaxRetries = -1
		ro.ContextTimeoutEnabled = true
		return redis.NewClient(ro), newReachability(config.RedisSingle, ro.Password, nil), nil
	}
	rc := cfg.Redis
	uo := &redis.UniversalOptions{
		Addrs: rc.Addrs, MasterName: rc.MasterName, DB: rc.DB,
		Username: rc.Username, Password: rc.Password,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, ContextTimeoutEnabled: true,
	}
	if rc.TLS.Enabled {
		var err error
		if uo.TLSConfig, err = redisTLS(rc.TLS); err != nil {
			return nil, nil, err
		}
	}
	switch rc.Mode {
	case config.RedisSentinel:
		primary := func(ctx context.Context) ([]string, error) {
			return sentinelPrimaries(ctx, rc.Addrs, rc.MasterName, uo)
		}
		return redis.NewFailoverClient(uo.Failover()), newReachability(rc.Mode, rc.Password, primary), nil
	case config.RedisCluster:
		return redis.NewClusterClient(uo.Cluster()), newReachability(rc.Mode, rc.Password, nil), nil
	}
	return redis.NewClient(uo.Simple()), newReachability(config.RedisSingle, rc.Password, nil), nil
}

// redisTLS is the TLS configuration of state.redis.tls: the system's roots
// or those of ca_file, TLS 1.2 at least. The server name is each node's
// host (tls.DialWithDialer's default).
func redisTLS(t config.RedisTLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // the operator's explicit choice, documented as tests only
	if t.CAFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("state.redis.tls.ca_file: %w", err)
	}
	c.RootCAs = x509.NewCertPool()
	if !c.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("state.redis.tls.ca_file: %s holds no PEM certificate", t.CAFile)
	}
	return c, nil
}

// LogRedisClient sends go-redis's own log lines — a Sentinel naming a new
// primary, a cluster reloading its slots after a failover — to l at info
// level, so that they are formatted like every other line. go-redis's
// logger is process-wide: serve calls this once. The lines name addresses
// and the Sentinel master name, never a password.
func LogRedisClient(l *slog.Logger) { redis.SetLogger(redisLog{l}) }

// redisLog is go-redis's Logging on a slog.Logger.
type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.InfoContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}
