package check

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Manifest is one rendered Kubernetes object.
type Manifest struct {
	// Template is the template file that rendered it (templates/service.yaml).
	Template string
	// JSON is the object converted from the rendered YAML.
	JSON []byte
}

// Release names the release a chart is rendered for, as `helm template NAME
// --namespace NS` would.
type Release struct {
	Name, Namespace string
}

// LoadChart loads the chart in dir.
func LoadChart(dir string) (*chartv2.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	return ch, nil
}

// ReadValues reads a values file; an empty path gives no values (the
// chart's defaults alone).
func ReadValues(file string) (map[string]any, error) {
	if file == "" {
		return map[string]any{}, nil
	}
	v, err := common.ReadValuesFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading values %s: %w", file, err)
	}
	return v.AsMap(), nil
}

// Render renders ch with vals over the chart's defaults, as `helm template`
// does: the values are validated against values.schema.json first, and a
// template that reads a missing value fails (strict mode). It returns the
// manifests in template order, and NOTES.txt's text.
func Render(ctx context.Context, ch *chartv2.Chart, vals map[string]any, rel Release) ([]Manifest, string, error) {
	opts := common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, opts, nil, false)
	if err != nil {
		return nil, "", err
	}
	out, err := engine.Engine{Strict: true}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, "", fmt.Errorf("rendering: %w", err)
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	var (
		manifests []Manifest
		notes     string
	)
	for _, name := range names {
		base := path.Base(name)
		switch {
		case base == "NOTES.txt":
			notes = out[name]
			continue
		case strings.HasPrefix(base, "_"):
			continue
		}
		docs, err := splitDocuments(out[name])
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		tmpl := strings.TrimPrefix(name, ch.Name()+"/")
		for _, doc := range docs {
			manifests = append(manifests, Manifest{Template: tmpl, JSON: doc})
		}
	}
	return manifests, notes, nil
}

// splitDocuments splits a rendered template into its YAML documents,
// converted to JSON; empty documents (a template whose condition is false)
// are dropped, and a duplicate key in a mapping is an error.
func splitDocuments(s string) ([][]byte, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
		if string(j) == "null" {
			continue
		}
		docs = append(docs, j)
	}
}

// stripComments drops the comment lines and the document separator of doc,
// to tell an empty document from one with content.
func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for line := range bytes.Lines(doc) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || string(t) == "---" {
			continue
		}
		b.Write(line)
	}
	return b.Bytes()
}
