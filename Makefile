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

KUBE_BIN       := $(CACHE)/kubernetes-$(KUBE_VERSION)
ETCD_BIN       := $(CACHE)/etcd-$(ETCD_VERSION)
CODEGEN_BIN    := $(CACHE)/controller-tools-$(CONTROLLER_TOOLS_VERSION)
KARMADA_BIN    := $(CACHE)/karmada-$(KARMADA_VERSION)
KWOK_BIN       := $(CACHE)/kwok-$(KWOK_VERSION)
CONTROLLER_GEN := $(CODEGEN_BIN)/controller-gen
# envtest wants etcd and kube-apiserver side by side in one folder.
ENVTEST_ASSETS := $(CACHE)/envtest-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)

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
LOCAL_KARMADA_TOOL_PATH := $(BIN):$(ETCD_BIN):$(KUBE_BIN):$(KARMADA_BIN):$(KWOK_BIN)

GO_TEST_FLAGS ?=

# What controller-gen generates lives in the chart, the one source of every object karmada-quota installs.
CHART_FILES := deploy/charts/karmada-quota/files

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_.-]+:.*?##/ { printf "  %-22s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the binaries into ./bin.
	go build -o $(BIN)/ ./cmd/...

.PHONY: up
up: build local-karmada-tools ## Start a local Karmada with 2 member clusters and karmada-quota installed (no Docker).
	ln -sf $(KARMADA_BIN)/karmadactl $(BIN)/karmadactl
	go run ./hack/local-karmada up --dir $(LOCAL_KARMADA_DIR) --tool-path $(LOCAL_KARMADA_TOOL_PATH) --kwok-stages $(KWOK_STAGES)

.PHONY: down
down: ## Stop everything `make up` started and remove its data (logs stay in .local/karmada/logs).
	go run ./hack/local-karmada down --dir $(LOCAL_KARMADA_DIR)

.PHONY: demo
demo: up ## Walk through the quota user stories on the local Karmada, narrated.
	go run ./hack/demo --dir $(LOCAL_KARMADA_DIR) --karmadactl $(KARMADA_BIN)/karmadactl

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy functions and CRD manifests.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./pkg/apis/... output:crd:artifacts:config=$(CHART_FILES)/crds
	$(CONTROLLER_GEN) rbac:roleName=karmada-quota-webhook paths=./pkg/admission/... output:rbac:artifacts:config=$(CHART_FILES)/rbac/webhook
	$(CONTROLLER_GEN) rbac:roleName=karmada-quota-controller paths=./pkg/controller/... paths=./cmd/quota-controller/... \
		output:rbac:artifacts:config=$(CHART_FILES)/rbac/controller

.PHONY: verify
verify: generate ## Fail when generated files are stale or go.mod is untidy.
	go mod tidy
	@paths="pkg/apis $(CHART_FILES)/crds $(CHART_FILES)/rbac go.mod go.sum"; \
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
test: verify lint test-unit test-integration test-e2e test-bench ## Run every test: verify, lint, unit, integration, e2e, the benchmark harness at a tiny size.

.PHONY: test-unit
test-unit: ## Unit tests (pure logic, fuzz seed corpora included).
	go test $(GO_TEST_FLAGS) -race $$(go list ./... | grep -v /test/)

.PHONY: test-integration
# One package at a time (-p 1): each starts its own etcd and kube-apiserver, and on a 2-core machine three control
# planes at once would turn the timing of concurrency tests into a test of the machine.
test-integration: envtest-assets ## Integration tests against a real etcd + kube-apiserver.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test $(GO_TEST_FLAGS) -race -count=1 -p 1 -timeout 20m ./test/integration/...

.PHONY: test-e2e
# The suite starts its own local Karmada in a temporary folder and stops it; LOCAL_KARMADA_DIR=<folder of a
# running `make up`> runs it against that one instead.
test-e2e: build local-karmada-tools ## End-to-end tests on a local Karmada with member clusters.
	LOCAL_KARMADA_TOOL_PATH=$(LOCAL_KARMADA_TOOL_PATH) KWOK_STAGES=$(KWOK_STAGES) \
		go test $(GO_TEST_FLAGS) -count=1 -timeout 30m ./test/e2e/... -args -ginkgo.v -ginkgo.no-color

.PHONY: bench
# Then the side-by-side admission benchmark (test/bench): no quota webhook, karmada-quota, and Karmada's
# FederatedResourceQuota enforcement on one fresh kube-apiserver, written to docs/performance.md. BENCH_FLAGS
# passes harness flags (`go run ./test/bench --help`).
bench: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(KARMADA_BIN)/karmada-webhook $(KARMADA_BIN)/karmada-controller-manager ## Go benchmarks, then karmada-quota vs Karmada FRQ vs no webhook (docs/performance.md).
	go test -run '^$$' -bench . -benchmem $$(go list ./... | grep -v /test/)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KARMADA_BIN=$(KARMADA_BIN) go run ./test/bench --out docs/performance.md \
		--command 'make bench$(if $(BENCH_FLAGS), BENCH_FLAGS="$(BENCH_FLAGS)")' $(BENCH_FLAGS)

.PHONY: test-bench
test-bench: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(KARMADA_BIN)/karmada-webhook $(KARMADA_BIN)/karmada-controller-manager ## The side-by-side benchmark at a tiny size, asserting correctness only.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KARMADA_BIN=$(KARMADA_BIN) go test $(GO_TEST_FLAGS) -count=1 -timeout 15m ./test/bench/...

.PHONY: fuzz
fuzz: ## Fuzz the usage arithmetic for FUZZTIME (default 1m).
	go test ./pkg/usage -run '^$$' -fuzz FuzzUsage -fuzztime $${FUZZTIME:-1m}

##@ Tools

.PHONY: envtest-assets
envtest-assets: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd ## Build etcd and kube-apiserver for envtest.
	@echo "KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS)"

$(ENVTEST_ASSETS)/kube-apiserver: $(KUBE_BIN)/kube-apiserver
	mkdir -p $(@D) && ln -sf $< $@
$(ENVTEST_ASSETS)/etcd: $(ETCD_BIN)/etcd
	mkdir -p $(@D) && ln -sf $< $@

# Built into a temporary name first, so an interrupted build never leaves a binary that looks cached.
$(KUBE_BIN)/%:
	mkdir -p $(@D)
	cd hack/tools/kubernetes && go build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $@.tmp k8s.io/kubernetes/cmd/$*
	mv $@.tmp $@

.PHONY: local-karmada-tools
local-karmada-tools: $(LOCAL_KARMADA_TOOLS) $(KWOK_STAGES) ## Build the binaries of a local Karmada and its member clusters.

$(KARMADA_BIN)/karmadactl:
	mkdir -p $(@D)
	cd hack/tools/karmada && go build -trimpath -ldflags '$(KARMADA_LDFLAGS)' -o $@.tmp github.com/karmada-io/karmada/cmd/karmadactl
	mv $@.tmp $@

$(KARMADA_BIN)/karmada-%:
	mkdir -p $(@D)
	cd hack/tools/karmada && go build -trimpath -ldflags '$(KARMADA_LDFLAGS)' -o $@.tmp github.com/karmada-io/karmada/cmd/$*
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

$(CONTROLLER_GEN):
	mkdir -p $(@D)
	cd hack/tools/codegen && go build -trimpath -o $@.tmp sigs.k8s.io/controller-tools/cmd/controller-gen
	mv $@.tmp $@
