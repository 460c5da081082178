package config

// Redis modes (state.redis.mode).
const (
	RedisSingle   = "single"
	RedisSentinel = "sentinel"
	RedisCluster  = "cluster"
)

// RedisConn is state.redis: how to reach the Redis that holds the shared
// state, through go-redis's universal client.
type RedisConn struct {
	// Mode is single (default: one server), sentinel (the primary that
	// Sentinel names MasterName; Addrs are the sentinels) or cluster (a
	// Redis Cluster; Addrs are seed nodes).
	Mode string `yaml:"mode" json:"mode"`
	// Addrs are host:port addresses: the server (single, exactly one), the
	// sentinels (sentinel) or some cluster nodes (cluster). At least one.
	Addrs []string `yaml:"addrs" json:"addrs"`
	// MasterName is the primary's name in the sentinels' configuration;
	// required for sentinel, not allowed otherwise.
	MasterName string `yaml:"master_name" json:"master_name"`
	// Username is the ACL user; "" authenticates as the default user.
	Username string `yaml:"username" json:"username"`
	// Password is the ACL user's (or requirepass) password, for the data
	// nodes; "" for none. A secret: never logged or shown.
	Password string `yaml:"password" json:"-"`
	// DB is the database number, ≥ 0; must be 0 in cluster mode. Default 0.
	DB int `yaml:"db" json:"db"`
	// TLS encrypts the connections to the data nodes and the sentinels.
	TLS RedisTLS `yaml:"tls" json:"tls"`
}

// On reports whether the block is used (any address given).
func (r RedisConn) On() bool { return len(r.Addrs) > 0 }

// RedisTLS is state.redis.tls.
type RedisTLS struct {
	// Enabled turns TLS on. Default false.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// CAFile is a PEM file of the certificate authorities to trust instead
	// of the system's; "" uses the system's.
	CAFile string `yaml:"ca_file" json:"ca_file"`
	// InsecureSkipVerify accepts any server certificate (tests only).
	// Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify"`
}
