package mock

import (
	"net/http"
	"strings"
)

// authenticate checks the request's key as the provider does and answers
// the provider's error when it is missing or wrong. A Gemini request must
// always carry a key (x-goog-api-key or ?key=): without one Google answers
// 403. When Options.APIKey is set, every family's key must equal it:
// OpenAI's Authorization: Bearer or Azure's api-key, Anthropic's x-api-key
// or Authorization: Bearer, Google's x-goog-api-key or ?key=. Vertex
// requests carry an access token instead (authenticateVertex), Bedrock's a
// SigV4 signature or an API key (authenticateBedrock).
func (c *call) authenticate() bool {
	if c.rt.vertex {
		return c.authenticateVertex()
	}
	if c.rt.proto == protoBedrock {
		return c.authenticateBedrock()
	}
	if settled, passed := c.authenticateEntra(); settled {
		return passed
	}
	key, sent := presentedKey(c.r, c.rt.proto)
	want := c.s.apiKey
	switch {
	case c.rt.proto == protoGemini && !sent:
		c.fail(apiError{status: http.StatusForbidden, message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."})
	case want == "" || key == want:
		return true
	case c.rt.proto == protoGemini:
		c.fail(geminiKeyInvalid())
	case c.rt.proto == protoAnthropic && !sent:
		c.fail(statusError(protoAnthropic, http.StatusUnauthorized, "x-api-key header is required"))
	case c.rt.proto == protoAnthropic:
		c.fail(statusError(protoAnthropic, http.StatusUnauthorized, "invalid x-api-key"))
	case !sent:
		e := statusError(protoOpenAI, http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.")
		e.code = ""
		c.fail(e)
	default:
		c.fail(statusError(protoOpenAI, http.StatusUnauthorized, "Incorrect API key provided: "+redact(key)+". You can find your API key at https://platform.openai.com/account/api-keys."))
	}
	return false
}

// presentedKey returns the key r carries in its family's places, and
// whether it carries one.
func presentedKey(r *http.Request, p protocol) (string, bool) {
	bearer := func() string {
		v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return ""
		}
		return v
	}
	var key string
	switch p {
	case protoGemini:
		key = r.Header.Get("x-goog-api-key")
		if key == "" && r.URL.RawQuery != "" {
			key = r.URL.Query().Get("key")
		}
	case protoAnthropic:
		key = r.Header.Get("x-api-key")
		if key == "" {
			key = bearer()
		}
	default:
		key = bearer()
		if key == "" {
			key = r.Header.Get("api-key")
		}
	}
	return key, key != ""
}

// redact shows a key as OpenAI does in errors: its first and last four
// characters.
func redact(key string) string {
	if len(key) <= 8 {
		return "***"
	}
	return key[:4] + "*****" + key[len(key)-4:]
}
