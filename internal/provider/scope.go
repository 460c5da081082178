package provider

import (
	"net/http"
	"strings"
)

// An OpenAI key may reach several organizations and projects; the
// OpenAI-Organization and OpenAI-Project headers say which one a request
// is billed to and limited by. The operator chooses them per upstream
// (`upstreams[].organization`, `upstreams[].project`; docs/config.md); a
// client's own values never go upstream (docs/protocols.md#headers-sent-upstream).

// Canonical names of the OpenAI headers that scope a request.
const (
	headerOrganization = "Openai-Organization"
	headerProject      = "Openai-Project"
)

// scope is the organization and project an OpenAI-family endpoint sends,
// each nil when not configured; built once, so that setting them on the hot
// path allocates nothing.
type scope struct {
	organization, project []string
}

func newScope(u Upstream) scope {
	var s scope
	if u.Organization != "" {
		s.organization = []string{u.Organization}
	}
	if u.Project != "" {
		s.project = []string{u.Project}
	}
	return s
}

// set writes the configured organization and project into h, replacing any
// value already there.
func (s scope) set(h http.Header) {
	if s.organization != nil {
		h[headerOrganization] = s.organization
	}
	if s.project != nil {
		h[headerProject] = s.project
	}
}

// checkScope validates the organization and project of a provider that
// sends them: an identifier (no whitespace or control characters, which
// would also make an invalid header value), and not set a second time
// through headers.
func checkScope(u Upstream) []Problem {
	var ps []Problem
	for _, f := range [...]struct{ field, value, header string }{
		{"organization", u.Organization, headerOrganization},
		{"project", u.Project, headerProject},
	} {
		if f.value == "" {
			continue
		}
		if strings.ContainsFunc(f.value, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			ps = append(ps, Problem{Field: f.field, Message: "must be an id without whitespace or control characters (check for a trailing newline)"})
		}
		for k := range u.Headers {
			if strings.EqualFold(k, f.header) {
				ps = append(ps, Problem{Field: "headers." + k, Message: "duplicates " + f.field + ", which sets this header: keep " + f.field})
			}
		}
	}
	return ps
}

// refuseScope is the check of a provider whose requests have no
// organization or project header: instead says what scopes its requests,
// so that the operator knows what to do.
func refuseScope(provider string, u Upstream, instead string) []Problem {
	var ps []Problem
	if u.Organization != "" {
		ps = append(ps, Problem{Field: "organization", Message: "not used by provider " + provider + ": " + instead})
	}
	if u.Project != "" {
		ps = append(ps, Problem{Field: "project", Message: "not used by provider " + provider + ": " + instead})
	}
	return ps
}
