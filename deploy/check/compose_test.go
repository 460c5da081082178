package check

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeFile holds the parts of the Compose specification that
// deploy/compose.yaml uses; decoding refuses any other key.
type composeFile struct {
	XGateway map[string]any            `json:"x-gateway"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]struct{}       `json:"volumes"`
}

type composeService struct {
	Image           string            `json:"image"`
	Command         []string          `json:"command"`
	Environment     map[string]string `json:"environment"`
	Volumes         []string          `json:"volumes"`
	Ports           []string          `json:"ports"`
	ReadOnly        bool              `json:"read_only"`
	Tmpfs           []string          `json:"tmpfs"`
	StopGracePeriod string            `json:"stop_grace_period"`
	Restart         string            `json:"restart"`
	DependsOn       map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Healthcheck *struct {
		Test     []string `json:"test"`
		Interval string   `json:"interval"`
		Timeout  string   `json:"timeout"`
		Retries  int      `json:"retries"`
	} `json:"healthcheck"`
}

// TestCompose checks deploy/compose.yaml: three gateways on the image with
// the mounted config, each depending on services that exist (Redis,
// PostgreSQL, the mocks), distinct host ports, and a config that passes
// check-config with the environment the file gives the gateways.
func TestCompose(t *testing.T) {
	data, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var gateways []string
	ports := map[string]string{}
	for name, s := range f.Services {
		if strings.HasPrefix(name, "gateway-") {
			gateways = append(gateways, name)
		}
		for dep, d := range s.DependsOn {
			dst, ok := f.Services[dep]
			if !ok {
				t.Errorf("%s: depends on %s, which is not a service", name, dep)
			}
			if d.Condition == "service_healthy" && dst.Healthcheck == nil {
				t.Errorf("%s: waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for _, p := range s.Ports {
			host := p[:strings.LastIndex(p, ":")]
			if other, dup := ports[host]; dup {
				t.Errorf("%s and %s publish the same host port %s", name, other, host)
			}
			ports[host] = name
		}
		for _, v := range s.Volumes {
			src := strings.Split(v, ":")[0]
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(filepath.Join("..", src)); err != nil {
					t.Errorf("%s: volume source %s: %v", name, src, err)
				}
			} else if _, ok := f.Volumes[src]; !ok {
				t.Errorf("%s: volume %s is not declared", name, src)
			}
		}
	}
	slices.Sort(gateways)
	if !slices.Equal(gateways, []string{"gateway-1", "gateway-2", "gateway-3"}) {
		t.Fatalf("gateways %v, want three", gateways)
	}
	for _, need := range []string{"redis", "postgres", "mock-a", "mock-b"} {
		if _, ok := f.Services[need]; !ok {
			t.Errorf("no %s service", need)
		}
	}
	g := f.Services["gateway-1"]
	if !slices.Contains(g.Volumes, "./compose/switchyard.yaml:/etc/switchyard/switchyard.yaml:ro") ||
		!slices.Equal(g.Command, []string{"serve", "--config", "/etc/switchyard/switchyard.yaml"}) {
		t.Errorf("gateway-1: want serve --config on the mounted ./compose/switchyard.yaml; got %v %v", g.Command, g.Volumes)
	}
	cfg, err := os.ReadFile("../compose/switchyard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The gateways' environment, with Compose's ${VAR:-default} resolved to
	// its default.
	env := map[string]string{}
	interp := regexp.MustCompile(`^\$\{[A-Z_]+:-(.*)\}$`)
	for k, v := range g.Environment {
		if m := interp.FindStringSubmatch(v); m != nil {
			v = m[1]
		}
		env[k] = v
	}
	for _, m := range envRef.FindAllStringSubmatch(string(cfg), -1) {
		if _, ok := env[m[1]]; !ok {
			t.Errorf("compose/switchyard.yaml references %s, which the gateways' environment does not set", m[1])
		}
	}
	runCheckConfig(t, string(cfg), env)
}

// TestContainerfile checks the Containerfile's final stages against what
// the chart and compose.yaml rely on: FROM scratch, a non-root user, the
// binary as entry point, serve on the config path they mount, the data
// directory as working directory; and that deploy/rootfs.sh lays out the
// user, the CA bundle and a sticky /tmp.
func TestContainerfile(t *testing.T) {
	data, err := os.ReadFile("../../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{
		"FROM scratch AS runtime",
		"USER 65532:65532",
		`ENTRYPOINT ["/switchyard"]`,
		`CMD ["serve", "--config", "/etc/switchyard/switchyard.yaml"]`,
		"FROM runtime AS prebuilt",
		"FROM runtime AS image",
		"WORKDIR /var/lib/switchyard",
		"CGO_ENABLED=0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Containerfile: no %q", want)
		}
	}
	if i := strings.LastIndex(s, "\nFROM "); !strings.HasPrefix(s[i+1:], "FROM runtime AS image") {
		t.Error("Containerfile: the last stage (the default target) must be `image`")
	}

	root := filepath.Join(t.TempDir(), "rootfs")
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("test bundle\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := execCommand("sh", "../rootfs.sh")
	cmd.Env = append(os.Environ(), "ROOTFS="+root, "CA_BUNDLE="+ca)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rootfs.sh: %v\n%s", err, out)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "switchyard:x:65532:65532:") {
		t.Errorf("etc/passwd: %q, %v; want the user 65532", passwd, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil || string(b) != "test bundle\n" {
		t.Errorf("CA bundle: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("tmp: %v, %v; want a sticky 1777 directory", fi.Mode(), err)
	}
	if fi, err := os.Stat(root + "-data/switchyard"); err != nil || !fi.IsDir() {
		t.Errorf("data directory: %v", err)
	}
}
