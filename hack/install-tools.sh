#!/usr/bin/env bash
# Installs the pinned Go tools the Makefile runs into bin/. Idempotent.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

install_go_tool controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_TOOLS_VERSION"
install_go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
install_go_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION"
install_go_tool crd-ref-docs github.com/elastic/crd-ref-docs "$CRD_REF_DOCS_VERSION"
install_go_tool gotestsum gotest.tools/gotestsum "$GOTESTSUM_VERSION"
# The linter of hack/ (make lint), from Debian's package, unpacked without a system install.
deb_binary shellcheck usr/bin/shellcheck "$BIN_DIR/shellcheck"
