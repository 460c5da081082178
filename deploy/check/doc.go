// Package check checks the deployment files in deploy/ (docs/deploy.md).
//
// The Helm chart in deploy/helm/switchyard is rendered with Helm's own engine
// (what `helm template` does), and what it renders is validated: every
// object is strictly decoded into its typed Kubernetes API object (an unknown
// field, a wrong type or a bad quantity fails) and checked against the
// Kubernetes API schema that server-side apply uses (client-go's
// applyconfigurations); the ServiceMonitor, a CRD, against the fields of the
// Prometheus Operator's type that the chart uses; and the objects against
// each other (selectors, ports, volume, Secret and claim references). The
// tests render the chart's defaults, examples/production.yaml and the files
// in testdata/, where a `bad-` file must be refused by values.schema.json;
// the rendered switchyard.yaml passes `switchyard check-config`.
//
// compose.yaml is decoded strictly and checked for its three gateways and
// their dependencies, and its gateways' config passes check-config; the
// Containerfile's final stage is checked for what docs/deploy.md promises.
//
// It is a module of its own so that Helm and the Kubernetes libraries stay
// out of the gateway's module; .ci/run runs its tests.
package check
