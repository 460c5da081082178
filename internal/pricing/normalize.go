package pricing

import "strings"

// Normalize returns the catalogue name of a provider's model id, by
// slicing (it does not allocate), in this order:
//
//  1. everything up to the last '/' goes ("models/gemini-2.5-pro",
//     "openai/gpt-4o");
//  2. leading dot-separated segments of letters and hyphens go: Bedrock's
//     inference-profile region ("us.", "eu.", "apac.", "global.") and
//     vendor ("anthropic.", "amazon."); a segment with a digit stays, so
//     "gpt-4.1" is kept whole;
//  3. a Vertex version "@20250514" (everything from the last '@') goes;
//  4. then, as long as one applies: a Bedrock ":0", a version "-v1"/"-v2",
//     "-latest", a date "-2024-08-06" or "-20250514", a 3- or 4-digit
//     revision "-001"/"-0613".
//
// So "us.anthropic.claude-sonnet-4-20250514-v1:0",
// "claude-sonnet-4@20250514" and "claude-sonnet-4-20250514" are all
// "claude-sonnet-4", and "gpt-4o-2024-08-06" is "gpt-4o".
func Normalize(model string) string {
	s := model
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	for {
		i := strings.IndexByte(s, '.')
		if i <= 0 || i == len(s)-1 || !lettersAndHyphens(s[:i]) {
			break
		}
		s = s[i+1:]
	}
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		s = s[:i]
	}
	for {
		t := trimSuffixOnce(s)
		if t == s || t == "" {
			return s
		}
		s = t
	}
}

// trimSuffixOnce removes one version-like suffix of step 4 of Normalize,
// or returns s unchanged.
func trimSuffixOnce(s string) string {
	// ":0" (Bedrock's model version).
	if i := strings.LastIndexByte(s, ':'); i > 0 && digits(s[i+1:]) {
		return s[:i]
	}
	if t, ok := strings.CutSuffix(s, "-latest"); ok {
		return t
	}
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return s
	}
	last := s[i+1:]
	switch {
	case len(last) >= 2 && last[0] == 'v' && digits(last[1:]): // -v1, -v2
		return s[:i]
	case (len(last) == 8 || len(last) == 4 || len(last) == 3) && digits(last): // -20250514, -0613, -001
		return s[:i]
	case len(last) == 2 && digits(last) && len(s) >= 11 && isDashDate(s[len(s)-11:]): // -2024-08-06
		return s[:len(s)-11]
	}
	return s
}

// isDashDate reports whether s is "-YYYY-MM-DD".
func isDashDate(s string) bool {
	return len(s) == 11 && s[0] == '-' && digits(s[1:5]) && s[5] == '-' && digits(s[6:8]) && s[8] == '-' && digits(s[9:])
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func lettersAndHyphens(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}
