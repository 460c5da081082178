package proxy

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/pricing"
	"switchyard/internal/provider"
)

// Catalog is an immutable routing table: the upstreams, client keys and
// routes in force, indexed for the hot path. A new Catalog is built for every
// configuration change and swapped in atomically; in-flight requests finish
// on the one they started with.
type Catalog struct {
	upstreams []*upstream                      // by name
	byName    map[string]*upstream             // name → upstream
	keys      map[[sha256.Size]byte]*clientKey // SHA-256 of the secret → key
	routes    []*route
	fallback  *route // the defaults, for models without a route entry
	maxBody   int64  // the largest max_body_bytes of any route
	convMax   int    // affinity.conversation_max_bytes
	gen       uint64 // how many catalogs came before this one: seeds new balancers
}

// upstream is one upstream with what the hot path derives from its config.
type upstream struct {
	cfg config.Upstream
	// ep addresses the upstream the way its provider adapter does.
	ep provider.Endpoint
	// migrate applies the upstream's affinity_migration to sessions bound to it.
	migrate balancer.MigrateFunc
	// nameValue is the X-Switchyard-Upstream header value, shared by every
	// response it serves (see attemptsValues).
	nameValue []string
	// system is its provider's gen_ai.system, for trace attributes.
	system string
	// prices prices its client models (docs/pricing.md): spend, the
	// request log and cost-aware routing ask prices.Lookup(model).
	prices *pricing.Prices
}

// clientKey is one client key as the hot path needs it.
type clientKey struct {
	cfg config.Key
	// tenant is whom its requests wait as in upstream queues.
	tenant limits.Tenant
	// team is its team (keys[].team), nil for none.
	team *config.Team
	// upstreams, when non-nil, is the restricted set of upstream names.
	upstreams map[string]bool
}

// route is a route entry with its balancer, retry budget and affinity settings.
type route struct {
	cfg        config.Route
	bal        *balancer.Balancer
	budget     *limits.RetryBudget // routes[].retry_budget
	hedges     *limits.RetryBudget // routes[].hedge.budget
	hedge      hedgePolicy
	affinity   affinity.Policy
	affinityOn bool
	out        *outputEWMA // output tokens of the route's answers, kept across reloads
	// prefix holds the route's prefix affinity, on where prefixOn and
	// affinityOn are (docs/routing.md#prefix-cache-affinity).
	prefix   affinity.Prefix
	prefixOn bool
	rules    []*rule // routes[].rules, compiled; nil for none
}

// CatalogInput is what a Catalog is built from.
type CatalogInput struct {
	// Upstreams in any order; inactive ones are kept (the balancer records why they are skipped).
	Upstreams []config.Upstream
	// Keys with KeySHA256 set; a plaintext Key is hashed.
	Keys []config.Key
	// Routes in match order.
	Routes []config.Route
	// Defaults are the settings of models without a route.
	Defaults config.RouteSettings
	// Affinity is the global session-affinity block; routes override it.
	Affinity config.Affinity
	// Seed seeds the balancers' random sources (one stream per route and catalog).
	Seed uint64
	// Previous is the catalog this one replaces, nil for the first. A route
	// whose pattern and strategy are unchanged keeps its balancer, so a
	// reload does not reset smooth-WRR or round-robin positions, nor replay
	// a random strategy's sequence.
	Previous *Catalog
	// Providers resolves upstreams' provider names. Default: provider.Builtin().
	Providers *provider.Registry
	// Now is the balancers' clock, for Decision.ElapsedNs.
	Now func() time.Time
	// Clock times the routes' retry budgets. Default: the wall clock.
	Clock clock.Clock
	// Transport carries the adapters' own exchanges (Vertex's token
	// requests): the gateway's upstream transport. Default:
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Teams are the teams keys[].team names.
	Teams []config.Team
	// Catalogue is the price catalogue upstreams' prices fall back to
	// (pricing.LoadCatalogue of pricing.catalogue); nil is none.
	Catalogue *pricing.Catalogue
}

// NewCatalog indexes in. It fails on a provider the registry does not
// know, a key whose hash is not SHA-256 hex, and a strategy the balancer
// does not know.
func NewCatalog(in CatalogInput) (*Catalog, error) {
	c := &Catalog{byName: map[string]*upstream{}, keys: map[[sha256.Size]byte]*clientKey{}, maxBody: in.Defaults.MaxBodyBytes,
		convMax: cmp.Or(in.Affinity.ConversationMaxBytes, affinity.DefaultConversationMaxBytes)}
	if in.Previous != nil {
		c.gen = in.Previous.gen + 1
	}
	if in.Clock == nil {
		in.Clock = clock.Real{}
	}
	reg := in.Providers
	if reg == nil {
		reg = provider.Builtin()
	}
	for _, u := range in.Upstreams {
		p, ok := reg.Lookup(u.Provider)
		if !ok {
			return nil, fmt.Errorf("upstream %s: unknown provider %q", u.Name, u.Provider)
		}
		up := &upstream{cfg: u, ep: in.Previous.endpoint(u), nameValue: []string{u.Name}, system: p.System(),
			prices: pricing.For(&u, in.Catalogue)}
		if up.ep == nil {
			a := u.Adapter()
			a.Clock = in.Clock.Now // signs requests (Bedrock) in the gateway's time
			a.Transport = in.Transport
			up.ep = p.New(a)
		}
		mig := u.AffinityMigration
		up.migrate = func(bodyLen int64, bound, best int) bool { return affinity.ShouldMigrate(mig, bodyLen, bound, best) }
		c.upstreams = append(c.upstreams, up)
		c.byName[u.Name] = up
	}
	sort.Slice(c.upstreams, func(i, j int) bool { return c.upstreams[i].cfg.Name < c.upstreams[j].cfg.Name })
	for _, k := range in.Keys {
		hash := k.KeySHA256
		if hash == "" {
			hash = config.HashKey(k.Key)
		}
		ck := &clientKey{cfg: k}
		if i := slices.IndexFunc(in.Teams, func(t config.Team) bool { return t.Name == k.Team }); k.Team != "" && i >= 0 {
			ck.team = &in.Teams[i]
		}
		ck.tenant = tenantOf(k, ck.team)
		if len(k.AllowedUpstreams) > 0 {
			ck.upstreams = map[string]bool{}
			for _, n := range k.AllowedUpstreams {
				ck.upstreams[n] = true
			}
		}
		var sum [sha256.Size]byte
		if n, err := hex.Decode(sum[:], []byte(hash)); err != nil || n != len(sum) {
			return nil, fmt.Errorf("key %s: key_sha256 is not a hex SHA-256", k.Name)
		}
		c.keys[sum] = ck
	}
	newRoute := func(i int, r config.Route) (*route, error) {
		if r.MaxBodyBytes > c.maxBody {
			c.maxBody = r.MaxBodyBytes
		}
		b := in.Previous.balancer(r)
		if b == nil {
			var err error
			b, err = balancer.New(balancer.Options{
				Strategy: r.Strategy,
				Rand:     rand.New(rand.NewPCG(in.Seed, c.gen<<32|uint64(i))),
				Now:      in.Now,
			})
			if err != nil {
				return nil, fmt.Errorf("building balancer for route %q: %w", r.Model, err)
			}
		}
		rules, err := compileRules(r, in.Seed^c.gen<<32|uint64(i), balancer.Options{Now: in.Now})
		if err != nil {
			return nil, fmt.Errorf("building rules for route %q: %w", r.Model, err)
		}
		rt := &route{cfg: r, bal: b, hedge: newHedgePolicy(r.Hedge), rules: rules}
		rt.budget, rt.hedges = in.Previous.budgets(r)
		if rt.budget == nil {
			rt.budget = limits.NewRetryBudget(in.Clock, r.RetryBudget)
			rt.hedges = limits.NewHedgeBudget(in.Clock, r.Hedge.Budget)
		}
		rt.affinity, rt.affinityOn = affinity.PolicyFor(in.Affinity, r.Affinity)
		rt.out = new(outputEWMA)
		if old := in.Previous.sameRoute(r); old != nil {
			rt.out = old.out
		}
		rt.prefix, rt.prefixOn = affinity.PrefixPolicy(in.Affinity, r.Affinity, rt.affinity)
		return rt, nil
	}
	for i, r := range in.Routes {
		rt, err := newRoute(i+1, r)
		if err != nil {
			return nil, err
		}
		c.routes = append(c.routes, rt)
	}
	fb, err := newRoute(0, config.Route{Model: "*", RouteSettings: in.Defaults})
	if err != nil {
		return nil, err
	}
	c.fallback = fb
	return c, nil
}

// authenticate finds the client key of a request (Bearer or x-api-key).
//
// Timing: the secret is never compared byte by byte. It is hashed with
// SHA-256 and the digest looked up in a map keyed by the stored digests. The
// map's hashing and its final equality check run on the digest, not on the
// secret, so how long a lookup takes can depend only on the digest of what
// the caller sent — which the caller already knows — and on the stored
// digests. Learning that a guess's digest shares a prefix with a stored
// digest does not help to find the secret (that would be a preimage attack
// on SHA-256), so no constant-time compare is needed here, and a map keeps
// the lookup O(1) however many keys there are.
func (c *Catalog) authenticate(r *http.Request) (*clientKey, error) {
	secret := r.Header.Get("X-Api-Key")
	if secret == "" {
		if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			secret = strings.TrimSpace(auth[7:])
		}
	}
	if secret == "" {
		secret = r.Header.Get("X-Goog-Api-Key")
	}
	if secret == "" && r.URL.RawQuery != "" {
		secret = r.URL.Query().Get("key")
	}
	if secret == "" {
		return nil, newError(ErrUnauthorized, "missing API key: send Authorization: Bearer <key>, x-api-key, x-goog-api-key or ?key=")
	}
	k := c.keys[sha256.Sum256([]byte(secret))]
	if k == nil {
		return nil, newError(ErrUnauthorized, "invalid API key")
	}
	return k, nil
}

// route returns the route for model: exact match, first glob, else defaults.
func (c *Catalog) route(model string) *route {
	for _, r := range c.routes {
		if r.cfg.Model == model {
			return r
		}
	}
	for _, r := range c.routes {
		if config.Glob(r.cfg.Model, model) {
			return r
		}
	}
	return c.fallback
}

// allows reports whether key k may use model.
func (k *clientKey) allows(model string) bool {
	return len(k.cfg.AllowedModels) == 0 || config.MatchAny(k.cfg.AllowedModels, model)
}

// reaches reports whether key k may use upstream name; a nil key (an
// operator's dry run) reaches every upstream.
func (k *clientKey) reaches(name string) bool {
	return k == nil || k.upstreams == nil || k.upstreams[name]
}

// candidates returns the upstreams of family f (of any family with
// anyFamily: the request may be translated) that serve model and that key
// k (nil: any key) may reach, inactive ones included.
func (c *Catalog) candidates(model string, k *clientKey, f codec.Family, anyFamily bool) []*upstream {
	var out []*upstream
	for _, u := range c.upstreams {
		if (anyFamily || u.family(model) == f) && k.reaches(u.cfg.Name) && config.MatchAny(u.cfg.Models, model) {
			out = append(out, u)
		}
	}
	return out
}

// Serves reports whether some upstream, of any family and active or not,
// serves model.
func (c *Catalog) Serves(model string) bool {
	for _, u := range c.upstreams {
		if config.MatchAny(u.cfg.Models, model) {
			return true
		}
	}
	return false
}

// servers returns the upstreams of any family that serve model and that key
// k (nil: any key) may reach, inactive ones included.
func (c *Catalog) servers(model string, k *clientKey) []*upstream {
	var out []*upstream
	for _, u := range c.upstreams {
		if k.reaches(u.cfg.Name) && config.MatchAny(u.cfg.Models, model) {
			out = append(out, u)
		}
	}
	return out
}

// models lists the concrete model names key k may use (glob patterns are
// not listed), sorted.
func (c *Catalog) models(k *clientKey) []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range c.upstreams {
		if !u.cfg.Active || !k.reaches(u.cfg.Name) {
			continue
		}
		for _, m := range u.cfg.Models {
			if strings.ContainsAny(m, "*?[") || seen[m] || !k.allows(m) {
				continue
			}
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// upstreamModel is the model name sent to u for client model m.
func (u *upstream) upstreamModel(m string) string {
	if mapped, ok := u.cfg.ModelMap[m]; ok {
		return mapped
	}
	return m
}

// endpoint returns the endpoint of c's upstream named like u when its
// provider settings are u's, so that a reload keeps what an endpoint holds
// (a Vertex upstream's OAuth token); nil otherwise, and for a nil c.
func (c *Catalog) endpoint(u config.Upstream) provider.Endpoint {
	if c == nil {
		return nil
	}
	old := c.byName[u.Name]
	if old == nil || old.cfg.Provider != u.Provider || !reflect.DeepEqual(old.cfg.Adapter(), u.Adapter()) {
		return nil
	}
	return old.ep
}

// family is the wire family u speaks for client model m.
func (u *upstream) family(m string) codec.Family { return u.ep.Family(u.upstreamModel(m)) }

// balancer returns the balancer of c's route for r's pattern when its
// strategy is r's, nil otherwise (and for a nil c).
func (c *Catalog) balancer(r config.Route) *balancer.Balancer {
	if old := c.sameRoute(r); old != nil && old.cfg.Strategy == r.Strategy {
		return old.bal
	}
	return nil
}

// budgets returns the retry and hedge budgets of c's route for r's
// pattern, with r's ratios, so that a reload keeps what they have counted.
func (c *Catalog) budgets(r config.Route) (retries, hedges *limits.RetryBudget) {
	if old := c.sameRoute(r); old != nil {
		old.budget.SetRatio(r.RetryBudget)
		old.hedges.SetRatio(r.Hedge.Budget)
		return old.budget, old.hedges
	}
	return nil, nil
}

// sameRoute returns c's route with r's pattern (the fallback for "*"), or nil.
func (c *Catalog) sameRoute(r config.Route) *route {
	if c == nil {
		return nil
	}
	if r.Model == "*" && c.fallback != nil && c.fallback.cfg.Model == "*" {
		return c.fallback
	}
	for _, old := range c.routes {
		if old.cfg.Model == r.Model {
			return old
		}
	}
	return nil
}

// tenantOf returns whom k's requests wait as in upstream queues
// (docs/routing.md#tenants-classes-and-fair-queueing): its class, and its
// key and team with their weights; tm is its team, nil for none (a tenant
// of its own).
func tenantOf(k config.Key, tm *config.Team) limits.Tenant {
	t := limits.Tenant{Class: limits.ParseClass(k.Class), Key: k.Name, Weight: float64(max(k.Weight, 1))}
	if tm != nil {
		t.Team, t.TeamWeight = tm.Name, float64(max(tm.Weight, 1))
	}
	return t
}
