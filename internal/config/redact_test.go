package config

import (
	"strings"
	"testing"
)

// TestSecurityYAMLErrorsRedactSecrets: a syntax error's excerpt of the file
// shows the lines around it, but never the value of a secret field.
func TestSecurityYAMLErrorsRedactSecrets(t *testing.T) {
	tests := []struct {
		name, doc string
		secrets   []string
		keep      string // still shown: the excerpt is not dropped
	}{
		{"api_key next to the error",
			"upstreams:\n  - name: oa\n    api_key: sk-upstream-SECRET-1\n    models: [gpt-4o\n    weight: 0\n",
			[]string{"sk-upstream-SECRET-1"}, "models: [gpt-4o"},
		{"unterminated quote in the api_key itself",
			"upstreams:\n  - name: oa\n    api_key: \"sk-upstream-SECRET-2\n    models: [gpt-4o]\n",
			[]string{"sk-upstream-SECRET-2"}, "name: oa"},
		{"client key, admin token, metrics token, dsn, redis url",
			"admin: {token: adm-SECRET-3}\nmetrics:\n  token: 'met-SECRET-4' # scrape\nstore:\n  dsn: postgres://u:pw-SECRET-5@db/x\n" +
				"state:\n  redis_url: redis://:pw-SECRET-6@r:6379/0\nkeys:\n  - key: sk-client-SECRET-7\n    name: [\n",
			[]string{"adm-SECRET-3", "met-SECRET-4", "pw-SECRET-5", "pw-SECRET-6", "sk-client-SECRET-7"}, "name: ["},
		{"redis password",
			"state:\n  redis:\n    mode: sentinel\n    password: \"pw-SECRET-8\"\n    addrs: [s1:26379\n",
			[]string{"pw-SECRET-8"}, "mode: sentinel"},
		{"an env reference is not a secret",
			"upstreams:\n  - api_key: ${OPENAI_KEY}\n    models: [x\n",
			nil, "${OPENAI_KEY}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErrors(t, tt.doc, nil)
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Msg, "parsing YAML: ") {
				t.Fatalf("errors = %q, want one YAML error", errs)
			}
			msg := errs[0].Msg
			for _, s := range tt.secrets {
				if strings.Contains(msg, s) {
					t.Errorf("the error shows the secret %q:\n%s", s, msg)
				}
			}
			if !strings.Contains(msg, tt.keep) {
				t.Errorf("the error lacks the excerpt line %q:\n%s", tt.keep, msg)
			}
		})
	}
}
