#!/usr/bin/env bash
# Installs the Prometheus Operator for the real node: the operator and its config reloader
# built from the Go module proxy at the pinned version, the Prometheus server it deploys
# built from the Prometheus module at the pinned version (Kubernetes service discovery only),
# and the operator's release manifest (bundle.yaml: CRDs, Deployment, RBAC) from the same
# module. test/sandbox builds the images from the binaries (test/harness/images) and installs
# from bundle.yaml. Idempotent; cached under bin/prometheus-operator/<version>; prints that
# folder.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

out="$BIN_DIR/prometheus-operator/$PROMETHEUS_OPERATOR_VERSION"
[ -f "$out/.complete" ] && { echo "$out"; exit 0; }

rm -rf "$out" && mkdir -p "$out"
src=$(mktemp -d "$BIN_DIR/prometheus-operator/src-XXXXXX")
trap 'chmod -R u+w "$src" 2>/dev/null; rm -rf "$src"' EXIT

# The operator's go.mod replaces its two nested modules (the API types, the generated
# client) with their folders, which its module zip leaves out; the copy takes them from the
# proxy at the same version instead.
module=github.com/prometheus-operator/prometheus-operator
log "building the Prometheus Operator $PROMETHEUS_OPERATOR_VERSION (operator, prometheus-config-reloader) from the module proxy"
module_source "$module" "$PROMETHEUS_OPERATOR_VERSION" "$src/operator"
(cd "$src/operator" && go mod edit -dropreplace "$module/pkg/apis/monitoring" -dropreplace "$module/pkg/client")
ldflags="-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_OPERATOR_VERSION#v}"
for cmd in operator prometheus-config-reloader; do
  (cd "$src/operator" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$cmd" "./cmd/$cmd")
done
cp "$src/operator/bundle.yaml" "$out/bundle.yaml"

# Prometheus v3.M.P is the Go module version v0.3MM.P. Its repository's go.work names
# folders the module zip leaves out, so the build ignores it. Only Kubernetes discovery is
# compiled in (Prometheus's own build tags), as nothing here uses the cloud ones.
IFS=. read -r major minor patch <<<"${PROMETHEUS_VERSION#v}"
log "building Prometheus $PROMETHEUS_VERSION from the module proxy"
module_source github.com/prometheus/prometheus "v0.${major}$(printf %02d "$minor").$patch" "$src/prometheus"
(cd "$src/prometheus" && GOWORK=off CGO_ENABLED=0 go build -trimpath -tags "remove_all_sd enable_kubernetes_sd" \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION#v}" -o "$out/prometheus" ./cmd/prometheus)
touch "$out/.complete"
log "Prometheus Operator ready in $out"
echo "$out"
