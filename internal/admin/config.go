package admin

import (
	"context"
	"net/http"
	"strings"

	"switchyard/internal/config"
)

// The configuration endpoints: /upstreams, /keys and /routes.
//
// A POST builds the object from its type's defaults overlaid with the body;
// a PUT does the same for an existing name; a PATCH merges the body into the
// stored object (RFC 7386: objects merge, null resets a field to its
// default). The result is decoded field by field and validated
// (config's Validate) before the Service stores it, so a bad value answers
// 400 with its path and changes nothing.

// fieldList names the top-level fields of a body, for the change log (the
// values may hold secrets and are never logged).
func fieldList(body tree) string {
	return strings.Join(sortedKeys(body), ",")
}

// cloneTree copies t deeply enough for buildKey to delete from it.
func cloneTree(t tree) tree {
	c := make(tree, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// hasPath reports whether errs has an error at path.
func hasPath(errs config.Errors, path string) bool {
	for _, e := range errs {
		if e.Path == path {
			return true
		}
	}
	return false
}

// writeList answers a list endpoint: every element list returns, each
// rendered by view; what names the list in an error.
func writeList[T any](h *handler, w http.ResponseWriter, r *http.Request, what string,
	list func(context.Context) ([]T, error), view func(T) (tree, error),
) {
	elems, err := list(r.Context())
	if err != nil {
		h.writeErr(w, r, what, err)
		return
	}
	out := make([]tree, 0, len(elems))
	for _, e := range elems {
		v, err := view(e)
		if err != nil {
			h.writeErr(w, r, what, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}
