package gateway_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/internal/gateway"
)

// TestDemoServesBothProtocols: the `serve --demo` wiring answers the curl a
// new user is shown, and an Anthropic message, with the demo key.
func TestDemoServesBothProtocols(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := gateway.StartDemo(ctx, gateway.DemoOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	if len(d.Mocks) != 3 {
		t.Fatalf("demo started %d mocks, want 3", len(d.Mocks))
	}
	d.Config.Store.DSN = filepath.Join(t.TempDir(), "demo.db")
	e := serveGateway(t, d.Config, gateway.Options{})

	t.Run("openai chat", func(t *testing.T) {
		client := e.openAI(gateway.DemoKey)
		var raw *http.Response
		got, err := client.Chat.Completions.New(context.Background(), chatParams(gateway.DemoOpenAIModel, "Hello!"), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Choices) == 0 || got.Choices[0].Message.Content == "" || got.Model != gateway.DemoOpenAIModel {
			t.Fatalf("completion %s", got.RawJSON())
		}
		if up := raw.Header.Get("X-Switchyard-Upstream"); up != "openai-fast" && up != "openai-steady" {
			t.Errorf("served by %q, want a tier-0 demo upstream", up)
		}
	})
	t.Run("anthropic message", func(t *testing.T) {
		client := e.anthropic(gateway.DemoKey)
		var raw *http.Response
		msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: gateway.DemoAnthropicModel, MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello!"))},
		}, aoption.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Model != gateway.DemoAnthropicModel {
			t.Fatalf("message %s", msg.RawJSON())
		}
		if up := raw.Header.Get("X-Switchyard-Upstream"); up != "anthropic-fast" {
			t.Errorf("served by %q, want anthropic-fast", up)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		// The banner's curl line, and the SDK.
		r := rawRequest(t, http.MethodPost, e.URL+"/v1/embeddings",
			strings.NewReader(`{"model":"`+gateway.DemoEmbeddingModel+`","input":"Hello!"}`), "Authorization", "Bearer "+gateway.DemoKey)
		if r.status != http.StatusOK || gjson.GetBytes(r.body, "model").String() != gateway.DemoEmbeddingModel ||
			len(gjson.GetBytes(r.body, "data.0.embedding").Array()) == 0 {
			t.Fatalf("curl: status %d: %s", r.status, r.body)
		}
		client := e.openAI(gateway.DemoKey)
		got, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model: gateway.DemoEmbeddingModel,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"one", "two"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 2 || len(got.Data[1].Embedding) == 0 || got.Usage.PromptTokens <= 0 {
			t.Fatalf("embeddings %s", got.RawJSON())
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		client := e.openAI("sk-not-the-demo-key")
		if _, err := client.Chat.Completions.New(context.Background(), chatParams(gateway.DemoOpenAIModel, "Hello!")); err == nil {
			t.Fatal("a wrong key was accepted")
		}
	})
}

// TestDemoAdminTokenIsStable: two demo starts with the same state directory
// get the same admin token, kept there alone in a private file; an explicit
// token wins without replacing it; without a state directory every start
// gets a new one; a bad stored file is reported, not used.
func TestDemoAdminTokenIsStable(t *testing.T) {
	start := func(t *testing.T, opts gateway.DemoOptions) *gateway.Demo {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		opts.Listen = "127.0.0.1:0"
		d, err := gateway.StartDemo(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Cleanup)
		return d
	}
	token := func(d *gateway.Demo) string { return d.Config.Admin.Token }

	t.Run("same state dir, same token", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state", "switchyard-demo")
		first := start(t, gateway.DemoOptions{StateDir: dir})
		second := start(t, gateway.DemoOptions{StateDir: dir})
		if token(first) == "" || token(first) != token(second) {
			t.Fatalf("tokens %q and %q, want one token", token(first), token(second))
		}
		file := filepath.Join(dir, "admin-token")
		if first.TokenFile != file || second.TokenFile != file {
			t.Errorf("token files %q, %q, want %q", first.TokenFile, second.TokenFile, file)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 1 || entries[0].Name() != "admin-token" {
			t.Fatalf("state dir holds %v (%v), want the token file alone", entries, err)
		}
		fi, err := os.Stat(file)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file mode %v (%v), want 0600", fi.Mode(), err)
		}
		if b, _ := os.ReadFile(file); string(b) != token(first)+"\n" {
			t.Errorf("token file holds %q, want the token", b)
		}
		if len(first.Config.Warnings) != 0 {
			t.Errorf("warnings %v", first.Config.Warnings)
		}
	})
	t.Run("explicit token wins and is not stored", func(t *testing.T) {
		dir := t.TempDir()
		stored := token(start(t, gateway.DemoOptions{StateDir: dir}))
		d := start(t, gateway.DemoOptions{StateDir: dir, AdminToken: "sy-admin-mine"})
		if token(d) != "sy-admin-mine" || d.TokenFile != "" {
			t.Fatalf("token %q from %q, want sy-admin-mine from no file", token(d), d.TokenFile)
		}
		if again := token(start(t, gateway.DemoOptions{StateDir: dir})); again != stored {
			t.Errorf("after an explicit token the stored one is %q, want %q", again, stored)
		}
	})
	t.Run("no state dir, a new token each start", func(t *testing.T) {
		a, b := start(t, gateway.DemoOptions{}), start(t, gateway.DemoOptions{})
		if token(a) == token(b) || a.TokenFile != "" {
			t.Fatalf("tokens %q and %q (file %q), want two tokens and no file", token(a), token(b), a.TokenFile)
		}
	})
	t.Run("a readable file is made private", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "admin-token")
		if err := os.WriteFile(file, []byte("  sy-admin-edited \n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, 0o644); err != nil { // past the umask
			t.Fatal(err)
		}
		if got := token(start(t, gateway.DemoOptions{StateDir: dir})); got != "sy-admin-edited" {
			t.Fatalf("token %q, want the edited one", got)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file mode %v (%v), want 0600", fi.Mode(), err)
		}
	})
	t.Run("a bad file is reported", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "admin-token"), []byte("two words\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		d := start(t, gateway.DemoOptions{StateDir: dir})
		if token(d) == "" || strings.ContainsAny(token(d), " \n") || d.TokenFile != "" {
			t.Fatalf("token %q from %q, want a new one from no file", token(d), d.TokenFile)
		}
		if w := d.Config.Warnings.Error(); !strings.Contains(w, "admin.token: ") || !strings.Contains(w, "without whitespace") ||
			strings.Contains(w, "two words") {
			t.Errorf("warnings %q, want admin.token and what is wrong, not the file's text", w)
		}
	})
}

// TestDefaultDemoStateDir: $XDG_STATE_HOME/switchyard-demo when
// XDG_STATE_HOME is absolute (the XDG spec ignores a relative one), else
// ~/.switchyard/demo.
func TestDefaultDemoStateDir(t *testing.T) {
	home := t.TempDir()
	tests := []struct{ name, xdg, want string }{
		{"xdg state home", "/var/state", "/var/state/switchyard-demo"},
		{"unset", "", filepath.Join(home, ".switchyard", "demo")},
		{"relative ignored", "state", filepath.Join(home, ".switchyard", "demo")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			got, err := gateway.DefaultDemoStateDir()
			if err != nil || got != tc.want {
				t.Fatalf("DefaultDemoStateDir() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
