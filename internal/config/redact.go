package config

import (
	"regexp"
	"sort"
	"strings"
)

// secretField matches a YAML key whose value is a secret, in block
// (`api_key: sk-…`) or flow (`{token: …}`) style, and captures the rest of
// the line after the colon: upstream api_key, a client key's key, the admin
// and metrics tokens, the store DSN and Redis URL (which may hold a
// password), and state.redis.password.
var secretField = regexp.MustCompile(`(?i)(?:^|[\s{,-])"?(api_key|key|token|dsn|redis_url|password)"?\s*:[ \t]*(.*)$`)

// redactSource replaces in msg, a YAML parser's error with its excerpt of
// the source, every value that data gives to a secret field (see
// secretField) with "<redacted>", so that `switchyard check-config` on a
// file with a syntax error near an api_key does not print the key. A value
// that is only a ${NAME} reference is left as it is: it is not the secret.
func redactSource(msg string, data []byte) string {
	var values []string
	for _, line := range strings.Split(string(data), "\n") {
		m := secretField.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rest := strings.TrimSpace(m[2])
		if v := strings.Trim(rest, `"'`); strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && strings.Count(v, "${") == 1 {
			continue
		}
		uncommented, _, _ := strings.Cut(rest, " #")
		flow, _, _ := strings.Cut(rest, ",")
		flow, _, _ = strings.Cut(flow, "}")
		for _, v := range []string{rest, strings.TrimSpace(uncommented), strings.TrimSpace(flow)} {
			v = strings.Trim(v, `"'`)
			if len(v) >= 4 {
				values = append(values, v)
			}
		}
	}
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) }) // longest first
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "<redacted>")
	}
	return msg
}
