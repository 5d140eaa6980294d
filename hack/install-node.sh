#!/usr/bin/env bash
# Installs what a real single-node Kubernetes needs beside the control plane: containerd,
# runc, the CNI plugins, iptables and conntrack from Debian's packages (apt-get install);
# kubelet and kube-proxy built from the same scratch module as the control plane; CoreDNS
# from the Go module proxy; and a Debian bookworm minbase root filesystem (debootstrap) that
# the OpenSearch test image is assembled on. Idempotent; builds are cached under bin/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

out="$BIN_DIR/k8s/$KUBE_VERSION"

apt_install containerd runc containernetworking-plugins iptables conntrack debootstrap

"$(dirname "$0")/install-kube.sh" kubelet kube-proxy

if [ ! -x "$out/coredns" ]; then
  log "building CoreDNS $COREDNS_VERSION"
  GOBIN="$out/coredns-build" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
  mv "$out/coredns-build/coredns" "$out/coredns"
  rmdir "$out/coredns-build"
fi

rootfs="$BIN_DIR/images/rootfs-$DEBIAN_SUITE"
# ca-certificates: the official OpenSearch image has a system trust store, and the S3
# client's native (CRT) part refuses to start without one, even for plain HTTP.
rootfs_packages=ca-certificates
if [ "$(cat "$rootfs.complete" 2>/dev/null)" != "minbase $rootfs_packages" ]; then
  log "creating a $DEBIAN_SUITE minbase root filesystem with debootstrap"
  rm -rf "$rootfs"
  mkdir -p "$BIN_DIR/images"
  # The mirror apt is configured with (one-line or deb822 sources).
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | sed -n 's|^deb \(\[[^]]*\] \)\{0,1\}\(https\{0,1\}://[^ ]*\) '"$DEBIAN_SUITE"' .*|\2|p' | head -1 || true)
  if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's|^URIs: *\([^ ]*\).*|\1|p' | head -1 || true)
  fi
  debootstrap --variant=minbase --include="$rootfs_packages" "$DEBIAN_SUITE" "$rootfs" "${mirror:-http://deb.debian.org/debian}" >/dev/null
  # The image needs no package manager state or caches.
  rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
  echo "minbase $rootfs_packages" >"$rootfs.complete"
fi
log "node parts ready in $out"
