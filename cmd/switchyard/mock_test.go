package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestMockBanner(t *testing.T) {
	var out bytes.Buffer
	printMockBanner(&out, "m1", "http://127.0.0.1:9001", "/tmp/sa.json")
	want := []string{
		`mock upstream "m1" listening on http://127.0.0.1:9001`,
		"  base_url per provider:",
		"    openai:            http://127.0.0.1:9001/v1",
		"    anthropic:         http://127.0.0.1:9001/v1",
		"    azure-openai:      http://127.0.0.1:9001",
		"    openai-compatible: http://127.0.0.1:9001/v1",
		"    gemini:            http://127.0.0.1:9001/v1beta",
		"    vertex:            http://127.0.0.1:9001/v1",
		"    bedrock:           http://127.0.0.1:9001",
		"  vertex.credentials_file: /tmp/sa.json",
		"  behavior: http://127.0.0.1:9001/_mock/behavior   stats: http://127.0.0.1:9001/_mock/stats",
	}
	if got := strings.TrimRight(out.String(), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("banner:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
