package admin

import (
	"context"

	"switchyard/internal/config"
)

// The Service's configuration CRUD. A change is persisted, then routing is
// reloaded before the method returns (see putElement).

// Upstreams returns every upstream, ordered by name, api_key included (the
// HTTP layer redacts it).
func (s *Service) Upstreams(ctx context.Context) ([]config.Upstream, error) {
	return s.st.ListUpstreams(ctx)
}

// CreateUpstream stores a new upstream. ErrConflict when the name is taken;
// config.Errors (paths relative to the upstream) when it does not fit the
// rest of the configuration.
func (s *Service) CreateUpstream(ctx context.Context, u config.Upstream) error {
	return createElement(ctx, s, upstreamKind, u)
}

// UpdateUpstream replaces the named upstream with what edit returns from
// the stored one, atomically with respect to other changes, and returns the
// result. ErrNotFound when absent; an error from edit is returned as is and
// changes nothing. edit must not change the name.
func (s *Service) UpdateUpstream(ctx context.Context, name string, edit func(config.Upstream) (config.Upstream, error)) (config.Upstream, error) {
	return updateElement(ctx, s, upstreamKind, name, edit)
}

// DeleteUpstream removes the named upstream; ErrNotFound when absent. The
// gateway forgets its breaker and statistics; a key's allowed_upstreams
// naming it is left as it is (the key simply cannot reach it).
func (s *Service) DeleteUpstream(ctx context.Context, name string) error {
	return deleteElement(ctx, s, upstreamKind, name)
}

// Keys returns every client key, ordered by name. Keys are given and
// returned with KeySHA256 set and Key (the plaintext) empty: the secret is
// never stored.
func (s *Service) Keys(ctx context.Context) ([]config.Key, error) {
	return s.st.ListKeys(ctx)
}

// CreateKey stores a new key. ErrConflict when the name is taken;
// config.Errors when it does not fit the rest (a secret another key has,
// an unknown allowed upstream).
func (s *Service) CreateKey(ctx context.Context, k config.Key) error {
	return createElement(ctx, s, keyKind, k)
}

// UpdateKey is UpdateUpstream for keys.
func (s *Service) UpdateKey(ctx context.Context, name string, edit func(config.Key) (config.Key, error)) (config.Key, error) {
	return updateElement(ctx, s, keyKind, name, edit)
}

// DeleteKey removes the named key; ErrNotFound when absent. The gateway
// drops the Responses conversations it kept for the key.
func (s *Service) DeleteKey(ctx context.Context, name string) error {
	return deleteElement(ctx, s, keyKind, name)
}

// Routes returns every route, ordered by model.
func (s *Service) Routes(ctx context.Context) ([]config.Route, error) {
	return s.st.ListRoutes(ctx)
}

// PutRoute creates or replaces the route for r.Model and reports whether
// it created it. config.Errors when it does not fit the rest.
func (s *Service) PutRoute(ctx context.Context, r config.Route) (created bool, err error) {
	_, created, err = putElement(ctx, s, routeKind, r.Model, func(config.Route, bool) (config.Route, error) { return r, nil })
	return created, err
}

// DeleteRoute removes the route for model; ErrNotFound when absent.
func (s *Service) DeleteRoute(ctx context.Context, model string) error {
	return deleteElement(ctx, s, routeKind, model)
}
