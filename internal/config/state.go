package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Describe says, for `switchyard check-config`, where the routing state
// lives: in memory, or which Redis deployment (mode, addresses, database,
// ACL user, TLS). It never shows the password.
func (s State) Describe() string {
	if s.Driver != "redis" {
		return "state: memory (this instance alone)"
	}
	var target string
	if !s.Redis.On() {
		u, err := url.Parse(s.RedisURL)
		if err != nil {
			return "state: redis (an invalid redis_url)"
		}
		db := strings.TrimPrefix(u.Path, "/")
		if db == "" {
			db = "0"
		}
		target = fmt.Sprintf("redis single server %s, database %s (state.redis_url)", u.Host, db)
		if u.Scheme == "rediss" {
			target += ", TLS"
		}
		if u.User != nil && u.User.Username() != "" {
			target += ", user " + u.User.Username()
		}
		return "state: " + target + ", prefix " + s.RedisPrefix
	}
	r := s.Redis
	addrs := strings.Join(r.Addrs, ", ")
	switch r.Mode {
	case RedisSentinel:
		target = fmt.Sprintf("redis sentinel: the primary %q named by %d sentinel(s) (%s), database %d", r.MasterName, len(r.Addrs), addrs, r.DB)
	case RedisCluster:
		target = fmt.Sprintf("redis cluster: %d seed node(s) (%s)", len(r.Addrs), addrs)
	default:
		target = fmt.Sprintf("redis single server %s, database %d", addrs, r.DB)
	}
	if r.Username != "" {
		target += ", user " + r.Username
	}
	if r.Password != "" {
		target += ", with a password"
	}
	if r.TLS.Enabled {
		target += ", TLS"
		if r.TLS.InsecureSkipVerify {
			target += " (certificates not verified)"
		}
	}
	return "state: " + target + ", prefix " + s.RedisPrefix
}
