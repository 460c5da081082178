package gateway

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"switchyard/internal/config"
)

// demoTokenFile is the file in the demo's state directory that holds its
// admin token, and nothing else.
const demoTokenFile = "admin-token"

// DefaultDemoStateDir returns where `serve --demo` keeps its admin token
// between starts: $XDG_STATE_HOME/switchyard-demo when XDG_STATE_HOME is an
// absolute path, else ~/.switchyard/demo.
func DefaultDemoStateDir() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "switchyard-demo"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the demo's state directory: %w", err)
	}
	return filepath.Join(home, ".switchyard", "demo"), nil
}

// setAdminToken sets cfg's admin token: opts.AdminToken, else the one kept
// in opts.StateDir (stored there at the first start). When the stored token
// cannot be read or written, the demo runs with a new one and a warning.
func (d *Demo) setAdminToken(cfg *config.Config, opts DemoOptions) {
	switch {
	case opts.AdminToken != "":
		cfg.Admin.Token = opts.AdminToken
	case opts.StateDir == "":
		cfg.Admin.Token = newDemoToken()
	default:
		file := filepath.Join(opts.StateDir, demoTokenFile)
		tok, err := storedDemoToken(file)
		if err != nil {
			cfg.Admin.Token = newDemoToken()
			cfg.Warnings = append(cfg.Warnings, config.FieldError{Path: "admin.token",
				Msg: "using a new demo token for this start only: " + err.Error()})
			return
		}
		cfg.Admin.Token, d.TokenFile = tok, file
	}
}

// newDemoToken returns a random admin token.
func newDemoToken() string { return "sy-admin-" + rand.Text() }

// storedDemoToken returns the token kept in file, first storing a new one
// there (the file mode 0600, a new directory 0700) when there is none. A
// stored file others may read is made 0600.
func storedDemoToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return storeDemoToken(file)
	}
	if err != nil {
		return "", fmt.Errorf("reading the demo's admin token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsFunc(tok, unicode.IsSpace) {
		return "", fmt.Errorf("%s must hold one token without whitespace; delete it to get a new one", file)
	}
	if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(file, 0o600); err != nil {
			return "", fmt.Errorf("making the demo's admin token private: %w", err)
		}
	}
	return tok, nil
}

// storeDemoToken creates file with a new token. If another demo created it
// first, its token is the one.
func storeDemoToken(file string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("creating the demo's state directory: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return storedDemoToken(file)
	}
	if err != nil {
		return "", fmt.Errorf("storing the demo's admin token: %w", err)
	}
	tok := newDemoToken()
	_, err = f.WriteString(tok + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(file)
		return "", fmt.Errorf("storing the demo's admin token: %w", err)
	}
	return tok, nil
}
