package check

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
)

const chartDir = "../helm/switchyard"

var rel = Release{Name: "switchyard", Namespace: "switchyard"}

func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	ch, err := LoadChart(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestChartRendersValid renders the chart with its defaults, the production
// example and the feature files of testdata/, and validates every object.
func TestChartRendersValid(t *testing.T) {
	ch := loadChart(t)
	v := NewValidator()
	tests := []struct {
		name, values string
		kinds        []string // what the release holds, sorted
		external     External
		// checkConfig runs `switchyard check-config` on the rendered
		// switchyard.yaml.
		checkConfig bool
	}{
		{
			name:        "defaults",
			kinds:       []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"},
			checkConfig: true,
		},
		{
			name:        "production example",
			values:      chartDir + "/examples/production.yaml",
			kinds:       []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount", "ServiceMonitor"},
			external:    External{Secrets: []string{"switchyard-env", "redis-ca"}},
			checkConfig: true,
		},
		{
			name:        "autoscaling, chart-made Secret, signal reload",
			values:      "testdata/features.yaml",
			kinds:       []string{"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Secret", "Service", "ServiceMonitor"},
			external:    External{Secrets: []string{"upstream-ca"}},
			checkConfig: true,
		},
		{
			name:        "persistence",
			values:      "testdata/persistence.yaml",
			kinds:       []string{"ConfigMap", "Deployment", "PersistentVolumeClaim", "Service", "ServiceAccount"},
			checkConfig: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := ReadValues(tt.values)
			if err != nil {
				t.Fatal(err)
			}
			ms, notes, err := Render(context.Background(), ch, vals, rel)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(notes, "port-forward svc/switchyard") {
				t.Errorf("NOTES.txt: no port-forward line:\n%s", notes)
			}
			objs, err := v.Validate(ms, rel.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GVK.Kind)
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("rendered %v, want %v", kinds, tt.kinds)
			}
			if err := CheckReferences(objs, tt.external); err != nil {
				t.Error(err)
			}
			merged, err := util.CoalesceValues(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			cfg := checkPodContract(t, objs, merged["configReload"] == "rollout")
			if tt.checkConfig {
				checkConfig(t, cfg)
			}
			lintChart(t, vals)
		})
	}
}

// checkPodContract checks what docs/deploy.md promises of the pod: non-root
// with a read-only root file system, /readyz and /healthz probes, the
// config's listen on the container port, a termination grace that covers
// the preStop sleep, the drain (--grace) and closing, and the config
// checksum annotation when configReload is rollout. It returns the
// rendered switchyard.yaml.
func checkPodContract(t *testing.T, objs []Object, rollout bool) string {
	t.Helper()
	var (
		d   *appsv1.Deployment
		cfg string
	)
	for _, o := range objs {
		switch x := o.Typed.(type) {
		case *appsv1.Deployment:
			d = x
		case *corev1.ConfigMap:
			cfg = x.Data["switchyard.yaml"]
		}
	}
	if d == nil || cfg == "" {
		t.Fatal("no Deployment or no switchyard.yaml in a ConfigMap")
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod: runAsNonRoot is not set")
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container: want readOnlyRootFilesystem and no privilege escalation")
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Error("readiness probe: want GET /readyz")
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Error("liveness probe: want GET /healthz")
	}
	var file struct {
		Listen string `json:"listen"`
	}
	if err := yaml.Unmarshal([]byte(cfg), &file); err != nil {
		t.Fatalf("switchyard.yaml: %v", err)
	}
	port := fmt.Sprintf(":%d", c.Ports[0].ContainerPort)
	var grace, sleep int64
	for i := 0; i+1 < len(c.Args); i++ {
		switch c.Args[i] {
		case "--listen":
			if c.Args[i+1] != port {
				t.Errorf("--listen %s, want the container port %s", c.Args[i+1], port)
			}
		case "--grace":
			if _, err := fmt.Sscanf(c.Args[i+1], "%ds", &grace); err != nil {
				t.Errorf("--grace %q: %v", c.Args[i+1], err)
			}
		}
	}
	if file.Listen != port {
		t.Errorf("switchyard.yaml listen %q, want the container port %s", file.Listen, port)
	}
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		sleep = l.PreStop.Sleep.Seconds
	}
	if grace == 0 {
		t.Error("no --grace argument")
	}
	if tg := pod.TerminationGracePeriodSeconds; tg == nil || *tg != sleep+grace+15 {
		t.Errorf("terminationGracePeriodSeconds %s, want preStop sleep %d + grace %d + 15", ptrString(tg), sleep, grace)
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(cfg, "\n")))
	got, ok := d.Spec.Template.Annotations["checksum/config"]
	switch {
	case rollout && got != hex.EncodeToString(sum[:]):
		t.Errorf("checksum/config %q, want the config's sha256 %x", got, sum)
	case !rollout && ok:
		t.Error("checksum/config set with configReload: signal")
	}
	return cfg
}

func ptrString(p *int64) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// TestBadValuesRefused renders each testdata/bad-*.yaml, which
// values.schema.json must refuse with the error its `# want-error:` line
// names.
func TestBadValuesRefused(t *testing.T) {
	ch := loadChart(t)
	files, err := filepath.Glob("testdata/bad-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/bad-*.yaml (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^# want-error: (.+)$`).FindSubmatch(data)
			if m == nil {
				t.Fatal("no `# want-error:` line")
			}
			vals, err := ReadValues(f)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = Render(context.Background(), ch, vals, rel)
			if err == nil {
				t.Fatal("rendered; want the schema to refuse the values")
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") ||
				!strings.Contains(err.Error(), string(m[1])) {
				t.Errorf("error %q\nwant a schema error containing %q", err, m[1])
			}
		})
	}
}

// TestValidatorRefuses checks that the validator itself catches what it
// must: an unknown field, a wrong type, a bad quantity, a bad name, an
// unknown ServiceMonitor field and a dangling reference.
func TestValidatorRefuses(t *testing.T) {
	v := NewValidator()
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: switchyard}\nspec: {prots: []}", `unknown field "spec.prots"`},
		{"wrong type", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: switchyard}\nspec: {ports: [{port: \"80\"}]}", "port"},
		{"bad quantity", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: p, namespace: switchyard}\nspec: {resources: {requests: {storage: 1 GB}}}", "quantit"},
		{"bad name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: switchyard}", "metadata"},
		{"wrong namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}", "release's"},
		{"unknown kind", "apiVersion: v1\nkind: Deploymnet\nmetadata: {name: d, namespace: switchyard}", "Deploymnet"},
		{"ServiceMonitor field", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m, namespace: switchyard}\nspec: {selector: {}, endpoints: [{port: http, bearerTokenFile: /x}]}", "bearerTokenFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := splitDocuments(tt.yaml)
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Validate([]Manifest{{Template: "t.yaml", JSON: docs[0]}}, "switchyard")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	t.Run("dangling Secret", func(t *testing.T) {
		ch := loadChart(t)
		ms, _, err := Render(context.Background(), ch, map[string]any{"secrets": map[string]any{"existingSecrets": []any{"env"}}}, rel)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := v.Validate(ms, rel.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckReferences(objs, External{}); err == nil || !strings.Contains(err.Error(), `Secret "env"`) {
			t.Errorf("error %v, want the unknown Secret named", err)
		}
		if err := CheckReferences(objs, External{Secrets: []string{"env"}}); err != nil {
			t.Errorf("with the Secret external: %v", err)
		}
	})
}

// lintChart runs Helm's linter with vals; an error or a warning fails.
func lintChart(t *testing.T, vals map[string]any) {
	t.Helper()
	l := lint.RunAll(chartDir, vals, rel.Namespace)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// switchyardBinary builds the gateway's binary once per test run, from the
// repository's main module.
func switchyardBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchyard-deploy-check-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "switchyard")
		cmd := execCommand("go", "build", "-o", binPath, "./cmd/switchyard")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building switchyard: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// envRef matches a ${NAME} or ${NAME:-fallback} reference (docs/config.md).
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// checkConfig runs `switchyard check-config` on a rendered config, with
// every variable it references set as its Secret would set it.
func checkConfig(t *testing.T, cfg string) {
	t.Helper()
	env := map[string]string{}
	for _, m := range envRef.FindAllStringSubmatch(cfg, -1) {
		env[m[1]] = "placeholder-" + strings.ToLower(m[1])
		if strings.HasSuffix(m[1], "_DSN") {
			env[m[1]] = "postgres://switchyard@postgres:5432/switchyard?sslmode=disable"
		}
	}
	runCheckConfig(t, cfg, env)
}

// runCheckConfig runs `switchyard check-config` on cfg with env added to
// the environment; an error fails the test.
func runCheckConfig(t *testing.T, cfg string, env map[string]string) {
	t.Helper()
	bin := switchyardBinary(t)
	file := filepath.Join(t.TempDir(), "switchyard.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := execCommand(bin, "check-config", file)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("switchyard check-config: %v\n%s\n--- config:\n%s", err, out, cfg)
	}
}

// execCommand is exec.Command.
var execCommand = exec.Command
