// Pins the CustomResourceDefinitions of the custom resources karmada-quota's chart can render, so that the chart's
// tests (test/chart) check them offline against their real schemas: ServiceMonitor and PrometheusRule from the
// Prometheus Operator (example/prometheus-operator-crd), Certificate and Issuer from cert-manager (deploy/crds, plain
// YAML whose specs equal the templated CRDs of cert-manager's own chart). No code is built from these modules: the
// Makefile downloads their zips and reads the CRD files in them; `go mod tidy` would drop both requirements, since
// nothing imports them: edit the versions by hand and run `go mod download` to update go.sum.
module github.com/karmada-quota/karmada-quota/hack/tools/crds

go 1.25.0

require (
	github.com/cert-manager/cert-manager v1.21.2
	github.com/prometheus-operator/prometheus-operator v0.89.0
)
