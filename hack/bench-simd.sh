#!/usr/bin/env bash
# A/B of the JVM SIMD configurations a pool can run with, measured side by side in one run:
# one local node holds one index per vector representation (float, sq, byte, binary, loaded
# once from the same vectors), and is restarted with each configuration's JVM options in
# turn — the same options the operator gives a pool of that level (vectorpilot bench
# jvm-options) — so every variant searches the same segments with the same queries.
#   hack/bench-simd.sh [bench representations flags, e.g. --count 20000 --duration 5s]
# SIMD_VARIANTS (default "avx512 avx2 scalar"; scalar = Panama off). Results land in
# bin/bench-simd/<variant>.json; the comparison (ratios, the level to ask for) is printed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

node=bench-simd
out="$BIN_DIR/bench-simd"
variants=${SIMD_VARIANTS:-avx512 avx2 scalar}
export OPENSEARCH_HEAP=${OPENSEARCH_HEAP:-2g}

mkdir -p "$out"
go build -o "$BIN_DIR/vectorpilot" "$ROOT_DIR/cmd/vectorpilot"
vp="$BIN_DIR/vectorpilot"
trap 'bash "$ROOT_DIR/hack/opensearch.sh" destroy "$node" >/dev/null 2>&1 || true' EXIT
bash "$ROOT_DIR/hack/opensearch.sh" destroy "$node" >/dev/null 2>&1 || true

load=(--load)
files=()
for variant in $variants; do
  opts=$("$vp" bench jvm-options "$variant")
  bash "$ROOT_DIR/hack/opensearch.sh" stop "$node"
  started=$(OPENSEARCH_VECTOR_OPTS="$opts" bash "$ROOT_DIR/hack/opensearch.sh" start "$node")
  vectorization=$(sed -n 's/^simd=//p' <<<"$started")
  log "variant $variant: JVM options '$opts'; node reports $vectorization"
  "$vp" bench representations --url "$(bash "$ROOT_DIR/hack/opensearch.sh" url "$node")" \
    --variant "$variant" --vectorization "$vectorization" "${load[@]}" --out "$out/$variant.json" "$@"
  load=()
  files+=("$out/$variant.json")
done
"$vp" bench simd-compare "${files[@]}"
