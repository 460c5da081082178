package provider

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard/internal/codec"
	"switchyard/internal/mock"
)

// isolateGoogle clears the Application Default Credentials' sources of
// the test process: no GOOGLE_APPLICATION_CREDENTIALS, a HOME without
// gcloud's file, and a metadata server on a closed port unless a test
// moves it (so that nothing probes the network).
func isolateGoogle(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLOUDSDK_CONFIG", "")
	os.Unsetenv("CLOUDSDK_CONFIG")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	os.Unsetenv("GOOGLE_APPLICATION_CREDENTIALS")
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	return home
}

// geminiStatus sends one generateContent of ep and returns the status.
func geminiStatus(t *testing.T, ep Endpoint) (int, error) {
	t.Helper()
	req, err := ep.NewRequest(context.Background(), codec.Gemini.Op(false), "gemini-2.5-flash", []byte(geminiBody), http.Header{})
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestVertexApplicationDefaultCredentials: an upstream with only project
// and location gets a token the mock issued from each source of the
// Application Default Credentials.
func TestVertexApplicationDefaultCredentials(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, home, mockURL string)
	}{
		{"GOOGLE_APPLICATION_CREDENTIALS", func(t *testing.T, home, mockURL string) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", writeFile(t, home, "key.json", string(testAccount().JSON("p1", mock.TokenURI(mockURL)))))
		}},
		{"gcloud's file", func(t *testing.T, home, mockURL string) {
			dir := filepath.Join(home, ".config", "gcloud")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "application_default_credentials.json", string(testAccount().JSON("p1", mock.TokenURI(mockURL))))
		}},
		{"the metadata server", func(t *testing.T, _, mockURL string) {
			t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(mockURL, "http://"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolateGoogle(t)
			m, srv, u := vertexMock(t, mock.Options{})
			tt.setup(t, home, srv.URL)
			u.Vertex.CredentialsJSON = ""
			if ps := (Vertex{}).Check(u); len(ps) > 0 {
				t.Fatalf("Check = %v", ps)
			}
			ep := Vertex{}.New(u)
			for range 2 {
				if status, err := geminiStatus(t, ep); err != nil || status != 200 {
					t.Fatalf("status %d, error %v", status, err)
				}
			}
			if got := m.Stats().TokensIssued; got != 1 {
				t.Errorf("%d tokens issued for 2 requests, want 1", got)
			}
		})
	}
}

// TestVertexApplicationDefaultCredentialsRefresh: a token with less than
// five minutes left is replaced before it is used again, one with six
// kept, from the metadata server and from a GOOGLE_APPLICATION_CREDENTIALS
// key alike.
func TestVertexApplicationDefaultCredentialsRefresh(t *testing.T) {
	sources := []struct {
		name  string
		setup func(t *testing.T, home, mockURL string)
	}{
		{"the metadata server", func(t *testing.T, _, mockURL string) {
			t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(mockURL, "http://"))
		}},
		{"GOOGLE_APPLICATION_CREDENTIALS", func(t *testing.T, home, mockURL string) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", writeFile(t, home, "key.json", string(testAccount().JSON("p1", mock.TokenURI(mockURL)))))
		}},
	}
	for _, src := range sources {
		name, setup := src.name, src.setup
		for _, tt := range []struct {
			lifetime time.Duration
			want     int64
		}{{4 * time.Minute, 3}, {6 * time.Minute, 1}} {
			t.Run(name+"/"+tt.lifetime.String(), func(t *testing.T) {
				home := isolateGoogle(t)
				m, srv, u := vertexMock(t, mock.Options{TokenLifetime: tt.lifetime})
				setup(t, home, srv.URL)
				u.Vertex.CredentialsJSON = ""
				ep := Vertex{}.New(u)
				for range 3 {
					if status, err := geminiStatus(t, ep); err != nil || status != 200 {
						t.Fatalf("status %d, error %v", status, err)
					}
				}
				if got := m.Stats().TokensIssued; got != tt.want {
					t.Errorf("%d tokens issued for 3 requests, want %d", got, tt.want)
				}
			})
		}
	}
}

// TestVertexApplicationDefaultCredentialsFailures: without a source, or
// with a file that names no credentials, every request fails with ErrAuth.
func TestVertexApplicationDefaultCredentialsFailures(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, home string)
	}{
		{"no metadata server", func(*testing.T, string) {}},
		{"a missing file", func(t *testing.T, home string) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(home, "absent.json"))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := isolateGoogle(t)
			tt.setup(t, home)
			ep := Vertex{}.New(Upstream{Name: "vx", BaseURL: "http://127.0.0.1:1/v1", Vertex: &VertexSettings{Project: "p1", Location: "us-east5"}})
			if _, err := geminiStatus(t, ep); !errors.Is(err, ErrAuth) {
				t.Fatalf("error = %v, want ErrAuth", err)
			}
		})
	}
}
