package config

import (
	"fmt"
	"net"
	"reflect"
	"strconv"
)

// redisModes are the values of state.redis.mode ("" is single).
var redisModes = []string{RedisSingle, RedisSentinel, RedisCluster}

// validateRedis checks how state.driver: redis reaches Redis: exactly one
// of state.redis_url and state.redis, and a state.redis whose fields fit
// its mode. Secrets are never echoed.
func (s *State) validateRedis(v *validator) {
	r := &s.Redis
	block := !reflect.ValueOf(*r).IsZero()
	switch {
	case s.RedisURL != "" && block:
		v.add("state.redis", "set either state.redis_url (one server) or state.redis, not both; for one server move the URL's host:port into state.redis.addrs")
		return
	case !block:
		if s.RedisURL == "" {
			v.add("state.redis_url", "required: a redis:// URL, or state.redis with addrs (and mode: sentinel or cluster)")
		} else if msg := checkRedisURL(s.RedisURL); msg != "" {
			v.add("state.redis_url", "%s", msg)
		}
		return
	}
	mode := r.Mode
	if mode == "" {
		mode = RedisSingle
	} else {
		v.oneOf("state.redis.mode", r.Mode, redisModes)
	}
	switch {
	case len(r.Addrs) == 0:
		v.add("state.redis.addrs", "required: %s", redisAddrsHint(mode))
	case mode == RedisSingle && len(r.Addrs) > 1:
		v.add("state.redis.addrs", "mode single takes one address, got %d; for several nodes set mode: cluster, or mode: sentinel with master_name", len(r.Addrs))
	}
	for i, a := range r.Addrs {
		if msg := checkRedisAddr(a); msg != "" {
			v.add(fmt.Sprintf("state.redis.addrs[%d]", i), "%s", msg)
		}
	}
	switch {
	case mode == RedisSentinel && r.MasterName == "":
		v.add("state.redis.master_name", "required in mode sentinel: the name the sentinels monitor (sentinel monitor <name> host port quorum)")
	case mode != RedisSentinel && r.MasterName != "":
		v.add("state.redis.master_name", "is only for mode: sentinel, got mode %s; did you mean mode: sentinel?", mode)
	}
	switch {
	case r.DB < 0:
		v.add("state.redis.db", "must be ≥ 0, got %d", r.DB)
	case mode == RedisCluster && r.DB != 0:
		v.add("state.redis.db", "must be 0 in mode cluster (Redis Cluster has database 0 only), got %d; remove it, or use a separate state.redis_prefix to share a cluster", r.DB)
	}
	v.secret("state.redis.username", r.Username)
	v.secret("state.redis.password", r.Password)
	if !r.TLS.Enabled && (r.TLS.CAFile != "" || r.TLS.InsecureSkipVerify) {
		v.add("state.redis.tls.enabled", "is false, but ca_file or insecure_skip_verify is set; set enabled: true to use TLS")
	}
}

// redisAddrsHint says what state.redis.addrs holds in mode.
func redisAddrsHint(mode string) string {
	switch mode {
	case RedisSentinel:
		return "the sentinels' host:port addresses, e.g. [10.0.0.1:26379, 10.0.0.2:26379, 10.0.0.3:26379]"
	case RedisCluster:
		return "host:port addresses of some cluster nodes, e.g. [10.0.0.1:6379, 10.0.0.2:6379]"
	}
	return "the server's host:port, e.g. [127.0.0.1:6379]"
}

// checkRedisAddr returns "" when s is host:port with a host and a port
// 1–65535, else the problem.
func checkRedisAddr(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Sprintf("must be host:port such as 127.0.0.1:6379, got %q", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("port must be a number 1–65535, got %q", port)
	}
	if !validHost(host) {
		return fmt.Sprintf("host must be an IP address or a host name, got %q", host)
	}
	return ""
}
