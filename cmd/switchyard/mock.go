package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// newMockCmd builds `switchyard mock`: one mock LLM upstream on the network,
// for trying the gateway or testing a client without provider keys.
func newMockCmd() *cobra.Command {
	var (
		listen, saPath string
		opts           mock.Options
	)
	cmd := &cobra.Command{
		Use:   "mock",
		Short: "Serve a mock upstream of every provider",
		Long: `Serve a mock LLM upstream that speaks every provider's wire format on one port:
OpenAI (chat/completions, completions, embeddings, responses, models), Anthropic
(messages), Gemini (generateContent), Vertex AI (Gemini and Claude models, with an
OAuth2 token endpoint) and Bedrock (Converse, SigV4-verified). It answers only the
real services' paths (404 elsewhere) and prints the base_url each provider needs.

Its behaviour can be changed while it runs:
  curl -X PATCH BASE/_mock/behavior -d '{"error_rate":0.2,"ttft":"500ms"}'
  curl BASE/_mock/stats`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Behavior.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMock(ctx, cmd, listen, saPath, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9001", "address to listen on (\":0\" picks a free port)")
	f.StringVar(&opts.Name, "name", "mock", "name sent in the X-Mock-Upstream response header")
	f.DurationVar(&opts.Behavior.Latency, "latency", 0, "delay before each response (before the headers of a stream)")
	f.DurationVar(&opts.Behavior.TTFT, "ttft", 0, "streaming: delay before the first event")
	f.Float64Var(&opts.Behavior.TPS, "tps", 0, "streaming: tokens per second after the first (0 = as fast as possible)")
	f.Float64Var(&opts.Behavior.ErrorRate, "error-rate", 0, "probability (0–1) of answering 500")
	f.IntVar(&opts.Behavior.RPM, "rpm", 0, "requests-per-minute limit, answering 429 beyond it (0 = none)")
	f.IntVar(&opts.Behavior.TPM, "tpm", 0, "tokens-per-minute limit, answering 429 beyond it (0 = none)")
	f.IntVar(&opts.Behavior.CompletionTokens, "completion-tokens", 0, "tokens in each answer (0 = 16)")
	f.Int64Var(&opts.Seed, "seed", 0, "seed for the answers and the error draws")
	f.StringSliceVar(&opts.Models, "models", nil, "models listed by GET /models (default: a few gpt-* and claude-* names)")
	f.StringVar(&opts.APIKey, "api-key", "", "the only key every family accepts (also the Bedrock API key); empty: any")
	f.StringVar(&opts.AWSAccessKeyID, "aws-access-key-id", "", "Bedrock: verify SigV4 signatures made with this key id …")
	f.StringVar(&opts.AWSSecretAccessKey, "aws-secret-access-key", "", "… and this secret")
	f.StringVar(&opts.AWSSessionToken, "aws-session-token", "", "… and require this session token (temporary credentials) as X-Amz-Security-Token")
	var entra mock.EntraApp
	f.StringVar(&entra.TenantID, "entra-tenant-id", "", "Azure OpenAI: also accept Entra ID tokens of this tenant's POST /{tenant}/oauth2/v2.0/token …")
	f.StringVar(&entra.ClientID, "entra-client-id", "", "… granted to this client id …")
	f.StringVar(&entra.ClientSecret, "entra-client-secret", "", "… with this client secret …")
	f.StringVar(&entra.FederatedToken, "entra-federated-token", "", "… or this federated token as the client assertion")
	cmd.PreRun = func(*cobra.Command, []string) {
		if entra.TenantID != "" {
			opts.Entra = &entra
		}
	}
	f.StringVar(&saPath, "service-account", "", "Vertex: the service-account JSON key whose assertions the token endpoint accepts; empty: a new one, written beside the temporary directory and printed")
	return cmd
}

// runMock serves until ctx ends, then shuts down gracefully.
func runMock(ctx context.Context, cmd *cobra.Command, listen, saPath string, opts mock.Options) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	base := mock.BaseURL(ln.Addr())
	if saPath, err = mockServiceAccount(&opts, saPath, base); err != nil {
		ln.Close()
		return err
	}
	srv := mock.New(opts)
	printMockBanner(cmd.OutOrStdout(), srv.Name(), base, saPath)

	start := time.Now()
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(cmd.ErrOrStderr(), "mock upstream %q stopped after %s: %d requests, by status %v\n",
		srv.Name(), time.Since(start).Round(time.Second), st.Requests, st.ByStatus)
	return nil
}

// printMockBanner prints where the mock listens and the base_url an
// upstream of each provider needs to reach it: the mock answers only the
// real services' paths, so a base_url that works here works in production
// with the provider's host.
func printMockBanner(w io.Writer, name, base, saPath string) {
	reg := provider.Builtin()
	fmt.Fprintf(w, "mock upstream %q listening on %s\n", name, base)
	fmt.Fprintln(w, "  base_url per provider:")
	for _, p := range reg.Names() {
		fmt.Fprintf(w, "    %-18s %s\n", p+":", reg.BaseURLAt(p, base))
	}
	fmt.Fprintf(w, "  vertex.credentials_file: %s\n", saPath)
	fmt.Fprintf(w, "  behavior: %s/_mock/behavior   stats: %s/_mock/stats\n", base, base)
}

// mockServiceAccount sets the mock's Vertex service account: the one in the
// JSON key at path, or a new one whose key file (token_uri at the mock) it
// writes to a private temporary file. It returns the key file's path.
func mockServiceAccount(opts *mock.Options, path, base string) (string, error) {
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading --service-account: %w", err)
		}
		if opts.ServiceAccount, err = mock.ParseServiceAccount(data); err != nil {
			return "", fmt.Errorf("--service-account %s: %w", path, err)
		}
		return path, nil
	}
	sa, err := mock.NewServiceAccount("switchyard-mock@mock-project.iam.gserviceaccount.com")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "switchyard-mock-sa-*.json") // 0600
	if err != nil {
		return "", fmt.Errorf("writing the mock's service account: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(sa.JSON("mock-project", mock.TokenURI(base))); err != nil {
		return "", fmt.Errorf("writing the mock's service account: %w", err)
	}
	opts.ServiceAccount = sa
	return f.Name(), nil
}
