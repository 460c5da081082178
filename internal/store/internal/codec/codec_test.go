package codec

import "testing"

// TestDecodeKeyDefaults: a key stored before a setting existed loads with
// that setting's default, not its zero value.
func TestDecodeKeyDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, spec  string
		preferences bool
		period      string
	}{
		{"stored before preferences", `{"rpm":10}`, true, "month"},
		{"preferences off", `{"preferences":false}`, false, "month"},
		{"own period", `{"spend_limit":{"usd":5,"period":"day"}}`, true, "day"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := DecodeKey("k", "hash", []byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			if k.Preferences != tc.preferences || k.SpendLimit.Period != tc.period || k.Name != "k" || k.KeySHA256 != "hash" {
				t.Errorf("DecodeKey(%s) = %+v", tc.spec, k)
			}
		})
	}
}
