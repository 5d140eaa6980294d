#!/usr/bin/env bash
# Builds the real Kubernetes binaries from the Go module proxy — by default the control
# plane envtest runs (kube-apiserver, and kube-scheduler + kube-controller-manager for
# placement tests); name others to build them instead (hack/install-node.sh asks for kubelet
# and kube-proxy; the demo and the README's quick start test for kubectl) — and etcd, from
# the module proxy too.
# Idempotent: each binary is built once and cached under bin/k8s/$KUBE_VERSION.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The default matches the Makefile and internal/harness/devenv.DefaultKubeVersion.
STAGING_VERSION="v0${KUBE_VERSION#v1}"
out="$BIN_DIR/k8s/$KUBE_VERSION"
mkdir -p "$out"

# etcd of the series Kubernetes $KUBE_VERSION is built against, from the module proxy (a
# scratch module, as go install refuses the server module's replace directives). Debian's
# etcd-server (3.4.23) served too, but it has no watch progress notification, so the
# apiserver turns watch-list off (RequestWatchProgress) and refuses every watch of an
# informer that asks for it — Argo's workflow controller's (client-go 0.33) — which then
# saw pod changes only when it relisted: 30-60 s between workflow steps.
ensure_etcd() {
  [ -x "$out/etcd" ] && "$out/etcd" --version | grep -x "etcd Version: ${ETCD_VERSION#v}" >/dev/null && return 0
  log "building etcd $ETCD_VERSION from the module proxy"
  local dir="$BIN_DIR/k8s/build-etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  printf 'module vectorpilot.local/etcdbuild\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$dir/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$dir/tools.go"
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy >/dev/null &&
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$out/etcd.tmp" "$out/etcd"
}

# The kubernetes module carries replace directives that `go install` refuses; a scratch
# module that requires it and pins every k8s.io staging module to the matching version
# builds it instead.
scratch_module() {
  local dir="$BIN_DIR/k8s/build-$KUBE_VERSION"
  mkdir -p "$dir"
  # .complete-3: the module also imports the node's binaries (kubelet, kube-proxy) and
  # kubectl's packages (its main imports k8s.io/kubectl/pkg/cmd and the client auth plugins).
  if [ ! -f "$dir/go.sum" ] || [ ! -f "$dir/.complete-3" ]; then
    log "preparing a build module for k8s.io/kubernetes $KUBE_VERSION"
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      echo "module vectorpilot.local/kubebuild"
      echo
      echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod")"
      echo
      echo "require k8s.io/kubernetes $KUBE_VERSION"
      echo
      grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$gomod" \
        | awk '{print $1}' | grep -v '/sample-' | sort -u \
        | sed "s|.*|replace & => & $STAGING_VERSION|"
    } >"$dir/go.mod"
    {
      printf 'package main\n\nimport (\n'
      for cmd in kube-apiserver kube-scheduler kube-controller-manager kubelet kube-proxy; do
        printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$cmd"
      done
      printf '\t_ "k8s.io/kubectl/pkg/cmd"\n\t_ "k8s.io/client-go/plugin/pkg/client/auth"\n'
      printf ')\n\nfunc main() {}\n'
    } >"$dir/tools.go"
    (cd "$dir" && go mod tidy >/dev/null)
    touch "$dir/.complete-3"
  fi
  echo "$dir"
}

build() {
  local name=$1
  [ -x "$out/$name" ] && return 0
  local dir; dir=$(scratch_module)
  log "building $name $KUBE_VERSION (cold: minutes; cached afterwards)"
  local pkg=k8s.io/component-base/version
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -o "$out/$name.tmp" \
    -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean" \
    "k8s.io/kubernetes/cmd/$name")
  mv "$out/$name.tmp" "$out/$name"
}

if [ $# -gt 0 ]; then
  for name in "$@"; do build "$name"; done
  exit 0
fi
ensure_etcd
build kube-apiserver
if [ "${WITH_PLACEMENT:-1}" = 1 ]; then
  build kube-scheduler
  build kube-controller-manager
fi
log "control plane ready in $out"
