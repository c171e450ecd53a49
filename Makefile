# The webfarm operator. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
export KUBEBUILDER_ASSETS := $(BIN)/k8s
# The real nginx and Envoy that the golden-config tests run.
export WEBFARM_NGINX := $(BIN)/nginx
export WEBFARM_ENVOY := $(BIN)/envoy
export WEBFARM_KUBECTL := $(BIN)/kubectl
export WEBFARM_HELM := $(BIN)/helm
# One build configuration for every go command (vet, lint, tests and the
# binaries, which must be static and carry no local paths): they then share
# the compile cache, and a fresh machine compiles each dependency once, not
# twice.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath -buildvcs=false

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: tools
tools: ## Install every pinned tool the build and tests need (cached per user).
	hack/install-tools.sh

$(CONTROLLER_GEN):
	hack/install-tools.sh controller-gen

$(GOLANGCI_LINT):
	hack/install-tools.sh golangci-lint

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs and RBAC from the code's markers (config/ and the Helm chart).
	$(CONTROLLER_GEN) rbac:roleName=webfarm-operator crd:allowDangerousTypes=false paths="./api/...;./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart.sh
	go run ./hack/apidocs

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: gen-check
gen-check: generate manifests ## Fail when generated files are stale.
	@git diff --exit-code -- api config charts docs/api-reference.md || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts docs/api-reference.md)" || { git status --porcelain -- api config charts docs/api-reference.md; echo "untracked generated files: commit them"; exit 1; }

.PHONY: mime-types
mime-types: ## Regenerate the pool workers' media types from Debian's media-types (/etc/mime.types).
	go run ./hack/mimetypes /etc/mime.types "$$(dpkg-query -W -f='$${Version}' media-types)" > internal/render/nginx/mime.types

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

# A tracked file larger than this is a build output or data that belongs elsewhere.
MAX_TRACKED_KB ?= 2048

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet, golangci-lint (the usual checks and the Kubernetes API conventions) and no large tracked files.
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	go vet ./...
	go vet -tags e2e ./test/e2e/...
	go vet -tags conformance ./test/conformance/...
	$(GOLANGCI_LINT) run --build-tags e2e,conformance ./...
	@big="$$(git ls-files --stage | awk '{print $$2, $$4}' | git cat-file --batch-check='%(objectsize) %(rest)' | \
		awk -v max=$$(( $(MAX_TRACKED_KB) * 1024 )) '$$1 > max {print $$2}')"; \
		test -z "$$big" || { echo "tracked files over $(MAX_TRACKED_KB) KiB (build outputs go to bin/):"; echo "$$big"; exit 1; }

.PHONY: build
build: ## Build the operator binary, the Envoy image's drain hook (and the e2e tests' application) into bin/.
	go build -ldflags "-s -w" -o $(BIN)/manager ./cmd/manager
	go build -ldflags "-s -w" -o $(BIN)/envoy-drain ./cmd/envoy-drain
	go build -ldflags "-s -w" -o $(BIN)/webfarm-testapp ./test/testapp

.PHONY: test
test: ## Install tools, check generated files, lint, and run every test (the e2e suite needs root; hack/test.sh).
	hack/test.sh

.PHONY: test-e2e
test-e2e: tools images ## Run the end-to-end suite, the Gateway API conformance run with it, on the local cluster (needs root; starts it unless running, then stops it).
	hack/images/build.sh echo-basic
	go test -tags e2e ./test/e2e/ -count=1 -timeout 55m -parallel 3 -v

# The conformance run's own images: release.sh (run by the test) builds the
# operator's, up.sh the cluster's; the suite's echo server is built here.
.PHONY: test-conformance
test-conformance: tools build ## Run the Gateway API conformance suite (GATEWAY-HTTP profile) on the local cluster (needs root); writes docs/gateway-api-conformance.md.
	hack/images/build.sh echo-basic
	go test -tags conformance ./test/conformance/ -count=1 -timeout 30m -v

.PHONY: test-unit
test-unit: ## Run the tests without the tool install and checks (tools must be installed).
	go test ./... -count=1

# How long each target runs: a duration (2m) or a number of inputs (4000x).
# Go 1.26 can end a duration's run with "context deadline exceeded" and no
# failing input when its workers are starved at the deadline (golang/go#75804,
# fixed in Go 1.27); a count has no deadline, so unattended runs use one.
FUZZTIME ?= 2m
# Time to minimize an input the fuzzer keeps. Each run of a target starts the
# real nginx or Envoy (up to a second each): in a 10 s run, a minimization
# still going at the deadline ended the run with "context deadline
# exceeded", so the short run keeps inputs as found (0: no minimization).
FUZZMINIMIZETIME ?= 60s

.PHONY: fuzz-short
fuzz-short: ## Fuzz each renderer with 3000 inputs (the real nginx and Envoy check its output).
	$(MAKE) fuzz FUZZTIME=3000x FUZZMINIMIZETIME=0

.PHONY: fuzz
fuzz: ## Fuzz each renderer for FUZZTIME (2m unless set); -fuzz takes one target per run.
	go test ./internal/render/nginx -run '^$$' -fuzz '^FuzzPoolConfig$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/nginx -run '^$$' -fuzz '^FuzzCacheConfig$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/envoy -run '^$$' -fuzz '^FuzzFarmRouting$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/envoy -run '^$$' -fuzz '^FuzzFrontendSecurity$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/envoy -run '^$$' -fuzz '^FuzzClientLimits$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/envoy -run '^$$' -fuzz '^FuzzGatewayRouting$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/nginx -run '^$$' -fuzz '^FuzzSiteHeaders$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/envoy -run '^$$' -fuzz '^FuzzSiteContent$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)
	go test ./internal/render/envoy -run '^$$' -fuzz '^FuzzTenantSiteContent$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)

.PHONY: update-golden
update-golden: ## Rewrite the golden files from the renderers.
	go test ./internal/render/... -count=1 -update

##@ Run

.PHONY: demo
demo: build ## The sample farm on the local cluster (root); DEMO_ARGS=--existing-cluster uses $$KUBECONFIG's.
	hack/demo.sh $(DEMO_ARGS)

.PHONY: run
run: ## Run the operator against the cluster in KUBECONFIG.
	go run ./cmd/manager

##@ Local cluster

.PHONY: cluster-up
cluster-up: ## Start the local single-node Kubernetes (idempotent; needs root).
	hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove everything it created.
	hack/cluster/down.sh

.PHONY: images
images: build ## Build the operator, nginx, Envoy, Prometheus and client images (no registry needed).
	hack/images/build.sh

##@ Release

.PHONY: release
release: build ## Build (linux/amd64 and linux/arm64), push and sign (SIGN_KEY, else local key on loopback, else keyless) the images and chart of VERSION to REGISTRY; writes dist/release.env.
	hack/release.sh $(if $(REGISTRY),--registry $(REGISTRY)) $(if $(VERSION),--version $(VERSION)) $(if $(PLATFORMS),--platforms $(PLATFORMS)) $(if $(SIGN_KEY),--sign-key $(SIGN_KEY))

.PHONY: verify-release
verify-release: ## Verify the signatures and SBOMs of the release in dist/release.env (hack/verify-release.sh -h for a keyless signer).
	hack/verify-release.sh

##@ Benchmarks

.PHONY: bench-control-plane
bench-control-plane: build ## Converge 2,000 pools / 20,000 hosts on a local control plane; compare with a bare client.
	hack/install-tools.sh kube etcd
	go run ./bench/controlplane $(BENCH_ARGS)

.PHONY: bench-hosting
bench-hosting: build ## 20,000 HTTPRoutes in 200 namespaces on one Gateway and 10 pools: the operator and a real Envoy on a local control plane, against a bare client.
	hack/install-tools.sh kube etcd envoy
	go run ./bench/hosting $(BENCH_ARGS)

.PHONY: bench-dataplane
bench-dataplane: ## Serve the IIS 6 and WebBench workloads on loopback (HTTP, HTTPS, HTTP/2): bare nginx, an nginx proxy, the farm's Envoy frontend.
	hack/install-tools.sh nginx envoy wrk h2load
	go run ./bench/dataplane $(BENCH_ARGS)

.PHONY: bench-dataplane-envoygateway
bench-dataplane-envoygateway: ## Regenerate Envoy Gateway's configuration of bench-dataplane's case with the pinned egctl (bench/README.md).
	hack/install-tools.sh egctl
	bin/egctl experimental translate --from gateway-api --to xds --type all --output yaml \
		--file bench/dataplane/testdata/envoygateway/resources.yaml > bench/dataplane/testdata/envoygateway/xds.yaml

.PHONY: bench-cache
bench-cache: ## Replay a Zipf-popular image gallery through the cache tier (IIS defaults, tuned, none) and race a cache hit against an nginx proxy.
	hack/install-tools.sh nginx wrk
	go run ./bench/cache $(BENCH_ARGS)

.PHONY: bench-autoscale
bench-autoscale: ## Replay the Contoso traffic through our autoscaler, the HPA's algorithm and a KEDA-style threshold, against an oracle (a simulation of seconds).
	go run ./bench/autoscale $(BENCH_ARGS)
