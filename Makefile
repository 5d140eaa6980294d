# Every entry point of the project. Tools and real test binaries are installed by hack/
# scripts into bin/ (git-ignored), each skipping work already done.
SHELL := /usr/bin/env bash
BIN := $(CURDIR)/bin
# Pinned versions: hack/versions.env (the environment may override each).
$(foreach pin,$(shell grep -E '^[A-Z][A-Z0-9_]*=' hack/versions.env),$(eval $(subst =, ?= ,$(pin))))
CONTROLLER_GEN := $(BIN)/controller-gen
export KUBE_VERSION OPENSEARCH_VERSION

.PHONY: image bench-simd bench-faiss-simd bench-replay bench-tuner-day capture-status demo-cluster e2e schemas kind-up kind-deploy all build test unit demo bench manifests generate dashboards lint tools real-parts clean
all: build

## build: the operator binary (manager and CLI) in bin/vectorpilot, and the demo's local
## control plane with the operator in bin/vectorpilot-dev
build:
	go build -o $(BIN)/vectorpilot ./cmd/vectorpilot
	go build -o $(BIN)/vectorpilot-dev ./cmd/vectorpilot-dev

## image: the operator's image as a docker-archive in bin/vectorpilot-image.tar, built as the
## Dockerfile says without a Docker engine; IMAGE names it (docker load, kind load, crane push)
IMAGE ?= ghcr.io/vectorpilot/vectorpilot:$(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/vectorpilot/Chart.yaml)
image:
	go -C test run ./cmd/image -image $(IMAGE) -o $(BIN)/vectorpilot-image.tar

## tools: code generators and checkers pinned by version
tools:
	hack/install-tools.sh

## real-parts: kube-apiserver, etcd, scheduler, controller-manager, OpenSearch + k-NN (the pinned
## version, the one the e2e upgrade starts from, and the previous major's), S3 server,
## promtool and Prometheus, nginx (TLS and basic auth in front of a node), OpenSearch Benchmark, the real
## node (containerd, runc, CNI, kubelet, kube-proxy, CoreDNS, a Debian rootfs for images) and
## Argo Workflows (workflow controller, executor, install.yaml)
## (hack/part.sh runs each part; under hack/test.sh it records the part's time for the report)
real-parts:
	hack/part.sh "control plane" hack/install-kube.sh
	hack/part.sh "node" hack/install-node.sh
	hack/part.sh "OpenSearch $(OPENSEARCH_VERSION) + native" hack/install-opensearch.sh >/dev/null
	OPENSEARCH_VERSION=$(OPENSEARCH_UPGRADE_FROM_VERSION) OPENSEARCH_ARTIFACT_VERSIONS=$(OPENSEARCH_UPGRADE_FROM_ARTIFACTS) \
		hack/part.sh "OpenSearch $(OPENSEARCH_UPGRADE_FROM_VERSION)" hack/install-opensearch.sh >/dev/null
	OPENSEARCH_VERSION=$(OPENSEARCH_PREVIOUS_MAJOR_VERSION) hack/part.sh "OpenSearch $(OPENSEARCH_PREVIOUS_MAJOR_VERSION)" hack/install-opensearch.sh >/dev/null
	hack/part.sh "S3 server" hack/install-s3.sh >/dev/null
	hack/part.sh "promtool, Prometheus" hack/install-promtool.sh >/dev/null
	hack/part.sh "nginx" hack/install-nginx.sh >/dev/null
	hack/part.sh "OpenSearch Benchmark" hack/install-python.sh hack/requirements-osb.txt venv-osb >/dev/null
	hack/part.sh "Argo Workflows" hack/install-argo.sh >/dev/null
	hack/part.sh "Prometheus Operator" hack/install-prometheus-operator.sh >/dev/null

## manifests: CRDs and RBAC from the API types and controller markers, the chart's copies, and
## the API reference (docs/api-reference.md)
manifests: tools
	$(CONTROLLER_GEN) rbac:roleName=vectorpilot-manager crd paths="./..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart.sh
	$(BIN)/crd-ref-docs $(CRD_REF_DOCS_FLAGS) --output-path=docs/api-reference.md

# The API reference's generator flags; test/generated_test.go runs the same.
CRD_REF_DOCS_FLAGS := --log-level=ERROR --source-path=./api --config=hack/crd-ref-docs/config.yaml --renderer=markdown

## dashboards: Grafana dashboards (JSON) from internal/dashboards
dashboards:
	go run ./cmd/vectorpilot dashboards --out dashboards
	hack/sync-chart.sh

## schemas: the strict JSON Schemas kubeconform validates with, from the pinned apiserver
## with the CRDs installed (test/conform checks they are current)
schemas: tools real-parts manifests
	cd test && VECTORPILOT_INTEGRATION=1 UPDATE_SCHEMAS=1 go test -count=1 -run TestShippedSchemasAreCurrent ./conform

## capture-status: the objects, status and all, the operator writes in the controllers'
## integration tests, one per kind × state × reason, into test/testdata/status; the Argo CD
## and kstatus health tests (test/argocd, test/kstatus_test.go) read them
capture-status: tools real-parts
	rm -rf test/testdata/status && mkdir -p test/testdata/status
	VECTORPILOT_CAPTURE_STATUS=$(CURDIR)/test/testdata/status hack/test.sh ./controllers

## generate: deepcopy code for the API types
generate: tools
	$(CONTROLLER_GEN) object paths="./api/..."

## lint: golangci-lint (.golangci.yml: go vet, staticcheck, errcheck, revive, predeclared,
## import shadowing, gofmt, import grouping) over the operator's module and the tests'
## (test/go.mod), and shellcheck (hack/, .ci/)
lint: tools
	$(BIN)/golangci-lint run --allow-parallel-runners ./...
	cd test && $(BIN)/golangci-lint run --allow-parallel-runners ./...
	$(BIN)/shellcheck hack/*.sh .ci/run

## test: unit + integration tests against real parts (installs them and lints first; the
## run ends with each phase's wall time, set-up included, and the slowest packages and tests)
test:
	hack/test.sh

## e2e: the operator from its chart and a managed OpenSearch cluster in pods on a real node
## (part of make test too)
e2e: tools real-parts
	hack/test.sh -v ./test/e2e

## unit: tests that need no real part (integration tests skip themselves unless
## VECTORPILOT_INTEGRATION=1, which make test sets), in both modules
unit:
	go test ./...
	cd test && go test ./...

## demo: the main job on the embedded local default
demo: tools real-parts build
	hack/demo.sh

## demo-cluster: a managed OpenSearch cluster end to end on the real node (root; minutes);
## DEMO_CLUSTER_FLAGS=-keep leaves it running
demo-cluster: tools real-parts
	go -C test run ./cmd/democluster $(DEMO_CLUSTER_FLAGS)

## kind-up, kind-deploy: a kind cluster with SIMD-like node labels, the operator from the
## chart and the managed cluster test/e2e runs (one set of files, hack/sandbox/), plus a
## one-node external OpenSearch (needs Docker; not run in CI here: test/e2e is)
kind-up:
	kind create cluster --config hack/sandbox/kind.yaml

kind-deploy:
	hack/kind-deploy.sh

clean:
	rm -rf $(BIN)/run

## bench: fleet scale (N VectorIndexes to Ready, idle cost), ground-truth throughput and the
## peak memory of the largest dataset a Local BenchmarkRun accepts
bench: tools real-parts
	go test ./internal/benchmark/dataset -run '^$$' -bench . -benchtime 3x
	go test ./internal/benchrun -run '^$$' -bench LargestAcceptedLocalDataset -benchtime 1x
	hack/test.sh -run '^$$' -bench . -benchtime 1x ./test/bench

## bench-simd: A/B of the JVM SIMD configurations (avx512, avx2, Panama off) over float,
## sq7, byte and binary indexes of the same vectors on one local node (about 15 minutes)
bench-simd: real-parts
	hack/bench-simd.sh

## bench-replay: the tuner's value over a day, simulated with the tuner's own code (no
## cluster): the 1-4-8-4-1 client day over OpenSearch's published 32-core table and over a
## sweep measured here on 2 cores; tables and plots in bin/bench/replay
bench-replay:
	go run ./cmd/vectorpilot bench replay --table internal/autotune/testdata/replay/big5-32-cores.json --out bin/bench/replay/big5-32-cores
	go run ./cmd/vectorpilot bench replay --table internal/autotune/testdata/load-signal/100k-8seg-first.json --out bin/bench/replay/local-2-cores

## bench-tuner-day: the same kind of day live: a Local BenchmarkRun sweeps a 100,000 × 64
## index on the local node, then the schedule's clients run against it with the operator
## tuning and with each setting held (controllers TestTunerOverALiveDay; ~35 min with the
## default schedule; TUNER_DAY_ROUNDS=2 runs the day twice, the runs' order turned around,
## ~27 min more); day.md, day.svg and windows.json in bin/bench/tuner-day. Run it on an
## otherwise idle machine.
TUNER_DAY_SCHEDULE ?= 1x60s,4x60s,8x60s,4x60s,1x60s
bench-tuner-day: tools real-parts
	TUNER_DAY_SCHEDULE=$(TUNER_DAY_SCHEDULE) hack/test.sh -v -timeout 3h -run '^TestTunerOverALiveDay$$' ./controllers

## bench-faiss-simd: A/B of the faiss library variants (generic, avx2, avx512, avx512_spr where
## the CPU runs them) on one local node: graph build time, p90, throughput, recall; builds
## every native level this CPU runs first
bench-faiss-simd: real-parts
	hack/bench-faiss-simd.sh
