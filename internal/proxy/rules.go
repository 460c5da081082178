package proxy

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// rule is one of a route's rules (docs/routing.md#rules), compiled when the
// catalog is built: header names canonical, globs compiled, its strategy's
// balancer made.
type rule struct {
	ref string // "routes[claude-sonnet-4].rules[1]"

	headers        []headerCond
	minTok, maxTok int64 // 0: no bound
	keys           []config.Pattern
	tags           []string
	stream         tristate
	tools          tristate
	images         tristate
	userID         *config.Pattern
	needs          facts // the body facts its conditions read

	filter   balancer.RuleFilter // upstreams and exclude; Ref is ref
	bal      *balancer.Balancer  // the strategy action, nil for none
	model    string              // the model action, "" for none
	priority map[string]int      // tier by upstream or provider name
}

// headerCond is one header condition: a canonical name and a glob on its value.
type headerCond struct {
	name string
	pat  config.Pattern
}

// tristate is a boolean condition: not given, true or false.
type tristate uint8

const (
	unset tristate = iota
	isTrue
	isFalse
)

func tristateOf(b *bool) tristate {
	switch {
	case b == nil:
		return unset
	case *b:
		return isTrue
	}
	return isFalse
}

// holds reports whether a condition t holds for v.
func (t tristate) holds(v bool) bool { return t == unset || (t == isTrue) == v }

// facts are what rules read from a request's body, found once and only when
// a rule asks: a bit per fact known, a bit per fact true.
type facts uint8

const (
	factTools facts = 1 << iota
	factImages
	factUserID
)

// compileRules compiles route r's rules; base is the route balancer's
// options, whose Rand seeds (with seed) the balancers of the rules'
// strategies (docs/routing.md#rules).
func compileRules(r config.Route, seed uint64, base balancer.Options) ([]*rule, error) {
	if len(r.Rules) == 0 {
		return nil, nil
	}
	out := make([]*rule, len(r.Rules))
	for i, cr := range r.Rules {
		ru := &rule{ref: config.RuleRef(r.Model, i), minTok: cr.When.MinInputTokens, maxTok: cr.When.MaxInputTokens,
			tags: cr.When.Tags, stream: tristateOf(cr.When.Stream), tools: tristateOf(cr.When.Tools),
			images: tristateOf(cr.When.Images), model: cr.Model, priority: cr.Priority}
		ru.filter = balancer.RuleFilter{Ref: ru.ref, Upstreams: cr.Upstreams, Exclude: cr.Exclude}
		for name, pat := range cr.When.Header {
			ru.headers = append(ru.headers, headerCond{name: http.CanonicalHeaderKey(name), pat: config.CompilePattern(pat)})
		}
		slices.SortFunc(ru.headers, func(a, b headerCond) int { return strings.Compare(a.name, b.name) })
		for _, k := range cr.When.Key {
			ru.keys = append(ru.keys, config.CompilePattern(k))
		}
		if cr.When.Metadata.UserID != "" {
			p := config.CompilePattern(cr.When.Metadata.UserID)
			ru.userID = &p
			ru.needs |= factUserID
		}
		if ru.tools != unset {
			ru.needs |= factTools
		}
		if ru.images != unset {
			ru.needs |= factImages
		}
		if cr.Strategy != "" {
			opts := base
			opts.Strategy = cr.Strategy
			opts.Rand = rand.New(rand.NewPCG(seed, uint64(i)))
			b, err := balancer.New(opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ru.ref, err)
			}
			ru.bal = b
		}
		out[i] = ru
	}
	return out, nil
}

// matchRule returns the first of rules whose conditions all hold for q,
// nil for none; with noReroute it passes over rules that re-route (a
// fallback model's route does not re-route).
func (q *request) matchRule(rules []*rule, noReroute bool) *rule {
	for _, ru := range rules {
		if (!noReroute || ru.model == "") && q.holds(ru) {
			return ru
		}
	}
	return nil
}

// holds reports whether every condition of ru holds for q, cheapest first.
func (q *request) holds(ru *rule) bool {
	tok := q.tokens
	if tok == 0 {
		tok = int64(len(q.body)) / 4 // the estimate the balancer gets (InputTokens)
	}
	switch {
	case !ru.stream.holds(q.stream),
		ru.minTok > 0 && tok < ru.minTok,
		ru.maxTok > 0 && tok > ru.maxTok,
		len(ru.keys) > 0 && !slices.ContainsFunc(ru.keys, func(p config.Pattern) bool { return p.Match(q.key.cfg.Name) }),
		len(ru.tags) > 0 && !slices.ContainsFunc(ru.tags, func(t string) bool { return slices.Contains(q.key.cfg.Tags, t) }):
		return false
	}
	for _, h := range ru.headers {
		if !slices.ContainsFunc(q.r.Header[h.name], h.pat.Match) {
			return false
		}
	}
	if ru.needs == 0 {
		return true
	}
	q.learn(ru.needs)
	if !ru.tools.holds(q.facts&(factTools<<4) != 0) || !ru.images.holds(q.facts&(factImages<<4) != 0) {
		return false
	}
	return ru.userID == nil || q.userID != "" && ru.userID.Match(q.userID)
}

// learn finds the body facts of need not known yet: whether the request
// declares tools, whether it carries an image, its user id. Known facts are
// the low bits of q.facts, true ones the same bits shifted up by 4.
func (q *request) learn(need facts) {
	need &^= q.facts & 0x0f
	if need == 0 {
		return
	}
	// GetBytes reads the body in place; ParseBytes would copy it.
	if need&factTools != 0 && (nonEmptyArray(gjson.GetBytes(q.body, "tools")) || nonEmptyArray(gjson.GetBytes(q.body, "functions"))) {
		q.facts |= factTools << 4
	}
	if need&factImages != 0 && hasImage(q.body) {
		q.facts |= factImages << 4
	}
	if need&factUserID != 0 {
		if u := gjson.GetBytes(q.body, "metadata.user_id"); u.Type == gjson.String {
			q.userID = u.Str
		} else if u := gjson.GetBytes(q.body, "user"); u.Type == gjson.String {
			q.userID = u.Str
		}
	}
	q.facts |= need
}

func nonEmptyArray(v gjson.Result) bool { return v.IsArray() && v.Get("0").Exists() }

// imagePartTypes are the content part types that carry an image: OpenAI
// chat's image_url, Responses' input_image, Anthropic's image.
var imagePartTypes = []string{"image_url", "input_image", "image"}

// hasImage reports whether a request body in any client protocol carries
// an image: a message content part of an image type (OpenAI chat and
// Responses, Anthropic) or a Gemini part with image data.
func hasImage(body []byte) bool {
	found := false
	for _, list := range []string{"messages", "input"} {
		gjson.GetBytes(body, list).ForEach(func(_, m gjson.Result) bool {
			m.Get("content").ForEach(func(_, p gjson.Result) bool {
				found = found || slices.Contains(imagePartTypes, p.Get("type").Str)
				return !found
			})
			return !found
		})
	}
	if found {
		return true
	}
	gjson.GetBytes(body, "contents").ForEach(func(_, c gjson.Result) bool {
		c.Get("parts").ForEach(func(_, p gjson.Result) bool {
			for _, k := range []string{"inlineData", "inline_data", "fileData", "file_data"} {
				if d := p.Get(k); d.Exists() {
					mime := d.Get("mimeType").Str + d.Get("mime_type").Str
					found = found || mime == "" || strings.HasPrefix(mime, "image/")
				}
			}
			return !found
		})
		return !found
	})
	return found
}

// tier returns the tier ru sets for c, and whether it sets one.
func (ru *rule) tier(c *balancer.Candidate) (int, bool) {
	if t, ok := ru.priority[c.Name]; ok {
		return t, true
	}
	t, ok := ru.priority[c.Provider]
	return t, ok && c.Provider != ""
}

// applyRules matches the rules of rt, the route of the request's model, and
// returns the route the request goes on: rt, or the route of the model the
// rule that applied re-routes to, with the body rewritten for that model
// and that route's own rule matched.
func (x *exchange) applyRules(rt *route) (*route, error) {
	x.ruled, x.rule = rt, x.matchRule(rt.rules, false)
	if x.rule == nil || x.rule.model == "" {
		return rt, nil
	}
	body, err := x.codec.Encode(x.body, x.rule.model, x.codec.Family())
	if err != nil {
		return nil, newError(ErrInvalidRequest, "re-routing to "+x.rule.model+" ("+x.rule.ref+"): "+err.Error())
	}
	x.body, x.model, x.rerouted = body, x.rule.model, x.rule
	rt = x.cat.route(x.model)
	x.ruled, x.rule = rt, x.matchRule(rt.rules, true)
	return rt, nil
}

// ruleFor returns the rule that applies to the request on route rt: the
// one matched for its model, or for a fallback model's route the first
// that holds there and does not re-route; nil for none.
func (x *exchange) ruleFor(rt *route) *rule {
	switch {
	case rt == x.ruled:
		return x.rule
	case len(rt.rules) == 0:
		return nil
	}
	return x.matchRule(rt.rules, true)
}

// apply sets ru's actions on a plan request: its filter, its tiers on
// cands; it returns the balancer that plans, ru's own for a strategy
// action, else bal.
func (ru *rule) apply(req *balancer.Request, cands []balancer.Candidate, bal *balancer.Balancer) *balancer.Balancer {
	req.Rule = &ru.filter
	if len(ru.priority) > 0 {
		for i := range cands {
			if t, ok := ru.tier(&cands[i]); ok {
				cands[i].Priority = t
			}
		}
	}
	if ru.bal != nil {
		return ru.bal
	}
	return bal
}
