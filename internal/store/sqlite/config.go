package sqlite

import (
	"context"
	"fmt"

	"switchyard/internal/config"
	"switchyard/internal/store"
	"switchyard/internal/store/internal/codec"
)

// UpsertUpstream inserts or replaces the upstream named u.Name. The API key is
// kept in its own column, not in the JSON spec.
func (s *Store) UpsertUpstream(ctx context.Context, u config.Upstream) error {
	apiKey, spec, err := codec.EncodeUpstream(u)
	if err != nil {
		return err
	}
	const q = `INSERT INTO upstreams (name, provider, base_url, priority, weight, active, api_key, spec)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET
			provider = excluded.provider, base_url = excluded.base_url,
			priority = excluded.priority, weight = excluded.weight, active = excluded.active,
			api_key = excluded.api_key, spec = excluded.spec,
			updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`
	if _, err := s.w.ExecContext(ctx, q, u.Name, u.Provider, u.BaseURL, u.Priority, u.Weight, u.Active, apiKey, spec); err != nil {
		return fmt.Errorf("upserting upstream %q: %w", u.Name, err)
	}
	return nil
}

// DeleteUpstream removes the named upstream; store.ErrNotFound when absent.
func (s *Store) DeleteUpstream(ctx context.Context, name string) error {
	return s.delete(ctx, `DELETE FROM upstreams WHERE name = ?`, "upstream", name)
}

// ListUpstreams returns every upstream, API keys included, ordered by name.
func (s *Store) ListUpstreams(ctx context.Context) ([]config.Upstream, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, api_key, spec FROM upstreams ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing upstreams: %w", err)
	}
	defer rows.Close()
	out := []config.Upstream{}
	for rows.Next() {
		var (
			name, apiKey string
			spec         []byte
		)
		if err := rows.Scan(&name, &apiKey, &spec); err != nil {
			return nil, fmt.Errorf("listing upstreams: %w", err)
		}
		u, err := codec.DecodeUpstream(name, apiKey, spec)
		if err != nil {
			return nil, fmt.Errorf("listing upstreams: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing upstreams: %w", err)
	}
	return out, nil
}

// UpsertKey inserts or replaces the client key named k.Name. It returns
// store.ErrPlaintextKey, storing nothing, unless k.Key is empty and
// k.KeySHA256 is a hex SHA-256 (64 hex digits).
func (s *Store) UpsertKey(ctx context.Context, k config.Key) error {
	spec, err := codec.EncodeKey(k)
	if err != nil {
		return err
	}
	const q = `INSERT INTO keys (name, key_sha256, rpm, spec) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET
			key_sha256 = excluded.key_sha256, rpm = excluded.rpm, spec = excluded.spec,
			updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`
	if _, err := s.w.ExecContext(ctx, q, k.Name, k.KeySHA256, k.RPM, spec); err != nil {
		return fmt.Errorf("upserting key %q: %w", k.Name, err)
	}
	return nil
}

// DeleteKey removes the named client key; store.ErrNotFound when absent.
func (s *Store) DeleteKey(ctx context.Context, name string) error {
	return s.delete(ctx, `DELETE FROM keys WHERE name = ?`, "key", name)
}

// ListKeys returns every client key (hashes only), ordered by name.
func (s *Store) ListKeys(ctx context.Context) ([]config.Key, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, key_sha256, spec FROM keys ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing keys: %w", err)
	}
	defer rows.Close()
	out := []config.Key{}
	for rows.Next() {
		var (
			name, hash string
			spec       []byte
		)
		if err := rows.Scan(&name, &hash, &spec); err != nil {
			return nil, fmt.Errorf("listing keys: %w", err)
		}
		k, err := codec.DecodeKey(name, hash, spec)
		if err != nil {
			return nil, fmt.Errorf("listing keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing keys: %w", err)
	}
	return out, nil
}

// UpsertRoute inserts or replaces the route for r.Model.
func (s *Store) UpsertRoute(ctx context.Context, r config.Route) error {
	spec, err := codec.EncodeRoute(r)
	if err != nil {
		return err
	}
	const q = `INSERT INTO routes (model, strategy, retries, spec) VALUES (?, ?, ?, ?)
		ON CONFLICT (model) DO UPDATE SET
			strategy = excluded.strategy, retries = excluded.retries, spec = excluded.spec,
			updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`
	if _, err := s.w.ExecContext(ctx, q, r.Model, r.Strategy, r.Retries, spec); err != nil {
		return fmt.Errorf("upserting route %q: %w", r.Model, err)
	}
	return nil
}

// DeleteRoute removes the route for model; store.ErrNotFound when absent.
func (s *Store) DeleteRoute(ctx context.Context, model string) error {
	return s.delete(ctx, `DELETE FROM routes WHERE model = ?`, "route", model)
}

// ListRoutes returns every route, ordered by model.
func (s *Store) ListRoutes(ctx context.Context) ([]config.Route, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT model, spec FROM routes ORDER BY model`)
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	defer rows.Close()
	out := []config.Route{}
	for rows.Next() {
		var (
			model string
			spec  []byte
		)
		if err := rows.Scan(&model, &spec); err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		r, err := codec.DecodeRoute(model, spec)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	return out, nil
}

// delete runs a single-row DELETE and maps "no row" to store.ErrNotFound.
func (s *Store) delete(ctx context.Context, q, kind, id string) error {
	res, err := s.w.ExecContext(ctx, q, id)
	if err != nil {
		return fmt.Errorf("deleting %s %q: %w", kind, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("deleting %s %q: %w", kind, id, err)
	}
	if n == 0 {
		return fmt.Errorf("deleting %s %q: %w", kind, id, store.ErrNotFound)
	}
	return nil
}
