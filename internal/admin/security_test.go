package admin_test

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"switchyard/internal/admin"
)

// TestSecurityTokenOnlyAsBearerHeader: the admin token counts only as the
// Bearer credential of the Authorization header, compared whole. A token in
// the query string, a cookie, another header or Basic credentials is refused.
func TestSecurityTokenOnlyAsBearerHeader(t *testing.T) {
	tests := []struct {
		name  string
		query string
		hdr   [][2]string
		want  int
	}{
		{"right token", "", [][2]string{{"Authorization", "Bearer " + token}}, http.StatusOK},
		{"right token, padded", "", [][2]string{{"Authorization", "Bearer   " + token + " "}}, http.StatusOK},
		{"no credentials", "", nil, http.StatusUnauthorized},
		{"wrong token", "", [][2]string{{"Authorization", "Bearer x" + token[1:]}}, http.StatusUnauthorized},
		{"prefix", "", [][2]string{{"Authorization", "Bearer " + token[:len(token)-1]}}, http.StatusUnauthorized},
		{"longer", "", [][2]string{{"Authorization", "Bearer " + token + token}}, http.StatusUnauthorized},
		{"other case", "", [][2]string{{"Authorization", "Bearer " + strings.ToUpper(token)}}, http.StatusUnauthorized},
		{"empty bearer", "", [][2]string{{"Authorization", "Bearer "}}, http.StatusUnauthorized},
		{"basic, token as password", "", [][2]string{{"Authorization", basic("admin", token)}}, http.StatusUnauthorized},
		{"basic, token as user", "", [][2]string{{"Authorization", basic(token, "")}}, http.StatusUnauthorized},
		{"token in the query", "?token=" + token + "&access_token=" + token, nil, http.StatusUnauthorized},
		{"token in a cookie", "", [][2]string{{"Cookie", "token=" + token + "; admin_token=" + token}}, http.StatusUnauthorized},
		{"token as x-api-key", "", [][2]string{{"X-Api-Key", token}}, http.StatusUnauthorized},
	}
	h := admin.New(newFakeBackend(t).svc, token, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/admin/api/state"+tt.query, nil)
			for _, kv := range tt.hdr {
				r.Header.Set(kv[0], kv[1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", got)
			}
			if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
		})
	}
}

func basic(user, pass string) string {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}

// TestSecurityTokenCompareIsConstantTime reads the source of the function
// that checks the admin token: it must compare with
// subtle.ConstantTimeCompare and must not compare strings or byte slices
// with ==, !=, bytes.Equal or strings.Compare, whose time depends on where
// the first difference is. (Timing itself is too noisy to test.)
func TestSecurityTokenCompareIsConstantTime(t *testing.T) {
	checkConstantTime(t, "http.go", "authorized")
}

// checkConstantTime fails unless function fn of file calls
// subtle.ConstantTimeCompare and has no variable-time comparison: ==/!= is
// allowed only against a literal (ConstantTimeCompare(…) == 1).
func checkConstantTime(t *testing.T, file, fn string) {
	t.Helper()
	f, err := parser.ParseFile(gotoken.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var body *ast.BlockStmt
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			body = fd.Body
		}
	}
	if body == nil {
		t.Fatalf("%s has no function %s", file, fn)
	}
	constantTime := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					switch pkg.Name + "." + sel.Sel.Name {
					case "subtle.ConstantTimeCompare":
						constantTime = true
					case "bytes.Equal", "strings.Compare", "bytes.Compare", "reflect.DeepEqual":
						t.Errorf("%s compares with %s.%s, which is not constant-time", fn, pkg.Name, sel.Sel.Name)
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op == gotoken.EQL || n.Op == gotoken.NEQ {
				_, lit1 := n.X.(*ast.BasicLit)
				_, lit2 := n.Y.(*ast.BasicLit)
				if !lit1 && !lit2 {
					t.Errorf("%s compares with %s between two non-literal values", fn, n.Op)
				}
			}
		}
		return true
	})
	if !constantTime {
		t.Errorf("%s does not call subtle.ConstantTimeCompare", fn)
	}
}

// TestSecurityDashboardHeaders: every dashboard file, and a missing one, is
// served with the CSP and the no-store, nosniff, no-framing and no-referrer
// headers, without a token. (net/http's file server drops Cache-Control from
// its own 404, which holds nothing to cache.)
func TestSecurityDashboardHeaders(t *testing.T) {
	for _, path := range []string{"/admin/", "/admin/index.html", "/admin/app.js", "/admin/style.css", "/admin/missing.js", "/admin/favicon.ico", "/favicon.ico"} {
		t.Run(path, func(t *testing.T) {
			w := serve(t, newFakeBackend(t), http.MethodGet, path, "", "")
			h := w.Header()
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-") {
				t.Errorf("Content-Security-Policy %q allows unsafe sources", csp)
			}
			for name, want := range map[string]string{
				"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
				"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
			} {
				if got := h.Get(name); got != want && !(name == "Cache-Control" && w.Code == http.StatusNotFound) {
					t.Errorf("%s %q, want %q", name, got, want)
				}
			}
		})
	}
}
