# karmada-quota. `make help` lists the targets.
#
# Heavy test binaries (etcd, kube-apiserver) are built from Go modules pinned under hack/tools and cached under
# $(CACHE), one folder per version, so a warm run only checks that they exist.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

CACHE ?= $(CURDIR)/.cache
BIN   ?= $(CURDIR)/bin

# Versions are read from the tool modules, so go.mod stays the only place a version is written.
modversion = $(shell awk '$$1=="require" && $$2=="$(2)" {print $$3} $$1=="$(2)" {print $$2}' hack/tools/$(1)/go.mod | head -1)
KUBE_VERSION             := $(call modversion,kubernetes,k8s.io/kubernetes)
ETCD_VERSION             := $(call modversion,etcd,go.etcd.io/etcd/server/v3)
CONTROLLER_TOOLS_VERSION := $(call modversion,codegen,sigs.k8s.io/controller-tools)
KARMADA_VERSION          := $(call modversion,karmada,github.com/karmada-io/karmada)
KWOK_VERSION             := $(call modversion,kwok,sigs.k8s.io/kwok)
PROMETHEUS_VERSION       := $(call modversion,prometheus,github.com/prometheus/prometheus)
PROMETHEUS_OPERATOR_VERSION := $(call modversion,crds,github.com/prometheus-operator/prometheus-operator)
CERT_MANAGER_VERSION        := $(call modversion,crds,github.com/cert-manager/cert-manager)

KUBE_BIN       := $(CACHE)/kubernetes-$(KUBE_VERSION)
ETCD_BIN       := $(CACHE)/etcd-$(ETCD_VERSION)
CODEGEN_BIN    := $(CACHE)/controller-tools-$(CONTROLLER_TOOLS_VERSION)
# Karmada's components are built as Karmada's hack/build.sh builds them: with k8s.io/api's protobuf messages, without
# which karmada-scheduler panics marshalling a call to a scheduler estimator (pkg/estimator says why).
KARMADA_BUILD_TAGS := kubernetes_protomessage_one_more_release
KARMADA_BIN    := $(CACHE)/karmada-$(KARMADA_VERSION)-protomessage
KWOK_BIN       := $(CACHE)/kwok-$(KWOK_VERSION)
PROMETHEUS_BIN := $(CACHE)/prometheus-$(PROMETHEUS_VERSION)
PROMTOOL       := $(PROMETHEUS_BIN)/promtool
CONTROLLER_GEN := $(CODEGEN_BIN)/controller-gen
# The CRDs of the custom resources the chart renders (ServiceMonitor, PrometheusRule, Certificate, Issuer), for
# test/chart to check them offline.
CHART_CRDS     := $(CACHE)/chart-crds-prometheus-operator-$(PROMETHEUS_OPERATOR_VERSION)-cert-manager-$(CERT_MANAGER_VERSION)-karmada-$(KARMADA_VERSION).yaml
# envtest wants etcd and kube-apiserver side by side in one folder.
ENVTEST_ASSETS := $(CACHE)/envtest-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)
# Karmada serves Clusters from its aggregated apiserver, not from a CRD: the test apiserver gets the pinned Karmada's
# Cluster type as a CRD instead, written by controller-gen from its Go types (internal/testenv finds it here).
KARMADA_CLUSTER_CRD := $(CACHE)/karmada-$(KARMADA_VERSION)-cluster-crd/cluster.karmada.io_clusters.yaml
# What every test against a real apiserver needs.
ENVTEST := $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(KARMADA_CLUSTER_CRD)

# Without these the binaries report v0.0.0 and clients warn about version skew.
KUBE_MINOR := $(word 2,$(subst ., ,$(KUBE_VERSION)))
KUBE_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version, \
	-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=1 -X $(pkg).gitMinor=$(KUBE_MINOR) \
	-X $(pkg).gitTreeState=clean)

KARMADA_LDFLAGS := -X github.com/karmada-io/karmada/pkg/version.gitVersion=$(KARMADA_VERSION)

# Everything a local Karmada with member clusters runs (see hack/tools/*/go.mod for why each is its own module).
LOCAL_KARMADA_TOOLS := $(ETCD_BIN)/etcd \
	$(addprefix $(KUBE_BIN)/,kube-apiserver kube-controller-manager kube-scheduler) \
	$(addprefix $(KARMADA_BIN)/,karmada-aggregated-apiserver karmada-controller-manager karmada-scheduler karmada-webhook karmadactl) \
	$(KWOK_BIN)/kwok

# KWOK's node and pod lifecycles, from its module's kustomize/stage: without stages KWOK refuses to start.
KWOK_STAGES := $(KWOK_BIN)/stages.yaml
KWOK_STAGE_FILES := node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml

# The local Karmada of `make up`: its folder, and where its binaries are looked up (first match wins).
LOCAL_KARMADA_DIR ?= $(CURDIR)/.local/karmada
# CONTAINER_RUNTIME=podman runs the host cluster's pods (karmada-quota's webhook and controller) as containers under
# rootful podman instead of as local processes: `make up CONTAINER_RUNTIME=podman`, `make test-e2e CONTAINER_RUNTIME=podman`.
CONTAINER_RUNTIME ?=
LOCAL_KARMADA_TOOL_PATH := $(BIN):$(ETCD_BIN):$(KUBE_BIN):$(KARMADA_BIN):$(KWOK_BIN)

GO_TEST_FLAGS ?=

# What the binaries and images say they are (`--version`, image tags and labels): the chart's appVersion, the commit,
# and the commit's time, which dates every image and file in it so two builds of one commit are identical.
VERSION           ?= v$(shell awk '$$1=="appVersion:" {gsub(/"/, "", $$2); print $$2}' deploy/charts/karmada-quota/Chart.yaml)
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_REGISTRY    ?= ghcr.io/karmada-quota
# Static (no cgo: the images have no libc), no local paths, stamped with the version. -s -w drop the symbol table
# and DWARF: 30% of the binary, half of the compressed image. Stack traces and pprof profiles stay symbolized (they
# read the runtime's pclntab, which stays); only a debugger needs DWARF: rebuild the same commit without -s -w.
VERSION_PKG    := github.com/karmada-quota/karmada-quota/pkg/version
GO_BUILD_FLAGS  = -trimpath -ldflags '-s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).revision=$(REVISION)'
# The operator (operator/cmd/karmada-quota-operator) is built and imaged as soon as its folder exists.
MAIN_PKGS := ./cmd/... $(if $(wildcard operator/cmd),./operator/cmd/...)
IMAGES    := quota-webhook quota-controller $(if $(wildcard operator/cmd/karmada-quota-operator),karmada-quota-operator)

# What controller-gen generates lives in the chart, the one source of every object karmada-quota installs.
CHART_FILES := deploy/charts/karmada-quota/files
OPERATOR_CHART_FILES := operator/charts/karmada-quota-operator/files

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_.-]+:.*?##/ { printf "  %-22s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the static binaries into ./bin.
	CGO_ENABLED=0 go build $(GO_BUILD_FLAGS) -o $(BIN)/ $(MAIN_PKGS)

.PHONY: images
images: build ## Build the image archives bin/images/<name>.tar (no Docker; `docker load`, `crane push` read them).
	go run ./hack/images --bin-dir $(BIN) --out-dir $(BIN)/images --registry $(IMAGE_REGISTRY) \
		--version $(VERSION) --revision $(REVISION) --source-date-epoch $(SOURCE_DATE_EPOCH) $(IMAGES)

.PHONY: up
up: images local-kubelet local-karmada-tools $(if $(CONTAINER_RUNTIME),container-runtime) ## Start a local Karmada with 2 member clusters and karmada-quota installed by its chart (no Docker).
	ln -sf $(KARMADA_BIN)/karmadactl $(BIN)/karmadactl
	go run ./hack/localkarmada/cmd/local-karmada up --dir $(LOCAL_KARMADA_DIR) --tool-path $(LOCAL_KARMADA_TOOL_PATH) --kwok-stages $(KWOK_STAGES) \
		$(if $(CONTAINER_RUNTIME),--container-runtime $(CONTAINER_RUNTIME))

.PHONY: down
down: ## Stop everything `make up` started and remove its data (logs stay in .local/karmada/logs).
	go run ./hack/localkarmada/cmd/local-karmada down --dir $(LOCAL_KARMADA_DIR)

.PHONY: demo
demo: up ## Walk through the quota user stories on the local Karmada, narrated.
	go run ./hack/localkarmada/cmd/local-karmada demo --dir $(LOCAL_KARMADA_DIR) --karmadactl $(KARMADA_BIN)/karmadactl --plugin $(BIN)/kubectl-karmada-quota

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy functions, CRD manifests, RBAC and the chart's values schema.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/... paths=./operator/api/...
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./pkg/apis/... output:crd:artifacts:config=$(CHART_FILES)/crds
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./operator/api/... output:crd:artifacts:config=$(OPERATOR_CHART_FILES)/crds
	$(CONTROLLER_GEN) rbac:roleName=karmada-quota-webhook paths=./pkg/admission/... paths=./pkg/interpreter/... output:rbac:artifacts:config=$(CHART_FILES)/rbac/webhook
	$(CONTROLLER_GEN) rbac:roleName=karmada-quota-controller paths=./pkg/controller/... paths=./pkg/estimator/discovery/... paths=./pkg/members/... paths=./pkg/interpreter/... paths=./pkg/certs/... paths=./cmd/quota-controller/... \
		output:rbac:artifacts:config=$(CHART_FILES)/rbac/controller
	$(CONTROLLER_GEN) rbac:roleName=karmada-quota-operator paths=./operator/pkg/controller/... \
		output:rbac:artifacts:config=$(OPERATOR_CHART_FILES)/rbac
	go run ./hack/chartschema/cmd --chart deploy/charts/karmada-quota

.PHONY: verify
verify: generate ## Fail when generated files are stale or go.mod is untidy.
	go mod tidy
	@paths="pkg/apis operator/api $(CHART_FILES)/crds $(CHART_FILES)/rbac $(OPERATOR_CHART_FILES) deploy/charts/karmada-quota/values.schema.json go.mod go.sum"; \
	untracked=$$(git ls-files --others --exclude-standard -- $$paths); \
	if ! git diff --quiet -- $$paths || [ -n "$$untracked" ]; then \
		echo "generated files or go.mod are stale: run 'make generate' and 'go mod tidy', and commit:"; \
		git diff --stat -- $$paths; echo "$$untracked"; exit 1; fi

.PHONY: lint
lint: ## Run go vet and check formatting.
	go vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

##@ Test

.PHONY: test
test: verify lint test-unit test-chart test-monitoring test-images test-containers test-integration test-e2e test-bench ## Run every test: verify, lint, unit, chart, monitoring, images, containers, integration, e2e, the benchmark harness at a tiny size.

.PHONY: test-unit
# Every package outside test/, the local kubelet (hack/localkarmada/kubelet) included. pkg/metrics parses every
# dashboard query with the pinned promtool.
test-unit: $(PROMTOOL) ## Unit tests (pure logic, fuzz seed corpora included).
	PROMTOOL=$(PROMTOOL) go test $(GO_TEST_FLAGS) -race $$(go list ./... | grep -v /test/)
	# The estimator against the client karmada-scheduler runs, which marshals only with Karmada's build tags.
	go test $(GO_TEST_FLAGS) -race -tags $(KARMADA_BUILD_TAGS) ./pkg/estimator/

.PHONY: test-chart
# Offline: `helm lint --strict` (Helm's SDK) for the default values and each ci/*-values.yaml, then every object they
# render, host, hooks and the install ConfigMap's karmada-apiserver objects, checked as an API server would on create,
# then properties of the rendering no schema sees (test/chart).
test-chart: $(CHART_CRDS) ## Lint the chart strictly, check every rendered object against the Kubernetes schemas offline.
	CHART_TEST_CRDS=$(CHART_CRDS) go test $(GO_TEST_FLAGS) -count=1 ./test/chart/...

.PHONY: test-monitoring
# promtool checks the alerts and runs their unit tests. The Go tests that parse every dashboard query with it and
# check that alerts and dashboard name only metrics the binaries export are pkg/metrics's, in test-unit.
test-monitoring: $(PROMTOOL) ## Check the chart's alerts with promtool: check and unit tests.
	$(PROMTOOL) check rules $(CHART_FILES)/monitoring/alerts.yaml
	$(PROMTOOL) test rules test/monitoring/alerts_test.yaml

.PHONY: test-images
test-images: images ## Open every image archive: tag, config, labels, files, a static binary that answers --version.
	IMAGES_DIR=$(BIN)/images IMAGE_NAMES="$(IMAGES)" IMAGE_REGISTRY=$(IMAGE_REGISTRY) VERSION=$(VERSION) \
		REVISION=$(REVISION) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) go test $(GO_TEST_FLAGS) -count=1 ./test/images/...

.PHONY: test-containers
# Rootful podman with runc, storage in a temporary folder of the test's own (test/containers).
test-containers: images envtest-assets container-runtime ## Run every image as a container under the charts' security context, mounts and args, against a real apiserver.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) IMAGES_DIR=$(BIN)/images go test $(GO_TEST_FLAGS) -count=1 ./test/containers/...

# A real OCI runtime from Debian's packages when the machine has none: podman and runc (podman's default, crun,
# refuses the hybrid cgroup layout of machines like CI's).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
.PHONY: container-runtime
container-runtime:
	@if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then \
		echo "installing podman and runc from Debian's packages"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc; \
	fi

.PHONY: test-integration
# One package at a time (-p 1): each starts its own etcd and kube-apiserver, and on a 2-core machine three control
# planes at once would turn the timing of concurrency tests into a test of the machine.
test-integration: envtest-assets ## Integration tests against a real etcd + kube-apiserver.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test $(GO_TEST_FLAGS) -race -count=1 -p 1 -timeout 20m ./test/integration/...

.PHONY: test-e2e
# The suite starts its own local Karmada in a temporary folder and stops it; LOCAL_KARMADA_DIR=<folder of a
# running `make up`> runs it against that one instead.
test-e2e: images local-kubelet local-karmada-tools $(if $(CONTAINER_RUNTIME),container-runtime) ## End-to-end tests on a local Karmada with member clusters.
	LOCAL_KARMADA_TOOL_PATH=$(LOCAL_KARMADA_TOOL_PATH) KWOK_STAGES=$(KWOK_STAGES) LOCAL_KARMADA_CONTAINER_RUNTIME=$(CONTAINER_RUNTIME) \
		go test $(GO_TEST_FLAGS) -count=1 -timeout 30m ./test/e2e/... -args -ginkgo.v -ginkgo.no-color

.PHONY: bench-status-write
bench-status-write: $(ENVTEST) ## What a quota status write costs kube-apiserver, against a placement, by status shape.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test -run '^$$' -bench StatusWrite -benchtime $(or $(BENCHTIME),3000x) -count $(or $(COUNT),3) ./test/bench/internal/controlplane/

.PHONY: bench-gates
bench-gates: $(ENVTEST) ## What the Work and resource template gates add to a write through kube-apiserver, against no gate; what template reads add to a binding write.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test -run '^$$' -bench Gates -benchtime $(or $(BENCHTIME),500x) -count $(or $(COUNT),3) ./test/integration/webhook/

.PHONY: test-faults
# test-e2e runs the fault specs at a size CI affords (FAULT_OPS=80); this runs only them, at issue 13's size, and
# writes their figures to docs/faults.md.
test-faults: images local-kubelet local-karmada-tools ## The fault suite alone at FAULT_OPS user operations per fault (default 1000), figures into docs/faults.md.
	FAULT_OPS=$(or $(FAULT_OPS),1000) FAULT_REPORT=$(CURDIR)/docs/faults.md \
		FAULT_COMMAND='make test-faults$(if $(FAULT_OPS), FAULT_OPS=$(FAULT_OPS))' \
		LOCAL_KARMADA_TOOL_PATH=$(LOCAL_KARMADA_TOOL_PATH) KWOK_STAGES=$(KWOK_STAGES) \
		go test $(GO_TEST_FLAGS) -v -count=1 -timeout 120m ./test/e2e/... -args -ginkgo.v -ginkgo.no-color -ginkgo.label-filter=faults

.PHONY: bench
# Then the side-by-side admission benchmark (test/bench): no quota webhook, an allow-all webhook (the ceiling),
# karmada-quota, and Karmada's FederatedResourceQuota enforcement as it ships and at raised client QPS, on one
# fresh kube-apiserver; then karmada-quota at 1,000 to 100,000 bindings (--scale). Both write docs/performance.md.
# BENCH_FLAGS passes harness flags to the comparison, SCALE_FLAGS to the scale run (`go run ./test/bench --help`).
bench: $(ENVTEST) $(KARMADA_BIN)/karmada-webhook $(KARMADA_BIN)/karmada-controller-manager ## Go benchmarks, then karmada-quota vs the ceiling of any webhook vs Karmada FRQ, then at scale (docs/performance.md).
	go test -run '^$$' -bench . -benchmem $$(go list ./... | grep -v /test/)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KARMADA_BIN=$(KARMADA_BIN) go run ./test/bench --out docs/performance.md \
		--command 'make bench$(if $(BENCH_FLAGS), BENCH_FLAGS="$(BENCH_FLAGS)")' $(BENCH_FLAGS)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go run ./test/bench --scale --out docs/performance.md \
		--command 'make bench$(if $(SCALE_FLAGS), SCALE_FLAGS="$(SCALE_FLAGS)")' $(SCALE_FLAGS)

.PHONY: test-burst
# CI runs test/integration/burst small (with test-integration); this is issue 13's size. Its figures are in
# docs/performance.md ("How big a quota's status gets").
test-burst: envtest-assets ## A burst of 10,000 placements into one namespace with the controller away, at the shipped bound (minutes).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) BURST_PLACEMENTS=10000 BURST_MAX_RESERVATIONS=shipped BURST_WRITERS=64 \
		go test $(GO_TEST_FLAGS) -count=1 -timeout 60m -v ./test/integration/burst/...

.PHONY: test-bench
test-bench: $(ENVTEST) $(KARMADA_BIN)/karmada-webhook $(KARMADA_BIN)/karmada-controller-manager ## The side-by-side benchmark at a tiny size, asserting correctness only.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KARMADA_BIN=$(KARMADA_BIN) go test $(GO_TEST_FLAGS) -count=1 -timeout 15m ./test/bench/...

.PHONY: fuzz
# One target per run (go test -fuzz takes one): the usage arithmetic, then the webhooks' decoding and decision of
# raw AdmissionRequests. Each runs FUZZTIME; findings land in the package's testdata/fuzz and replay in `make test`.
fuzz: ## Fuzz the usage arithmetic and both webhooks' handlers, FUZZTIME each (default 1m).
	go test ./pkg/usage -run '^$$' -fuzz '^FuzzUsage$$' -fuzztime $${FUZZTIME:-1m}
	go test ./pkg/admission -run '^$$' -fuzz '^FuzzBindingWebhook$$' -fuzztime $${FUZZTIME:-1m}
	go test ./pkg/admission -run '^$$' -fuzz '^FuzzQuotaWebhook$$' -fuzztime $${FUZZTIME:-1m}

##@ Tools

.PHONY: envtest-assets
envtest-assets: $(ENVTEST) ## Build etcd and kube-apiserver for envtest, and Karmada's Cluster CRD.
	@echo "KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS)"

$(KARMADA_CLUSTER_CRD): $(CONTROLLER_GEN) go.mod
	rm -rf $(@D).tmp && mkdir -p $(@D).tmp
	$(CONTROLLER_GEN) crd paths=github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1 output:crd:dir=$(@D).tmp
	rm -rf $(@D) && mv $(@D).tmp $(@D)

$(ENVTEST_ASSETS)/kube-apiserver: $(KUBE_BIN)/kube-apiserver
	mkdir -p $(@D) && ln -sf $< $@
$(ENVTEST_ASSETS)/etcd: $(ETCD_BIN)/etcd
	mkdir -p $(@D) && ln -sf $< $@

# Built into a temporary name first, so an interrupted build never leaves a binary that looks cached.
$(KUBE_BIN)/%:
	mkdir -p $(@D)
	cd hack/tools/kubernetes && go build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $@.tmp k8s.io/kubernetes/cmd/$*
	mv $@.tmp $@

.PHONY: chart-crds
chart-crds: $(CHART_CRDS) ## Fetch the CRDs of the custom resources the chart renders, for `go test ./test/chart/...`.
	@echo "CHART_TEST_CRDS=$(CHART_CRDS)"

# From the module zips the Go module proxy serves, pinned in hack/tools/crds: the Prometheus Operator's CRDs as its
# examples ship them, cert-manager's plain deploy/crds (its chart's CRD templates carry the same specs); and, from
# the project's own pinned Karmada, the ClusterPropagationPolicy the chart renders into the karmada-apiserver.
$(CHART_CRDS): hack/tools/crds/go.mod go.mod
	mkdir -p $(@D)
	cd hack/tools/crds && go mod download github.com/prometheus-operator/prometheus-operator github.com/cert-manager/cert-manager
	po=$$(cd hack/tools/crds && go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator); \
	cm=$$(cd hack/tools/crds && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager); \
	km=$$(go list -m -f '{{.Dir}}' github.com/karmada-io/karmada); \
	for f in $$po/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml \
		$$po/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml \
		$$cm/deploy/crds/cert-manager.io_certificates.yaml $$cm/deploy/crds/cert-manager.io_issuers.yaml \
		$$km/charts/karmada/_crds/bases/policy/policy.karmada.io_clusterpropagationpolicies.yaml; do \
		echo '---'; cat "$$f"; done > $@.tmp
	mv $@.tmp $@

.PHONY: local-karmada-tools
local-karmada-tools: $(LOCAL_KARMADA_TOOLS) $(KWOK_STAGES) ## Build the binaries of a local Karmada and its member clusters.

.PHONY: local-kubelet
# The only node of the local environment's host cluster: it runs pods as local processes (hack/localkarmada/kubelet).
local-kubelet: ## Build local-kubelet, the host cluster's process-running node, into ./bin.
	go build -o $(BIN)/local-kubelet ./hack/localkarmada/cmd/local-kubelet

$(KARMADA_BIN)/karmadactl:
	mkdir -p $(@D)
	cd hack/tools/karmada && go build -trimpath -tags $(KARMADA_BUILD_TAGS) -ldflags '$(KARMADA_LDFLAGS)' -o $@.tmp github.com/karmada-io/karmada/cmd/karmadactl
	mv $@.tmp $@

$(KARMADA_BIN)/karmada-%:
	mkdir -p $(@D)
	cd hack/tools/karmada && go build -trimpath -tags $(KARMADA_BUILD_TAGS) -ldflags '$(KARMADA_LDFLAGS)' -o $@.tmp github.com/karmada-io/karmada/cmd/$*
	mv $@.tmp $@

$(KWOK_BIN)/kwok:
	mkdir -p $(@D)
	cd hack/tools/kwok && go build -trimpath -o $@.tmp sigs.k8s.io/kwok/cmd/kwok
	mv $@.tmp $@

$(KWOK_STAGES): hack/tools/kwok/go.mod
	mkdir -p $(@D)
	cd hack/tools/kwok && go mod download sigs.k8s.io/kwok
	dir=$$(cd hack/tools/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok); \
	for f in $(KWOK_STAGE_FILES); do echo '---'; cat "$$dir/kustomize/stage/$$f"; done > $@.tmp
	mv $@.tmp $@

$(ETCD_BIN)/etcd:
	mkdir -p $(@D)
	cd hack/tools/etcd && go build -trimpath -o $@.tmp go.etcd.io/etcd/server/v3
	mv $@.tmp $@

.PHONY: promtool
promtool: $(PROMTOOL) ## Build the pinned promtool (pkg/metrics's tests and test-monitoring use it).

# Without service discovery (remove_all_sd): promtool needs none, and one discoverer's client is not on the module
# proxy. The version stamp is what `promtool --version` prints.
$(PROMTOOL):
	mkdir -p $(@D)
	cd hack/tools/prometheus && go build -trimpath -tags remove_all_sd \
		-ldflags '-X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION)' \
		-o $@.tmp github.com/prometheus/prometheus/cmd/promtool
	mv $@.tmp $@

$(CONTROLLER_GEN):
	mkdir -p $(@D)
	cd hack/tools/codegen && go build -trimpath -o $@.tmp sigs.k8s.io/controller-tools/cmd/controller-gen
	mv $@.tmp $@
