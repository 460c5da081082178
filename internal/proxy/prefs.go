package proxy

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"switchyard/internal/balancer"
	"switchyard/internal/codec"
)

// headerProvider carries a request's routing preferences as JSON, in any
// protocol (docs/reference.md#routing-preferences).
const headerProvider = "X-Switchyard-Provider"

// prefsField is the top-level body field that carries them in an OpenAI
// chat or Responses request.
const prefsField = "provider"

// bodyPrefs reports whether c's requests may carry preferences in the body.
func bodyPrefs(c codec.Codec) bool {
	switch c.Name() {
	case "openai-chat", "openai-responses":
		return true
	}
	return false
}

// preferences reads the request's routing preferences from the body field
// peek found (q.prefsRaw) or the X-Switchyard-Provider header, checks that
// the key may send them, and removes the body field so that it never goes
// upstream. It leaves q.prefs nil when there are none, at the cost of one
// header lookup.
func (q *request) preferences() error {
	hdr := q.r.Header[headerProvider]
	if q.prefsRaw == "" && len(hdr) == 0 {
		return nil
	}
	if !q.key.cfg.Preferences {
		return newError(ErrPreferencesNotAllowed, "key "+q.key.cfg.Name+" may not send routing preferences ("+
			prefsField+" or "+headerProvider+")")
	}
	var err error
	switch {
	case q.prefsRaw != "" && len(hdr) > 0:
		return newError(ErrInvalidRequest, "routing preferences given twice: in the body's "+prefsField+" field and in "+headerProvider)
	case q.prefsRaw != "":
		q.prefs, err = parsePreferences(gjson.Parse(q.prefsRaw))
		if err == nil {
			q.body, err = sjson.DeleteBytes(q.body, prefsField)
		}
	default:
		raw := strings.Join(hdr, ",")
		if !gjson.Valid(raw) {
			return newError(ErrInvalidRequest, headerProvider+": provider is not valid JSON")
		}
		q.prefs, err = parsePreferences(gjson.Parse(raw))
		if err != nil {
			err = newError(ErrInvalidRequest, headerProvider+": "+err.Error())
		}
	}
	return err
}

// prefsError is a malformed preference, naming the field.
type prefsError struct{ field, problem string }

func (e *prefsError) Error() string { return "provider." + e.field + " " + e.problem }

// parsePreferences reads the preferences object v: order, only, ignore
// (lists of upstream or provider names), allow_fallbacks (bool), sort
// (price | latency | throughput) and max_price {prompt, completion} (USD per
// million tokens, ≥ 0). A null field is as if absent. The error names the
// field ("provider.sort must be one of …").
func parsePreferences(v gjson.Result) (*balancer.Preferences, error) {
	if !v.IsObject() {
		return nil, newError(ErrInvalidRequest, "provider must be a JSON object")
	}
	p := &balancer.Preferences{}
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		if f.Type == gjson.Null {
			return true
		}
		switch k.Str {
		case "order":
			p.Order, err = names(k.Str, f)
		case "only":
			p.Only, err = names(k.Str, f)
		case "ignore":
			p.Ignore, err = names(k.Str, f)
		case "allow_fallbacks":
			if f.Type != gjson.True && f.Type != gjson.False {
				err = &prefsError{k.Str, "must be a boolean"}
			}
			p.NoFallbacks = f.Type == gjson.False
		case "sort":
			if f.Type != gjson.String || !slices.Contains(balancer.SortNames, f.Str) {
				err = &prefsError{k.Str, "must be one of " + strings.Join(balancer.SortNames, ", ") + ", not " + f.Raw}
			}
			p.Sort = f.Str
		case "max_price":
			err = maxPrice(p, f)
		default:
			err = &prefsError{k.Str, "is not a known preference (known: order, only, ignore, allow_fallbacks, sort, max_price)"}
		}
		return err == nil
	})
	if err != nil {
		return nil, newError(ErrInvalidRequest, err.Error())
	}
	return p, nil
}

// names reads a list of upstream or provider names.
func names(field string, f gjson.Result) ([]string, error) {
	if !f.IsArray() {
		return nil, &prefsError{field, "must be a list of upstream or provider names"}
	}
	var out []string
	var err error
	i := 0
	f.ForEach(func(_, n gjson.Result) bool {
		if n.Type != gjson.String || n.Str == "" {
			err = &prefsError{field + "[" + strconv.Itoa(i) + "]", "must be a non-empty string (an upstream or provider name)"}
			return false
		}
		out = append(out, n.Str)
		i++
		return true
	})
	return out, err
}

// maxPrice reads max_price {prompt, completion} into p; a bound not given
// is +Inf.
func maxPrice(p *balancer.Preferences, f gjson.Result) error {
	if !f.IsObject() {
		return &prefsError{"max_price", "must be an object {prompt, completion} in USD per million tokens"}
	}
	p.MaxPrice, p.MaxPrompt, p.MaxCompletion = true, math.Inf(1), math.Inf(1)
	var err error
	f.ForEach(func(k, n gjson.Result) bool {
		var dst *float64
		switch k.Str {
		case "prompt":
			dst = &p.MaxPrompt
		case "completion":
			dst = &p.MaxCompletion
		default:
			err = &prefsError{"max_price." + k.Str, "is not known (known: prompt, completion)"}
			return false
		}
		if n.Type == gjson.Null {
			return true
		}
		if n.Type != gjson.Number || !(n.Num >= 0) || math.IsInf(n.Num, 0) {
			err = &prefsError{"max_price." + k.Str, "must be a number ≥ 0 (USD per million tokens), not " + n.Raw}
			return false
		}
		*dst = n.Num
		return true
	})
	return err
}

// outputEWMA is a route's moving average (α = 0.3) of the output tokens of
// its successful answers, the expected output of a request without
// max_tokens for lowest-cost (docs/routing.md#lowest-cost). It is kept per
// gateway instance, also in Redis mode. The zero value means no data.
type outputEWMA struct{ bits atomic.Uint64 }

// observe folds out tokens into the average; the first sample is taken as is.
func (e *outputEWMA) observe(out int64) {
	if e == nil || out <= 0 {
		return
	}
	for {
		old := e.bits.Load()
		avg := math.Float64frombits(old)
		next := float64(out)
		if avg > 0 {
			next = 0.3*next + 0.7*avg
		}
		if e.bits.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// value returns the average, 0 with no data.
func (e *outputEWMA) value() float64 {
	if e == nil {
		return 0
	}
	return math.Float64frombits(e.bits.Load())
}

// price returns the USD per million input and output tokens of client model
// m on u, and whether u has a price for it (docs/config.md#upstreams).
func (u *upstream) price(m string) (in, out float64, ok bool) {
	p, src := u.prices.Lookup(m)
	return p.InputPerMTok, p.OutputPerMTok, src.Priced()
}
