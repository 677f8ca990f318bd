# Build, run and test the project. `make run` starts a shard with embedded
# etcd; `make run-system` starts the whole system (shards and front-proxy);
# `make test` runs every test (unit, integration, shard and system e2e),
# then each fuzz target for FUZZTIME.

GO        ?= go
BIN       ?= bin
ROOT_DIR  ?= .shardplane
GOFLAGS_TEST ?= -count=1 -timeout=25m
BENCH_ARGS ?=
SYSTEM_DIR ?= .shardplane-system
SHARDS     ?= 2
TOKEN_AUTH_FILE ?=
PLUGIN_DIR ?=
IMAGE ?= ghcr.io/shardplane/shardplane:dev
CONTAINER_TOOL ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)
# A count of inputs, not a duration: Go's fuzz coordinator (before Go
# 1.27, golang/go#75804) may fail a duration run at its deadline with
# "context deadline exceeded" and no failing input.
FUZZTIME ?= 20000x

# The fuzz targets, <package>:<target>. go test runs their seeds with the
# other tests; `make fuzz` also fuzzes each for FUZZTIME. An input that
# fails is written to the package's testdata/fuzz/: commit it with the fix
# and go test keeps running it.
FUZZ_TARGETS = \
	./pkg/logicalcluster:FuzzParsePath \
	./pkg/logicalcluster:FuzzSplitRequestPath \
	./pkg/clusterpath:FuzzWithCluster \
	./pkg/frontproxy:FuzzSplitClusterPath \
	./pkg/cacheserver:FuzzParsePath \
	./pkg/cacheserver:FuzzReplicaDecoder \
	./pkg/apiextensions:FuzzCustomResourceDecoder \
	./pkg/authentication/serviceaccount:FuzzClusterAuthenticator

.PHONY: all build run run-system test test-unit test-e2e fuzz bench generate lint vet fmt install-plugins image chart-check test-faults test-cluster

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

run: build
	$(BIN)/shard --root-directory=$(ROOT_DIR)

# The whole system in the foreground: root shard, $(SHARDS) shards in all,
# front-proxy. KUBECONFIG=$(SYSTEM_DIR)/admin.kubeconfig talks to it.
run-system: build
	$(BIN)/run-system --dir=$(SYSTEM_DIR) --shards=$(SHARDS) $(if $(TOKEN_AUTH_FILE),--token-auth-file=$(TOKEN_AUTH_FILE))

# The kubectl plugins `kubectl ws` and `kubectl create workspace`
# (docs/plugins.md): go install into $(go env GOBIN) (default
# $(go env GOPATH)/bin), or into PLUGIN_DIR when it is set.
install-plugins:
	$(if $(PLUGIN_DIR),GOBIN=$(abspath $(PLUGIN_DIR))) $(GO) install ./cmd/kubectl-ws ./cmd/kubectl-create-workspace

# The heavy fault cases: every process killed in turn, an external etcd
# that disappears, a 3-member etcd losing its leader.
test-faults:
	$(GO) test -vet=off -tags faults $(GOFLAGS_TEST) ./test/faults

# One image with every binary (Dockerfile), with docker or podman.
image:
	@test -n "$(CONTAINER_TOOL)" || { echo "make image needs docker or podman on PATH"; exit 1; }
	$(CONTAINER_TOOL) build -t $(IMAGE) .

# The Helm chart checks alone: lint/template, kube-apiserver dry run, the
# rendered commands of every component started for real.
chart-check:
	$(GO) test -vet=off $(GOFLAGS_TEST) ./test/deploy

# The chart on a real single-node Kubernetes this machine runs (root
# needed): containerd, runc and the CNI plugins from apt-get if absent,
# kube-apiserver, controller manager, scheduler, kube-proxy and kubelet
# built once into .cache/cluster-bin from the pinned k8s.io/kubernetes, the
# images built without docker and imported; then helm install, use through
# the front-proxy, upgrade from the previous chart under writes, a shard
# pod deleted, helm uninstall. Heavy: not part of `make test`.
test-cluster:
	bash hack/cluster/build-kube.sh
	$(GO) test -vet=off -tags cluster -count=1 -timeout=60m -v -run '^TestChartOnARealNode$$' ./test/deploy

# go test re-vets every dependency; vet once, then test with -vet=off.
vet:
	$(GO) vet ./...

test: vet
	$(GO) test -vet=off $(GOFLAGS_TEST) ./...
	$(MAKE) fuzz

# go test -fuzz takes one target of one package per run. The corpus it
# grows stays in the Go build cache.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -vet=off -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

test-unit:
	$(GO) test -vet=off $(GOFLAGS_TEST) $$($(GO) list ./... | grep -v /test/)

test-e2e:
	$(GO) test -vet=off $(GOFLAGS_TEST) ./test/...

bench: build
	$(GO) run ./test/bench --shard-binary=$(BIN)/shard $(BENCH_ARGS)

generate:
	./hack/update-codegen.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
