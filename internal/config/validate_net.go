package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// checkHostPort returns "" when addr is a listen address (host:port with an
// optional host and a numeric port), else the problem.
func checkHostPort(addr string) string {
	bad := fmt.Sprintf("must be host:port such as \":8080\" or \"127.0.0.1:8080\", got %q", addr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bad
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("port must be a number 0–65535, got %q", port)
	}
	if host != "" && !validHost(host) {
		return fmt.Sprintf("host must be an IP address or a host name, got %q", host)
	}
	return ""
}

// sameListener reports whether two valid listen addresses would bind the
// same port on overlapping interfaces.
func sameListener(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if pa != pb || pa == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wildcard(ha) || wildcard(hb)
}

// validHost reports whether h is an IP address or a DNS host name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// checkBaseURL returns "" when s is an absolute http(s) URL with a host and
// without query, fragment or credentials, else the problem.
func checkBaseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if strings.ContainsFunc(s, unicode.IsSpace) {
			return "must be an absolute http(s) URL with a host; it contains whitespace"
		}
		return fmt.Sprintf("must be an absolute http(s) URL with a host, such as https://api.openai.com/v1, got %q", s)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme must be http or https, got %q", u.Scheme)
	case u.User != nil:
		return "must not contain credentials; use api_key"
	case u.Hostname() == "":
		return fmt.Sprintf("must name a host, got %q", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Sprintf("must not have a query or fragment (the gateway appends paths to it), got %q", s)
	}
	return ""
}

// checkOTLPEndpoint returns "" when s is a collector address tracing can
// export to, else the problem with a corrected example.
func checkOTLPEndpoint(s string) string {
	u, err := url.Parse(s)
	if err != nil || !slices.Contains(tracingSchemes, u.Scheme) || u.Host == "" {
		return fmt.Sprintf("must be http(s)://host:4318 (OTLP/HTTP) or grpc(s)://host:4317 (OTLP/gRPC), got %q", s)
	}
	if u.Hostname() == "" {
		return fmt.Sprintf("has no host, got %q", s)
	}
	if strings.HasPrefix(u.Scheme, "grpc") && strings.Trim(u.Path, "/") != "" {
		return fmt.Sprintf("an OTLP/gRPC endpoint has no path, got %q", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("must not have a query or fragment, got %q", s)
	}
	return ""
}

// checkRedisURL returns "" when s is a redis:// or rediss:// URL with a host
// and an optional numeric database, else the problem. s is never echoed.
func checkRedisURL(s string) string {
	const bad = "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0"
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Hostname() == "" {
		return bad
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return "database (the URL path) must be a number ≥ 0, as in redis://host:6379/0"
		}
	}
	return ""
}

// looksPostgres reports whether dsn is a postgres URL.
func looksPostgres(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// validPostgresDSN accepts a postgres:// or postgresql:// URL or a libpq
// key=value connection string (host=db user=app dbname=switchyard).
func validPostgresDSN(dsn string) bool {
	if looksPostgres(dsn) {
		_, err := url.Parse(dsn)
		return err == nil
	}
	return validKeyValueDSN(dsn)
}

// validKeyValueDSN parses a libpq key=value list: keys are identifiers,
// values are bare words or single-quoted strings with \ escapes.
func validKeyValueDSN(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return false
		}
		key := strings.TrimRight(s[:eq], " \t")
		if !validEnvName(key) {
			return false
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		if strings.HasPrefix(s, "'") {
			end := -1
			for j := 1; j < len(s); j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '\'' {
					end = j
					break
				}
			}
			if end < 0 {
				return false
			}
			s = s[end+1:]
		} else if end := strings.IndexAny(s, " \t\n"); end >= 0 {
			s = s[end:]
		} else {
			s = ""
		}
		s = strings.TrimLeft(s, " \t\n")
	}
	return true
}
