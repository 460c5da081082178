package check

import (
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// External names the objects a release may reference without rendering
// them: Secrets and claims that exist beforehand (secrets.existingSecrets,
// extraVolumes, persistence.existingClaim).
type External struct {
	Secrets, Claims []string
}

// CheckReferences checks the rendered objects against each other: the
// Deployment's selector selects its pods, and so do the Service's, the
// PodDisruptionBudget's and (through the Service) the ServiceMonitor's; the
// HorizontalPodAutoscaler scales the Deployment; named ports, volumes,
// ConfigMaps, Secrets, claims and the service account exist.
func CheckReferences(objs []Object, ext External) error {
	var (
		deploys []*appsv1.Deployment
		errs    []error
	)
	have := map[string][]string{} // kind → names rendered
	for _, o := range objs {
		have[o.GVK.Kind] = append(have[o.GVK.Kind], o.Name)
		if d, ok := o.Typed.(*appsv1.Deployment); ok {
			deploys = append(deploys, d)
		}
	}
	if len(deploys) != 1 {
		return fmt.Errorf("want one Deployment, rendered %d", len(deploys))
	}
	d := deploys[0]
	pod := labels.Set(d.Spec.Template.Labels)
	if err := selects("Deployment "+d.Name+" spec.selector", d.Spec.Selector, pod); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkPod(&d.Spec.Template.Spec, have, ext)...)
	ports := containerPorts(&d.Spec.Template.Spec)
	var svcs []*corev1.Service
	for _, o := range objs {
		switch t := o.Typed.(type) {
		case *corev1.Service:
			svcs = append(svcs, t)
			if !labels.SelectorFromSet(t.Spec.Selector).Matches(pod) || len(t.Spec.Selector) == 0 {
				errs = append(errs, fmt.Errorf("Service %s: its selector %v does not select the pods %v", t.Name, t.Spec.Selector, pod))
			}
			for _, p := range t.Spec.Ports {
				if p.TargetPort.StrVal != "" && !slices.Contains(ports, p.TargetPort.StrVal) {
					errs = append(errs, fmt.Errorf("Service %s: targetPort %q is not a container port", t.Name, p.TargetPort.StrVal))
				}
			}
		case *policyv1.PodDisruptionBudget:
			if err := selects("PodDisruptionBudget "+t.Name+" spec.selector", t.Spec.Selector, pod); err != nil {
				errs = append(errs, err)
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := t.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != d.Name {
				errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler %s: scales %s %s %s, not the Deployment %s", t.Name, ref.APIVersion, ref.Kind, ref.Name, d.Name))
			}
			if d.Spec.Replicas != nil {
				errs = append(errs, fmt.Errorf("Deployment %s: sets replicas while the HorizontalPodAutoscaler %s scales it", d.Name, t.Name))
			}
		}
	}
	for _, o := range objs {
		if sm, ok := o.Typed.(*ServiceMonitor); ok {
			errs = append(errs, checkServiceMonitor(sm, svcs)...)
		}
	}
	return errors.Join(errs...)
}

// selects reports whether sel, a required selector, selects pod.
func selects(what string, sel *metav1.LabelSelector, pod labels.Set) error {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return fmt.Errorf("%s: empty", what)
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !s.Matches(pod) {
		return fmt.Errorf("%s: %s does not select the pods %v", what, s, pod)
	}
	return nil
}

func containerPorts(spec *corev1.PodSpec) []string {
	var names []string
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			names = append(names, p.Name)
		}
	}
	return names
}

// checkPod checks what the pod spec references: volumes, named probe ports,
// ConfigMaps, Secrets, claims and its service account.
func checkPod(spec *corev1.PodSpec, have map[string][]string, ext External) []error {
	var errs []error
	secretOK := func(name string) bool {
		return slices.Contains(have["Secret"], name) || slices.Contains(ext.Secrets, name)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[v.Name] {
			errs = append(errs, fmt.Errorf("volume %q: declared twice", v.Name))
		}
		volumes[v.Name] = true
		switch {
		case v.ConfigMap != nil && !slices.Contains(have["ConfigMap"], v.ConfigMap.Name):
			errs = append(errs, fmt.Errorf("volume %q: ConfigMap %q is not rendered", v.Name, v.ConfigMap.Name))
		case v.Secret != nil && !secretOK(v.Secret.SecretName):
			errs = append(errs, fmt.Errorf("volume %q: Secret %q is neither rendered nor external", v.Name, v.Secret.SecretName))
		case v.PersistentVolumeClaim != nil && !slices.Contains(have["PersistentVolumeClaim"], v.PersistentVolumeClaim.ClaimName) &&
			!slices.Contains(ext.Claims, v.PersistentVolumeClaim.ClaimName):
			errs = append(errs, fmt.Errorf("volume %q: claim %q is neither rendered nor external", v.Name, v.PersistentVolumeClaim.ClaimName))
		}
	}
	ports := containerPorts(spec)
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				errs = append(errs, fmt.Errorf("container %s: mounts %q, which is not a volume", c.Name, m.Name))
			}
		}
		for what, p := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !slices.Contains(ports, p.HTTPGet.Port.StrVal) {
				errs = append(errs, fmt.Errorf("container %s: %s port %q is not a container port", c.Name, what, p.HTTPGet.Port.StrVal))
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && !secretOK(e.SecretRef.Name) {
				errs = append(errs, fmt.Errorf("container %s: envFrom Secret %q is neither rendered nor external", c.Name, e.SecretRef.Name))
			}
		}
	}
	if sa := spec.ServiceAccountName; sa != "" && sa != "default" && !slices.Contains(have["ServiceAccount"], sa) {
		errs = append(errs, fmt.Errorf("serviceAccountName %q is not rendered", sa))
	}
	return errs
}

// checkServiceMonitor checks that the ServiceMonitor selects a rendered
// Service and scrapes one of its named ports.
func checkServiceMonitor(sm *ServiceMonitor, svcs []*corev1.Service) []error {
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		return []error{fmt.Errorf("ServiceMonitor %s: %w", sm.Metadata.Name, err)}
	}
	for _, s := range svcs {
		if !sel.Matches(labels.Set(s.Labels)) {
			continue
		}
		var errs []error
		for _, e := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
				errs = append(errs, fmt.Errorf("ServiceMonitor %s: port %q is not a port of Service %s", sm.Metadata.Name, e.Port, s.Name))
			}
		}
		return errs
	}
	return []error{fmt.Errorf("ServiceMonitor %s: selects no rendered Service", sm.Metadata.Name)}
}
