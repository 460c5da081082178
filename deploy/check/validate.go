package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
)

// Object is a rendered manifest that passed validation.
type Object struct {
	Manifest
	GVK  schema.GroupVersionKind
	Name string
	// Typed is the typed API object (*appsv1.Deployment, …), or a
	// *ServiceMonitor.
	Typed any
}

// Validator validates rendered manifests against the Kubernetes API types
// and schemas built into client-go.
type Validator struct {
	codec  runtime.Decoder
	schema managedfields.TypeConverter
}

// NewValidator returns a Validator for the built-in API groups.
func NewValidator() *Validator {
	return &Validator{
		codec: kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
			kjson.SerializerOptions{Strict: true}),
		schema: applyconfigurations.NewTypeConverter(scheme.Scheme),
	}
}

// serviceMonitorGVK is the Prometheus Operator's ServiceMonitor, a CRD that
// client-go does not know: it is checked against the ServiceMonitor type
// below.
var serviceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// Validate checks every manifest and returns the objects, or every error
// found, each naming its template and object.
func (v *Validator) Validate(ms []Manifest, namespace string) ([]Object, error) {
	var (
		objs []Object
		errs []error
	)
	for _, m := range ms {
		o, err := v.validate(m, namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Template, err))
			continue
		}
		objs = append(objs, o)
	}
	return objs, errors.Join(errs...)
}

func (v *Validator) validate(m Manifest, namespace string) (Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(m.JSON); err != nil {
		return Object{}, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	o := Object{Manifest: m, GVK: u.GroupVersionKind(), Name: u.GetName()}
	id := fmt.Sprintf("%s %q", o.GVK.Kind, o.Name)
	if err := validateMeta(o.GVK, u, namespace); err != nil {
		return o, fmt.Errorf("%s: %w", id, err)
	}
	if o.GVK == serviceMonitorGVK {
		sm, err := decodeServiceMonitor(m.JSON)
		if err != nil {
			return o, fmt.Errorf("%s: %w", id, err)
		}
		o.Typed = sm
		return o, nil
	}
	typed, _, err := v.codec.Decode(m.JSON, nil, nil)
	if err != nil { // unknown kind, unknown or duplicate field, wrong type, bad quantity
		return o, fmt.Errorf("%s: decoding into the API type: %w", id, err)
	}
	if _, err := v.schema.ObjectToTyped(u); err != nil {
		return o, fmt.Errorf("%s: against the API schema: %w", id, err)
	}
	o.Typed = typed
	return o, nil
}

// validateMeta checks the name, namespace and labels the API server checks
// for every object.
func validateMeta(gvk schema.GroupVersionKind, u *unstructured.Unstructured, namespace string) error {
	var errs []string
	name := u.GetName()
	if gvk.Kind == "Service" {
		errs = append(errs, validation.IsDNS1035Label(name)...)
	} else {
		errs = append(errs, validation.IsDNS1123Subdomain(name)...)
	}
	if u.GetNamespace() != namespace {
		errs = append(errs, fmt.Sprintf("namespace %q, want the release's %q", u.GetNamespace(), namespace))
	}
	errs = append(errs, labelErrors(u.GetLabels())...)
	for k := range u.GetAnnotations() {
		errs = append(errs, validation.IsQualifiedName(k)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("metadata: %v", errs)
	}
	return nil
}

// labelErrors checks label keys and values as the API server does.
func labelErrors(labels map[string]string) []string {
	var errs []string
	for k, val := range labels {
		errs = append(errs, validation.IsQualifiedName(k)...)
		errs = append(errs, validation.IsValidLabelValue(val)...)
	}
	return errs
}

// ServiceMonitor holds the fields of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor that the chart renders; decoding
// refuses any other field, so a typo or a field the chart should not set
// fails.
type ServiceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Authorization *struct {
				Type        string `json:"type"`
				Credentials struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"credentials"`
			} `json:"authorization,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func decodeServiceMonitor(j []byte) (*ServiceMonitor, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var sm ServiceMonitor
	if err := dec.Decode(&sm); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(sm.Spec.Endpoints) == 0 {
		return nil, errors.New("spec.endpoints: at least one endpoint is required")
	}
	for i, e := range sm.Spec.Endpoints {
		if e.Port == "" {
			return nil, fmt.Errorf("spec.endpoints[%d].port: required", i)
		}
		if a := e.Authorization; a != nil && (a.Credentials.Name == "" || a.Credentials.Key == "") {
			return nil, fmt.Errorf("spec.endpoints[%d].authorization.credentials: name and key are required", i)
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector); err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	return &sm, nil
}
