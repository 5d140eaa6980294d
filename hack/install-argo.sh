#!/usr/bin/env bash
# Installs Argo Workflows for the real node: the workflow controller and the executor
# (argoexec) built from the Go module proxy at the pinned version, and the release manifest
# (install.yaml: CRDs, controller Deployment, RBAC) rendered from the same module the way
# Argo renders it (kustomize build manifests/cluster-install). test/sandbox builds the two
# images from the binaries (test/harness/images) and installs from install.yaml. Idempotent;
# cached under bin/argo/<version>; prints that folder.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

out="$BIN_DIR/argo/$ARGO_WORKFLOWS_VERSION"
[ -f "$out/.complete" ] && { echo "$out"; exit 0; }

module=github.com/argoproj/argo-workflows/v3
log "building Argo Workflows $ARGO_WORKFLOWS_VERSION (workflow-controller, argoexec) from the module proxy"

# A writable copy: upstream's workflow/executor/osspecific/signal_linux.go is a symlink to
# signal_darwin.go, and module zips drop symlinks, so argoexec does not build from the
# module cache as it is. The link is put back.
rm -rf "$out" && mkdir -p "$out"
src=$(mktemp -d "$BIN_DIR/argo/src-XXXXXX")
trap 'chmod -R u+w "$src" 2>/dev/null; rm -rf "$src"' EXIT
module_source "$module" "$ARGO_WORKFLOWS_VERSION" "$src"
osspecific="$src/workflow/executor/osspecific"
[ -e "$osspecific/signal_linux.go" ] || ln -s signal_darwin.go "$osspecific/signal_linux.go"

# Static binaries (CGO off): the emissary executor copies argoexec into each step's own
# image, which may have no C library at all (the operator image has none).
ldflags="-s -w -X $module.version=$ARGO_WORKFLOWS_VERSION"
for cmd in workflow-controller argoexec; do
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$cmd" "./cmd/$cmd")
done
[ -x "$BIN_DIR/kustomize" ] || "$(dirname "$0")/install-tools.sh" >&2
"$BIN_DIR/kustomize" build "$src/manifests/cluster-install" >"$out/install.yaml"
touch "$out/.complete"
log "Argo Workflows ready in $out"
echo "$out"
