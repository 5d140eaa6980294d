#!/usr/bin/env bash
# make kind-deploy: builds the operator image, loads it into the kind cluster of
# hack/sandbox/kind.yaml, installs the chart, a one-node OpenSearch with an external
# SearchCluster and index, and the managed cluster and index test/e2e runs on the real node
# (the same files: hack/sandbox/). Needs Docker and kind on the PATH; not run in this
# repository's CI (no Docker engine there) — test/e2e is what runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT_DIR"
if ! command -v docker >/dev/null || ! command -v kind >/dev/null; then die "kind-deploy needs docker and kind"; fi
[ -x "$BIN_DIR/helm" ] || GOBIN="$BIN_DIR" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
image="$(sed -n 's/^  repository: //p' hack/sandbox/values.yaml):$(sed -n 's/^  tag: //p' hack/sandbox/values.yaml)"
docker build -t "$image" .
kind load docker-image "$image" --name vectorpilot
"$BIN_DIR/helm" upgrade --install vp charts/vectorpilot -n vectorpilot-system --create-namespace \
  -f hack/sandbox/values.yaml --wait
kubectl label namespace vectorpilot-system pod-security.kubernetes.io/enforce=restricted --overwrite
kubectl apply -f hack/sandbox/opensearch.yaml
kubectl -n opensearch rollout status statefulset/opensearch --timeout=300s
kubectl create namespace search --dry-run=client -o yaml | kubectl apply -f -
kubectl label namespace search pod-security.kubernetes.io/enforce=restricted --overwrite
# hack/sandbox/opensearch.yaml runs plain HTTP without the security plugin.
kubectl -n search apply -f - <<'YAML'
apiVersion: vectorpilot.io/v1alpha1
kind: SearchCluster
metadata: {name: vectors-external}
spec:
  external: {endpoint: "http://opensearch.opensearch.svc:9200"}
YAML
sed 's|name: vectors}|name: vectors-external}|' config/samples/vectorpilot_v1alpha1_vectorindex.yaml | kubectl -n search apply -f -
kubectl -n search wait --for=condition=Ready vectorindex/products --timeout=180s
# The managed cluster test/e2e runs: pools pinned to the AVX-512-labelled workers.
kubectl -n search apply -f hack/sandbox/searchcluster-managed.yaml
kubectl -n search wait --for=condition=Ready searchcluster/vectors --timeout=600s
kubectl -n search apply -f hack/sandbox/vectorindex-managed.yaml
kubectl -n search wait --for=condition=Ready vectorindex/docs --timeout=180s
kubectl -n search get searchclusters,vectorindices
kubectl -n search get pods -o wide -l vectorpilot.io/cluster=vectors
