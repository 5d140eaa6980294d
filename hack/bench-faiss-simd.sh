#!/usr/bin/env bash
# A/B of the faiss library variants a pool's nodes can load, measured side by side in one run:
# one local node is restarted with each level's knn.faiss.*.disabled settings (the settings
# the operator gives a pool of that level: vectorpilot bench knn-settings), the faiss HNSW
# index is created and loaded again (the graph is built by the variant under test), and the
# same queries are run. The library each start loaded is read from the node's log.
#   hack/bench-faiss-simd.sh [bench sweep flags, e.g. --count 50000 --dimension 128]
# FAISS_LEVELS: the levels to compare (default: every level this CPU runs; the native
# libraries of all of them are built first, KNN_NATIVE_VARIANTS=all). FAISS_VECTORS=binary
# measures faiss binary HNSW with Hamming distance instead (bench representations
# faiss-binary: each float dimension one bit, recall against the float neighbours), e.g.
#   FAISS_VECTORS=binary hack/bench-faiss-simd.sh --count 100000 --dimension 768
# Results land in bin/bench-faiss-simd/<level>/; a table of build time, p90, throughput and
# recall is printed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

node=bench-faiss-simd
out="$BIN_DIR/bench-faiss-simd"
export OPENSEARCH_HEAP=${OPENSEARCH_HEAP:-2g}
# Every start reinstalls what the home should hold: all levels, for the whole run.
export KNN_NATIVE_VARIANTS=all
bash "$ROOT_DIR/hack/install-opensearch.sh" >/dev/null
lib="$BIN_DIR/opensearch-$OPENSEARCH_VERSION/plugins/opensearch-knn/lib"
levels=${FAISS_LEVELS:-}
if [ -z "$levels" ]; then
  for l in generic avx2 avx512 avx512_spr; do
    suffix=${l/generic/}
    [ -f "$lib/libopensearchknn_faiss${suffix:+_$suffix}.so" ] && levels+="$l "
  done
fi

mkdir -p "$out"
go build -o "$BIN_DIR/vectorpilot" "$ROOT_DIR/cmd/vectorpilot"
vp="$BIN_DIR/vectorpilot"
trap 'bash "$ROOT_DIR/hack/opensearch.sh" destroy "$node" >/dev/null 2>&1 || true' EXIT
bash "$ROOT_DIR/hack/opensearch.sh" destroy "$node" >/dev/null 2>&1 || true

printf '%-11s %-28s %10s %10s %10s %10s %8s\n' level loaded build_s p90_1c_ms qps_1c qps_2c recall
for level in $levels; do
  "$vp" bench knn-settings "$level" >"$out/$level.yml"
  bash "$ROOT_DIR/hack/opensearch.sh" stop "$node"
  OPENSEARCH_EXTRA_CONFIG="$out/$level.yml" bash "$ROOT_DIR/hack/opensearch.sh" start "$node" >/dev/null
  url=$(bash "$ROOT_DIR/hack/opensearch.sh" url "$node")
  mkdir -p "$out/$level"
  if [ "${FAISS_VECTORS:-float}" = binary ]; then
    "$vp" bench representations --url "$url" --load --representations faiss-binary --clients 1,2 \
      --exact-duration 0 --warmup 5s --duration 15s --variant "$level" --out "$out/$level/binary.json" "$@" >"$out/$level.txt"
  else
    "$vp" bench sweep --url "$url" --create --engine faiss --segments 1 --slices 1 --clients 1,2 \
      --warmup 5s --duration 15s --out "$out/$level" "$@" >"$out/$level.txt"
  fi
  loaded=$(bash "$ROOT_DIR/hack/opensearch.sh" logs "$node" | grep -o 'Loaded library: opensearchknn_faiss[a-z0-9_]*' | tail -1 | sed 's/.*: //')
  build=$(sed -n 's/^loaded .* in \([0-9hms.]*\)$/\1/p' "$out/$level.txt")
  python3 - "$out/$level" "$level" "${loaded:-none}" "$build" <<'PY'
import json, os, sys
folder, level, loaded, build = sys.argv[1:5]
if os.path.exists(os.path.join(folder, "binary.json")):
    rep = json.load(open(os.path.join(folder, "binary.json")))["results"][0]
    cells, build = {c["clients"]: c for c in rep["hnsw"]}, f"{rep['loadSeconds']:.0f}s"
else:
    cells = {c["clients"]: c for c in json.load(open(os.path.join(folder, "results.json")))["results"]}
print(f"{level:<11} {loaded:<28} {build:>10} {cells[1]['p90Ms']:>10.2f} {cells[1]['qps']:>10.1f} {cells[2]['qps']:>10.1f} {cells[1].get('recall', 0):>8.3f}")
PY
done
