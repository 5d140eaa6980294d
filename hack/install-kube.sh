#!/usr/bin/env bash
# Builds the real Kubernetes binaries from the Go module proxy — by default the control
# plane envtest runs (kube-apiserver, and kube-scheduler + kube-controller-manager for
# placement tests); name others to build them instead (hack/install-node.sh asks for kubelet
# and kube-proxy) — and installs etcd from Debian's package without a system install.
# Idempotent: each binary is built once and cached under bin/k8s/$KUBE_VERSION.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The default matches the Makefile and internal/devenv.DefaultKubeVersion.
STAGING_VERSION="v0${KUBE_VERSION#v1}"
out="$BIN_DIR/k8s/$KUBE_VERSION"
mkdir -p "$out"

ensure_etcd() {
  deb_binary etcd-server usr/bin/etcd "$out/etcd"
}

# The kubernetes module carries replace directives that `go install` refuses; a scratch
# module that requires it and pins every k8s.io staging module to the matching version
# builds it instead.
scratch_module() {
  local dir="$BIN_DIR/k8s/build-$KUBE_VERSION"
  mkdir -p "$dir"
  # .complete-2: the module also imports the node's binaries (kubelet, kube-proxy).
  if [ ! -f "$dir/go.sum" ] || [ ! -f "$dir/.complete-2" ]; then
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
      printf ')\n\nfunc main() {}\n'
    } >"$dir/tools.go"
    (cd "$dir" && go mod tidy >/dev/null)
    touch "$dir/.complete-2"
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
