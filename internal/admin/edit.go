package admin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"switchyard/internal/config"
	"switchyard/internal/store"
)

// The Service's one edit flow, shared by upstreams, keys and routes: under
// editMu, load the stored configuration, put the change in place, validate
// the whole, store the element, reload routing.

// elementRef matches a reference to a list element in a validation message.
var elementRef = regexp.MustCompile(`\b(upstreams|keys|routes)\[(\d+)\]`)

// elementKind describes one kind of configuration element (upstream, key,
// route) to the edit flow: putElement, createElement, updateElement and
// deleteElement.
type elementKind[T any] struct {
	noun   string                                           // "upstream", in messages
	one    string                                           // "an upstream", in messages
	list   string                                           // "upstreams", the list in validation paths
	id     func(T) string                                   // the element's natural id (its name or model)
	elems  func(*config.Config) *[]T                        // the kind's list in a configuration
	upsert func(ConfigStore, context.Context, T) error      // stores an element
	remove func(ConfigStore, context.Context, string) error // deletes an element by id
	// forget, when set, drops what the gateway keeps about a deleted
	// element beyond the routing table. It is called with editMu held.
	forget func(gw Router, id string)
}

var (
	upstreamKind = elementKind[config.Upstream]{
		noun: "upstream", one: "an upstream", list: "upstreams",
		id:     func(u config.Upstream) string { return u.Name },
		elems:  func(c *config.Config) *[]config.Upstream { return &c.Upstreams },
		upsert: ConfigStore.UpsertUpstream, remove: ConfigStore.DeleteUpstream,
		forget: Router.ForgetUpstream,
	}
	keyKind = elementKind[config.Key]{
		noun: "key", one: "a key", list: "keys",
		id:     func(k config.Key) string { return k.Name },
		elems:  func(c *config.Config) *[]config.Key { return &c.Keys },
		upsert: ConfigStore.UpsertKey, remove: ConfigStore.DeleteKey,
		forget: Router.ForgetKey,
	}
	routeKind = elementKind[config.Route]{
		noun: "route", one: "a route", list: "routes",
		id:     func(r config.Route) string { return r.Model },
		elems:  func(c *config.Config) *[]config.Route { return &c.Routes },
		upsert: ConfigStore.UpsertRoute, remove: ConfigStore.DeleteRoute,
	}
)

// loadConfig reads what the store holds, under the file's defaults and
// affinity settings.
func (s *Service) loadConfig(ctx context.Context) (config.Config, error) {
	c := config.Config{Defaults: s.defaults, Affinity: s.affinity}
	var err error
	if c.Upstreams, err = s.st.ListUpstreams(ctx); err != nil {
		return config.Config{}, fmt.Errorf("loading upstreams: %w", err)
	}
	if c.Keys, err = s.st.ListKeys(ctx); err != nil {
		return config.Config{}, fmt.Errorf("loading keys: %w", err)
	}
	if c.Routes, err = s.st.ListRoutes(ctx); err != nil {
		return config.Config{}, fmt.Errorf("loading routes: %w", err)
	}
	return c, nil
}

// fitErrors validates c, the configuration the store would hold after a
// change, and returns the problems of the changed element, the one at prefix
// ("upstreams[3]"), with paths relative to it: a duplicate secret, an
// allowed upstream that does not exist, a fallback model nobody serves.
// Problems of other elements are not the change's and are left out.
func fitErrors(c config.Config, prefix string) error {
	var out config.Errors
	for _, e := range c.Validate() {
		rest, ok := strings.CutPrefix(e.Path, prefix)
		if ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			out = append(out, config.FieldError{Path: strings.TrimPrefix(rest, "."), Msg: nameElements(c, e.Msg)})
		}
	}
	if len(out) > 0 {
		return out
	}
	return nil
}

// nameElements rewrites the references to list elements in a validation
// message of c ("same secret as keys[0]"), which mean nothing to an API
// client, into the elements' names (`same secret as key "team-a"`).
func nameElements(c config.Config, msg string) string {
	return elementRef.ReplaceAllStringFunc(msg, func(ref string) string {
		m := elementRef.FindStringSubmatch(ref)
		i, _ := strconv.Atoi(m[2])
		switch {
		case m[1] == "upstreams" && i < len(c.Upstreams):
			return fmt.Sprintf("upstream %q", c.Upstreams[i].Name)
		case m[1] == "keys" && i < len(c.Keys):
			return fmt.Sprintf("key %q", c.Keys[i].Name)
		case m[1] == "routes" && i < len(c.Routes):
			return fmt.Sprintf("route %q", c.Routes[i].Model)
		}
		return ref
	})
}

// reload applies a stored change to routing.
func (s *Service) reload(ctx context.Context, what string) error {
	if err := s.gw.Reload(ctx); err != nil {
		return fmt.Errorf("reloading routing after changing %s: %w", what, err)
	}
	return nil
}

// putElement is the one write path. Under editMu it loads the stored
// configuration and finds the element of kind k whose id is id; change
// gets it (found false and a zero element when there is none) and returns
// the element to store, or an error to refuse the change. The new element
// takes the old one's place (or is appended), the whole configuration is
// validated with it in place, and it is stored and routing reloaded.
// created reports whether the element is new. A reload error is returned
// with the element, which is stored by then.
func putElement[T any](ctx context.Context, s *Service, k elementKind[T], id string, change func(old T, found bool) (T, error)) (e T, created bool, err error) {
	var zero T
	s.editMu.Lock()
	defer s.editMu.Unlock()
	c, err := s.loadConfig(ctx)
	if err != nil {
		return zero, false, err
	}
	elems := k.elems(&c)
	i := slices.IndexFunc(*elems, func(x T) bool { return k.id(x) == id })
	created = i < 0
	var old T
	if !created {
		old = (*elems)[i]
	}
	if e, err = change(old, !created); err != nil {
		return zero, false, err
	}
	if created {
		*elems = append(*elems, e)
		i = len(*elems) - 1
	} else {
		(*elems)[i] = e
	}
	if err := fitErrors(c, fmt.Sprintf("%s[%d]", k.list, i)); err != nil {
		return zero, false, err
	}
	if err := k.upsert(s.st, ctx, e); err != nil {
		return zero, false, fmt.Errorf("storing %s %s: %w", k.noun, id, err)
	}
	return e, created, s.reload(ctx, k.noun+" "+id)
}

// createElement stores e as a new element of kind k; ErrConflict when one
// with its id exists.
func createElement[T any](ctx context.Context, s *Service, k elementKind[T], e T) error {
	id := k.id(e)
	_, _, err := putElement(ctx, s, k, id, func(_ T, found bool) (T, error) {
		if found {
			return e, fmt.Errorf("%s %q: %w", k.noun, id, ErrConflict)
		}
		return e, nil
	})
	return err
}

// updateElement replaces the element of kind k called id by what edit
// makes of it; ErrNotFound when there is none. The edit may not change
// the id.
func updateElement[T any](ctx context.Context, s *Service, k elementKind[T], id string, edit func(T) (T, error)) (T, error) {
	e, _, err := putElement(ctx, s, k, id, func(old T, found bool) (T, error) {
		if !found {
			return old, fmt.Errorf("%s %q: %w", k.noun, id, ErrNotFound)
		}
		e, err := edit(old)
		if err != nil {
			return e, err
		}
		if k.id(e) != id {
			return e, config.Errors{{Path: "name", Msg: fmt.Sprintf("must be %q (%s cannot be renamed)", id, k.one)}}
		}
		return e, nil
	})
	return e, err
}

// deleteElement deletes the element of kind k called id under editMu,
// reloads routing and then has the gateway forget the element.
func deleteElement[T any](ctx context.Context, s *Service, k elementKind[T], id string) error {
	s.editMu.Lock()
	defer s.editMu.Unlock()
	what := fmt.Sprintf("%s %q", k.noun, id)
	if err := k.remove(s.st, ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return fmt.Errorf("deleting %s: %w", what, err)
	}
	if err := s.reload(ctx, k.noun+" "+id); err != nil {
		return err
	}
	if k.forget != nil {
		k.forget(s.gw, id)
	}
	return nil
}
