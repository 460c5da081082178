package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"

	"switchyard/internal/gateway"
)

// TestDemoServesBothProtocols: the `serve --demo` wiring answers the curl a
// new user is shown, and an Anthropic message, with the demo key.
func TestDemoServesBothProtocols(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := gateway.StartDemo(ctx, "127.0.0.1:0")
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
	t.Run("wrong key", func(t *testing.T) {
		client := e.openAI("sk-not-the-demo-key")
		if _, err := client.Chat.Completions.New(context.Background(), chatParams(gateway.DemoOpenAIModel, "Hello!")); err == nil {
			t.Fatal("a wrong key was accepted")
		}
	})
}
