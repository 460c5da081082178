package pricing

import "testing"

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gpt-4o", "gpt-4o"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4.1-mini", "gpt-4.1-mini"},
		{"gpt-5.1", "gpt-5.1"},
		{"o3-2025-04-16", "o3"},
		{"gpt-4-0613", "gpt-4"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"claude-3-5-haiku-latest", "claude-3-5-haiku"},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku"},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"},
		{"eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"},
		{"apac.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"},
		{"global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"},
		{"anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"},
		{"us.amazon.nova-pro-v1:0", "nova-pro"},
		{"claude-sonnet-4@20250514", "claude-sonnet-4"},
		{"claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"},
		{"gemini-2.0-flash-001", "gemini-2.0-flash"},
		{"models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"openai/gpt-4o", "gpt-4o"},
		{"my-finetune", "my-finetune"},
		{"", ""},
		{"-20250514", "-20250514"}, // nothing left: kept whole
		{"us.", "us."},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := Normalize(tc.in); got != tc.want {
				t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
