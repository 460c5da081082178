package admin

import (
	"embed"
	"io/fs"
	"net/http"
)

// web holds the dashboard: one HTML page, its stylesheet and its script. No
// CDN, no external fonts: the page works on a machine without internet.
//
//go:embed web
var web embed.FS

// dashboard serves the embedded files under /admin/. The page asks for the
// admin token and calls the API with it; the files themselves hold nothing
// secret and need no token. The Content-Security-Policy allows only the
// page's own origin.
func dashboard() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/admin/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use GET", nil)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
			"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
