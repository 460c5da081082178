package mock

import (
	"encoding/hex"
	"math/rand/v2"
	"net/http"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/tidwall/gjson"
)

// Stored responses, as the Responses API keeps them: every response id a
// mock issues is remembered (the latest storedResponses of them), and a
// request that continues one the mock did not issue — another account's,
// or an invented one — is refused with 404 previous_response_not_found,
// as the real API does. Ids are unique per mock: each carries a random tag
// drawn when the mock starts, so that two mocks (two accounts) never issue
// the same one, whatever their names and seeds.
const storedResponses = 1 << 16

// newIDTag returns a mock's random id tag: 12 hex digits.
func newIDTag() string {
	var b [6]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b[:])
}

// newStored returns an empty store of issued response ids.
func newStored() *lru.Cache[string, struct{}] {
	c, err := lru.New[string, struct{}](storedResponses)
	if err != nil {
		panic("mock: " + err.Error()) // a bug: the size is a positive constant
	}
	return c
}

// checkPrevious refuses a Responses request whose previous_response_id this
// mock did not issue.
func (c *call) checkPrevious() *apiError {
	prev := gjson.GetBytes(c.body, "previous_response_id")
	if prev.Type != gjson.String || prev.Str == "" || c.s.stored.Contains(prev.Str) {
		return nil
	}
	return &apiError{
		status: http.StatusNotFound, typ: "invalid_request_error", code: "previous_response_not_found",
		param: "previous_response_id", message: "Previous response with id '" + prev.Str + "' not found.",
	}
}
