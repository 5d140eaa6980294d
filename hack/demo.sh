#!/usr/bin/env bash
# make demo: the main job on the embedded local default. Starts a real OpenSearch node with
# k-NN and a real kube-apiserver + etcd with the operator (bin/vectorpilot-dev), applies a
# SearchCluster and a VectorIndex, loads a generated dataset, retunes the index through its
# spec, and prints what happened. Everything it started is stopped by PID at the end, unless
# DEMO_KEEP=1.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT_DIR"

run="$BIN_DIR/run/demo"
mkdir -p "$run"
export KUBECONFIG="$run/kubeconfig"
# kubectl of the control plane's version, built as its binaries are: a machine's own kubectl
# may be any version, and kubectl supports one minor version of skew.
bash hack/install-kube.sh kubectl
export PATH="$BIN_DIR/k8s/$KUBE_VERSION:$PATH"
ns=demo
operator_pid=""
DEMO_VECTORS=${DEMO_VECTORS:-20000}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# expect_gone fails unless OpenSearch answers 404 for the index: any other answer, or
# none, is not "gone".
expect_gone() {
  local code
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$url/$1") || die "OpenSearch did not answer about index $1"
  [ "$code" = 404 ] || die "index $1 still answers $code"
}

cleanup() {
  if [ "${DEMO_KEEP:-0}" = 1 ]; then
    cat <<MSG

Left running (DEMO_KEEP=1):
  export KUBECONFIG=$KUBECONFIG PATH=$BIN_DIR/k8s/$KUBE_VERSION:\$PATH
  kubectl -n $ns get searchclusters,vectorindices
  OpenSearch: $url      operator log: $run/operator.log
Stop it all with: kill $operator_pid; hack/opensearch.sh destroy demo; hack/s3.sh stop demo
MSG
    return
  fi
  if [ -n "$operator_pid" ]; then
    kill "$operator_pid" 2>/dev/null || true
    wait "$operator_pid" 2>/dev/null || true
  fi
  bash hack/opensearch.sh destroy demo >/dev/null 2>&1 || true
  bash hack/s3.sh stop demo >/dev/null 2>&1 || true
}
trap cleanup EXIT

step "1. OpenSearch $OPENSEARCH_VERSION with k-NN on 127.0.0.1 (assembled from Maven Central), and an S3 server"
bash hack/opensearch.sh destroy demo >/dev/null 2>&1 || true
s3=$(bash hack/s3.sh start demo | sed -n 's/^url=//p')
curl -fsS -XPUT "$s3/vectors-snapshots" >/dev/null
echo "S3-compatible server (moto) at $s3, bucket vectors-snapshots"
printf 's3.client.default.endpoint: %s\ns3.client.default.protocol: http\ns3.client.default.path_style_access: true\ns3.client.default.region: us-east-1\n' "${s3#http://}" >"$run/s3.yml"
printf 's3.client.default.access_key=demo\ns3.client.default.secret_key=demo-secret\n' >"$run/keystore"
node=$(OPENSEARCH_EXTRA_CONFIG="$run/s3.yml" OPENSEARCH_KEYSTORE="$run/keystore" bash hack/opensearch.sh start demo)
echo "$node"
url=$(echo "$node" | sed -n 's/^url=//p')

step "2. Local control plane (kube-apiserver $KUBE_VERSION + etcd) with the CRDs, and the operator"
rm -f "$KUBECONFIG"
"$BIN_DIR/vectorpilot-dev" --kubeconfig-out "$KUBECONFIG" --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$run/operator.log" 2>&1 &
operator_pid=$!
for _ in $(seq 1 120); do
  [ -s "$KUBECONFIG" ] && kubectl get crd vectorindices.vectorpilot.io >/dev/null 2>&1 && break
  kill -0 "$operator_pid" 2>/dev/null || { tail -20 "$run/operator.log"; die "operator exited"; }
  sleep 0.5
done
kubectl version 2>/dev/null | sed 's/^/  /'
kubectl get crd -o custom-columns=CRD:.metadata.name,SHORT:.spec.names.shortNames | sed 's/^/  /'

step "3. Apply a SearchCluster (external → the local node) and a VectorIndex"
kubectl create namespace "$ns" >/dev/null
# The local node runs plain HTTP without the security plugin (the sample names a secured one).
kubectl -n "$ns" apply -f - <<YAML
apiVersion: vectorpilot.io/v1alpha1
kind: SearchCluster
metadata: {name: vectors}
spec:
  external: {endpoint: "$url"}
YAML
# The demo ends by deleting the index through its policy: it opts into Delete.
sed 's/^  deletionPolicy: Retain.*/  deletionPolicy: Delete/' config/samples/vectorpilot_v1alpha1_vectorindex.yaml | kubectl -n "$ns" apply -f -
kubectl -n "$ns" wait --for=condition=Ready searchcluster/vectors vectorindex/products --timeout=120s
kubectl -n "$ns" get searchclusters,vectorindices

step "4. Admission refuses what OpenSearch would: a binary field on lucene, and a shard change"
kubectl -n "$ns" apply -f - <<YAML 2>&1 | sed 's/^/  refused: /' || true
apiVersion: vectorpilot.io/v1alpha1
kind: VectorIndex
metadata: {name: broken}
spec:
  clusterRef: {name: vectors}
  fields: [{name: bits, dimension: 12, dataType: binary, spaceType: hamming, engine: lucene}]
YAML
kubectl -n "$ns" patch vectorindex products --type=merge -p '{"spec":{"shards":4}}' 2>&1 | sed 's/^/  refused: /' || true

step "5. Load $DEMO_VECTORS generated 64-d vectors and measure recall@10 against brute force"
"$BIN_DIR/vectorpilot" bench load --url "$url" --index products-v1 --field embedding --count "$DEMO_VECTORS" --queries 200 --dimension 64 --seed 7

step "6. Retune through the spec: 4 slices, ef_search 256 — applied in place by the operator"
measured_before=$(kubectl -n "$ns" get vectorindex products -o jsonpath='{.status.recall.measuredAt}')
kubectl -n "$ns" patch vectorindex products --type=json -p '[
  {"op":"replace","path":"/spec/search/concurrentSegmentSearch","value":{"mode":"all","maxSliceCount":4}},
  {"op":"replace","path":"/spec/fields/0/method/parameters/efSearch","value":256}]'
for _ in $(seq 1 60); do
  [ "$(kubectl -n "$ns" get vectorindex products -o jsonpath='{.status.maxSliceCount}')" = 4 ] && break
  sleep 0.5
done
kubectl -n "$ns" wait --for=condition=Ready vectorindex/products --timeout=60s >/dev/null
curl -fsS "$url/products-v1/_settings?flat_settings=true" | python3 -c '
import json, sys
s = json.load(sys.stdin)["products-v1"]["settings"]
for k in ("index.search.concurrent_segment_search.mode", "index.search.concurrent.max_slice_count", "index.knn.algo_param.ef_search"):
    print("  OpenSearch now has %s = %s" % (k, s.get(k)))'
"$BIN_DIR/vectorpilot" bench load --url "$url" --index products-v1 --field embedding --ingest=false --count "$DEMO_VECTORS" --queries 200 --dimension 64 --seed 7
# spec.recall (in the sample): the operator measures the live index's recall itself — a
# spec change is measured at once — on documents it samples, against exact search.
for _ in $(seq 1 60); do
  measured=$(kubectl -n "$ns" get vectorindex products -o jsonpath='{.status.recall.measuredAt}')
  [ -n "$measured" ] && [ "$measured" != "$measured_before" ] && break
  sleep 1
done
kubectl -n "$ns" get vectorindex products -o jsonpath='  operator-measured live recall@{.status.recall.k}: {.status.recall.value} over {.status.recall.sample} sampled documents at ef_search {.status.recall.efSearch} (target {.status.recall.target}; cost {.status.recall.cost.searches} searches, {.status.recall.cost.serverMillis} ms in OpenSearch){"\n"}'

step "7. A BenchmarkRun measures slice settings × clients on the index; the tuner applies its choice"
kubectl -n "$ns" apply -f - <<YAML
apiVersion: vectorpilot.io/v1alpha1
kind: BenchmarkRun
metadata: {name: products-sweep}
spec:
  indexRef: {name: products}
  workload:
    dataset: {generated: {count: $DEMO_VECTORS, queries: 200, seed: 7}}   # what step 5 loaded
    load: Never
    warmup: 2s
    duration: ${DEMO_CELL:-5s}
  sliceCounts: [1, 2, 4, 0]
  clients: [1, 2]
  runner: {type: Local}
YAML
# Its progress, as it changes (status.progress: step, documents or cells, ETA).
last=
for _ in $(seq 1 600); do
  phase=$(kubectl -n "$ns" get benchmarkrun products-sweep -o jsonpath='{.status.phase}')
  progress=$(kubectl -n "$ns" get benchmarkrun products-sweep -o jsonpath='{.status.progress.step} {.status.progress.documents}{.status.progress.cells} {.status.progress.eta}')
  if [ "$progress" != "$last" ] && [ -n "${progress// /}" ]; then
    echo "  progress: $progress"
    last=$progress
  fi
  case "$phase" in Succeeded|Failed) break ;; esac
  sleep 1
done
kubectl -n "$ns" get benchmarkruns
[ "$phase" = Succeeded ] || die "BenchmarkRun ended $phase: $(kubectl -n "$ns" get benchmarkrun products-sweep -o jsonpath='{.status.conditions[?(@.type=="Degraded")].message}')"
"$BIN_DIR/vectorpilot" bench chart products-sweep -n "$ns" --out "$run/bench"
# No benchmarkRef: the tuner reads the index's latest succeeded BenchmarkRun.
kubectl -n "$ns" patch vectorindex products --type=merge -p '{"spec":{"tuning":{"mode":"Auto","cpuHeadroomPercent":20,"minGainPerCpuPercent":"1"}}}'
kubectl -n "$ns" wait --for=condition=Tuned vectorindex/products --timeout=60s >/dev/null
# The live load, when the operator measured one (absent, not 0, when it did not).
clients=$(kubectl -n "$ns" get vectorindex products -o jsonpath='{.status.tuning.loadClients}')
kubectl -n "$ns" get vectorindex products -o jsonpath="  tuner chose slice setting {.status.tuning.sliceCount}${clients:+ at $clients clients}: {.status.tuning.reason}{\"\\n\"}"
echo "  chart: $run/bench/chart.svg   table: $run/bench/results.csv"

step "8. Drift: a setting changed behind the operator's back is put back"
curl -fsS -XPUT "$url/products-v1/_settings" -H 'content-type: application/json' -d '{"index.number_of_replicas": 3}' >/dev/null
echo "  set index.number_of_replicas=3 directly in OpenSearch"
for _ in $(seq 1 150); do
  r=$(curl -fsS "$url/products-v1/_settings?flat_settings=true" | python3 -c 'import json,sys; print(json.load(sys.stdin)["products-v1"]["settings"]["index.number_of_replicas"])')
  [ "$r" = 0 ] && break
  sleep 0.5
done
echo "  index.number_of_replicas is $r again (as declared)"

step "9. Snapshot to S3, delete the index, restore it through a new VectorIndex, verify"
kubectl -n "$ns" apply -f - <<YAML
apiVersion: vectorpilot.io/v1alpha1
kind: SnapshotPolicy
metadata: {name: nightly}
spec:
  clusterRef: {name: vectors}
  repository: {name: s3-backups, s3: {bucket: vectors-snapshots, basePath: demo}}
  schedule: "0 2 * * *"
  retention: {maxCount: 7}
YAML
kubectl -n "$ns" wait --for=condition=Ready snapshotpolicy/nightly --timeout=60s >/dev/null
kubectl -n "$ns" apply -f - <<YAML
apiVersion: vectorpilot.io/v1alpha1
kind: VectorSnapshot
metadata: {name: before-delete}
spec:
  clusterRef: {name: vectors}
  repository: s3-backups
  indices: [products]
YAML
kubectl -n "$ns" wait --for=jsonpath='{.status.phase}'=Succeeded vectorsnapshot/before-delete --timeout=120s >/dev/null
kubectl -n "$ns" get vectorsnapshot before-delete -o jsonpath='  snapshot {.status.snapshotName}: {.status.sizeBytes} bytes, {.status.shards.successful}/{.status.shards.total} shards in {.status.durationMillis} ms{"\n"}'
kubectl -n "$ns" delete vectorindex products --timeout=60s
expect_gone products-v1
echo "  index products-v1 deleted with its VectorIndex (deletionPolicy Delete)"
sed 's/name: products-restored/name: products/; s/indexName: products-v1-restored/indexName: products-v1/; s/name: before-reindex/name: before-delete/; /^spec:/a\  deletionPolicy: Delete' \
  config/samples/vectorpilot_v1alpha1_vectorindex_restored.yaml | kubectl -n "$ns" apply -f -
kubectl -n "$ns" wait --for=condition=Ready vectorindex/products --timeout=120s >/dev/null
"$BIN_DIR/vectorpilot" bench load --url "$url" --index products-v1 --field embedding --ingest=false --count "$DEMO_VECTORS" --queries 200 --dimension 64 --seed 7 | sed 's/^/  restored: /'

step "10. A gated blue/green rebuild: m 16 → 32, which OpenSearch cannot change in place"
# Refused by default (as step 4 showed for shards); under spec.rebuild.strategy BlueGreen the
# operator builds a new index, gates it on recall and p90 against the serving one, and moves
# the index's name — an alias from now on — to it. See docs/rebuild.md.
kubectl -n "$ns" patch vectorindex products --type=json -p '[
  {"op":"add","path":"/spec/rebuild","value":{"strategy":"BlueGreen","gate":{"minRecall":"0.9","maxLatencyRegressionPercent":100,"sampleSize":50}}},
  {"op":"replace","path":"/spec/fields/0/method/parameters/m","value":32}]'
for _ in $(seq 1 240); do
  phase=$(kubectl -n "$ns" get vectorindex products -o jsonpath='{.status.rebuild.phase}')
  case "$phase" in Succeeded|GateFailed|Failed) break ;; esac
  sleep 0.5
done
kubectl -n "$ns" get vectorindex products -o jsonpath='  rebuild {.status.rebuild.phase}: {.status.rebuild.source} → {.status.rebuild.target} in {.status.rebuild.passes} copy passes{"\n"}  gate: recall@{.status.rebuild.gate[0].k} {.status.rebuild.gate[0].targetRecall} (serving {.status.rebuild.gate[0].sourceRecall}), p90 {.status.rebuild.gate[0].targetP90Ms} ms (serving {.status.rebuild.gate[0].sourceP90Ms} ms){"\n"}  writes refused for {.status.rebuild.writeBlockedMillis} ms ({.status.rebuild.message}){"\n"}  products-v1 is now an alias of {.status.indexName}; {.status.previousIndex.name} kept for a rollback until {.status.previousIndex.retainUntil}{"\n"}'
[ "$phase" = Succeeded ] || die "the rebuild ended $phase"
"$BIN_DIR/vectorpilot" bench load --url "$url" --index products-v1 --field embedding --ingest=false --count "$DEMO_VECTORS" --queries 200 --dimension 64 --seed 7 | sed 's/^/  through the alias: /'

step "Summary"
kubectl -n "$ns" get searchclusters,vectorindices,benchmarkruns,snapshotpolicies,vectorsnapshots -o wide
echo
kubectl -n "$ns" get events.events.k8s.io --sort-by=.metadata.creationTimestamp \
  -o custom-columns=OBJECT:.regarding.name,REASON:.reason,NOTE:.note | sed 's/^/  /'

step "11. Delete the VectorIndex (deletionPolicy Delete) — its indexes go with it"
kubectl -n "$ns" delete vectorindex products --timeout=60s
expect_gone products-v1
expect_gone products-v1-r0
echo "  products-v1 (the alias, its index, and the one kept for a rollback) is gone from OpenSearch"
echo
echo "demo finished"
