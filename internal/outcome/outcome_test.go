package outcome

import "testing"

func TestClassPredicates(t *testing.T) {
	for _, tc := range []struct {
		c                          Class
		name                       string
		failover, failure, neutral bool
	}{
		{Success, "success", false, false, false},
		{ClientError, "client_error", false, false, true},
		{AuthError, "auth_error", true, true, false},
		{RateLimited, "rate_limited", true, false, true},
		{ServerError, "server_error", true, true, false},
		{Canceled, "canceled", false, false, true},
		{Class(99), "unknown", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.String(); got != tc.name {
				t.Errorf("String() = %q", got)
			}
			if got := tc.c.Failover(); got != tc.failover {
				t.Errorf("Failover() = %v", got)
			}
			if got := tc.c.Failure(); got != tc.failure {
				t.Errorf("Failure() = %v", got)
			}
			if got := tc.c.Neutral(); got != tc.neutral {
				t.Errorf("Neutral() = %v", got)
			}
		})
	}
}
