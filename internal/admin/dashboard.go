package admin

import (
	"embed"
	"io/fs"
	"net/http"
	"strconv"
)

// web holds the dashboard: one HTML page, its stylesheet and its script. No
// CDN, no external fonts: the page works on a machine without internet.
//
//go:embed web
var web embed.FS

// dashboard serves the embedded files under /admin/. The page asks for the
// admin token and calls the API with it; the files themselves hold nothing
// secret and need no token. Every answer carries the headers of
// securityHeaders: a Content-Security-Policy that allows only the page's own
// origin (no inline script or style, so an injected value cannot run), no
// framing, no sniffing, no referrer and no caching.
func dashboard() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/admin/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if staticGet(w, r) {
			files.ServeHTTP(w, r)
		}
	})
}

// staticGet sets the dashboard's security headers on w and reports
// whether r may be answered: a GET or HEAD; anything else is answered 405.
func staticGet(w http.ResponseWriter, r *http.Request) bool {
	securityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use GET", nil)
		return false
	}
	return true
}

// Favicon serves the dashboard's icon, a small SVG (web/favicon.svg), with
// the dashboard's headers. The admin handler answers /admin/favicon.ico and
// /favicon.ico with it, and the gateway its own /favicon.ico, so that a
// browser's request for the icon is no 404; it holds nothing secret.
func Favicon() http.Handler {
	icon, err := web.ReadFile("web/favicon.svg")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !staticGet(w, r) {
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Content-Length", strconv.Itoa(len(icon)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(icon)
		}
	})
}

// contentSecurityPolicy lets the dashboard load its own script, stylesheet
// and images and call its own origin's API, and nothing else: no inline
// script or style attribute, no plugin, no form target, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// securityHeaders sets the headers of every dashboard file. no-store keeps
// the page (and what a browser might cache of it) off shared disks; the
// files are small and embedded, so revalidating them costs nothing.
// X-Frame-Options repeats frame-ancestors 'none' for browsers that predate it.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}
