#!/usr/bin/env bash
# make kind-deploy: builds the operator image, loads it into the kind cluster of
# hack/kind.yaml, installs the chart, a one-node OpenSearch and the samples. Needs Docker
# and kind on the PATH; not run in this repository's CI (no Docker engine there).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT_DIR"
command -v docker >/dev/null && command -v kind >/dev/null || die "kind-deploy needs docker and kind"
[ -x "$BIN_DIR/helm" ] || GOBIN="$BIN_DIR" go install helm.sh/helm/v3/cmd/helm@v3.22.0
docker build -t vectorpilot:dev .
kind load docker-image vectorpilot:dev --name vectorpilot
"$BIN_DIR/helm" upgrade --install vectorpilot charts/vectorpilot -n vectorpilot-system --create-namespace \
  --set image.repository=vectorpilot --set image.tag=dev --set image.pullPolicy=Never --wait
kubectl apply -f hack/kind/opensearch.yaml
kubectl -n opensearch rollout status statefulset/opensearch --timeout=300s
kubectl create namespace search --dry-run=client -o yaml | kubectl apply -f -
sed 's|http://127.0.0.1:9200|http://opensearch.opensearch.svc:9200|' config/samples/vectorpilot_v1alpha1_searchcluster.yaml | kubectl -n search apply -f -
kubectl -n search apply -f config/samples/vectorpilot_v1alpha1_vectorindex.yaml
kubectl -n search wait --for=condition=Ready vectorindex/products --timeout=180s
# A managed cluster whose pools the scheduler pins to the SIMD-labelled workers.
kubectl apply -f hack/kind/searchcluster-managed.yaml
kubectl -n search wait --for=condition=Ready searchcluster/vectors-managed --timeout=600s
kubectl -n search get searchclusters,vectorindices
kubectl -n search get pods -o wide -l vectorpilot.io/cluster=vectors-managed
