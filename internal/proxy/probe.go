package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"switchyard/internal/config"
	"switchyard/internal/health"
)

// Probe checks upstream name the way `health.probe` says: "models" sends
// GET {base_url}/models, "chat" a one-token chat (or message) on the first
// concrete model it serves. It returns nil when the upstream answered 2xx,
// and a *health.OutcomeError that classifies anything else. Probe is the
// health.CheckFunc of the gateway's prober.
func (s *Server) Probe(ctx context.Context, name, kind string) error {
	up := s.catalog.Load().byName[name]
	if up == nil {
		return fmt.Errorf("probing %s: no such upstream", name)
	}
	method, target, body := http.MethodGet, upstreamURL(up, "models", ""), []byte(nil)
	if kind == "chat" {
		model := probeModel(up)
		method = http.MethodPost
		if up.protocol == Anthropic {
			target = upstreamURL(up, "messages", model)
			body = fmt.Appendf(nil, `{"model":%q,"max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`, model)
		} else {
			target = upstreamURL(up, "chat/completions", model)
			body = fmt.Appendf(nil, `{"model":%q,"max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`, model)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("probing %s: %w", name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	setUpstreamAuth(req.Header, up)
	resp, err := s.upstream.RoundTrip(req)
	if err != nil {
		return &health.OutcomeError{Outcome: health.ServerError, Err: fmt.Errorf("probing %s: %w", name, unwrapURLError(err))}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if o := classify(resp.StatusCode); o != health.Success {
		return &health.OutcomeError{Outcome: o, Err: fmt.Errorf("probing %s: status %d", name, resp.StatusCode)}
	}
	return nil
}

// probeModel is the upstream's first model without glob characters, as
// mapped for it.
func probeModel(up *upstream) string {
	for _, m := range up.cfg.Models {
		if !strings.ContainsAny(m, "*?[") {
			return up.upstreamModel(m)
		}
	}
	return up.upstreamModel(strings.Trim(up.cfg.Models[0], "*?[]"))
}

// setUpstreamAuth sets the upstream's credentials and its configured extra headers.
func setUpstreamAuth(h http.Header, up *upstream) {
	for k, v := range up.cfg.Headers {
		h.Set(k, v)
	}
	switch up.cfg.Provider {
	case config.ProviderAnthropic:
		h.Set("X-Api-Key", up.cfg.APIKey)
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", up.apiVersion)
		}
	case config.ProviderAzureOpenAI:
		h.Set("Api-Key", up.cfg.APIKey)
	default:
		if up.cfg.APIKey != "" {
			h.Set("Authorization", "Bearer "+up.cfg.APIKey)
		}
	}
}

// ActiveUpstreams returns the names of the active upstreams in force, sorted
// (the targets of the active prober).
func (s *Server) ActiveUpstreams() []string {
	cat := s.catalog.Load()
	names := make([]string, 0, len(cat.upstreams))
	for _, u := range cat.upstreams {
		if u.cfg.Active {
			names = append(names, u.cfg.Name)
		}
	}
	return names
}
