package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSecurityMetricsTokenOnlyAsBearerHeader: with metrics.token set, the
// token counts only as the Authorization header's Bearer credential; in the
// query string, a cookie or Basic credentials it is refused.
func TestSecurityMetricsTokenOnlyAsBearerHeader(t *testing.T) {
	const secret = "metrics-token-0123456789"
	tests := []struct {
		name, query, header, value string
		want                       int
	}{
		{"bearer", "", "Authorization", "Bearer " + secret, http.StatusOK},
		{"query", "?token=" + secret + "&access_token=" + secret, "", "", http.StatusUnauthorized},
		{"cookie", "", "Cookie", "token=" + secret, http.StatusUnauthorized},
		{"basic", "", "Authorization", "Basic " + secret, http.StatusUnauthorized},
		{"longer", "", "Authorization", "Bearer " + secret + secret, http.StatusUnauthorized},
		{"shorter", "", "Authorization", "Bearer " + secret[:len(secret)-1], http.StatusUnauthorized},
	}
	h := newTest(t).Handler(secret)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics"+tt.query, nil)
			if tt.header != "" {
				r.Header.Set(tt.header, tt.value)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d", w.Code, tt.want)
			}
		})
	}
}

// TestSecurityMetricsTokenCompareIsConstantTime reads requireBearer's
// source: the token must be compared with subtle.ConstantTimeCompare and
// with no ==/!= between two non-literal values (timing itself is too noisy
// to test).
func TestSecurityMetricsTokenCompareIsConstantTime(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "handler.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var body *ast.BlockStmt
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "requireBearer" {
			body = fd.Body
		}
	}
	if body == nil {
		t.Fatal("handler.go has no requireBearer")
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
					case "bytes.Equal", "strings.Compare", "bytes.Compare", "strings.EqualFold":
						t.Errorf("requireBearer compares with %s.%s, which is not constant-time", pkg.Name, sel.Sel.Name)
					}
				}
			}
		case *ast.BinaryExpr:
			_, lit1 := n.X.(*ast.BasicLit)
			_, lit2 := n.Y.(*ast.BasicLit)
			if (n.Op == token.EQL || n.Op == token.NEQ) && !lit1 && !lit2 {
				t.Errorf("requireBearer compares with %s between two non-literal values", n.Op)
			}
		}
		return true
	})
	if !constantTime {
		t.Error("requireBearer does not call subtle.ConstantTimeCompare")
	}
}
