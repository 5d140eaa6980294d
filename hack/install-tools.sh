#!/usr/bin/env bash
# Installs the pinned Go tools the Makefile runs into bin/. Idempotent.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

install_go_tool controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_TOOLS_VERSION"
install_go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
install_go_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION"
install_go_tool crd-ref-docs github.com/elastic/crd-ref-docs "$CRD_REF_DOCS_VERSION"
install_go_tool gotestsum gotest.tools/gotestsum "$GOTESTSUM_VERSION"
# The helm command of the Helm the tests render and install with (test/go.mod), for the
# commands the docs give users (test/e2e runs the README's quick start with it). Helm's
# version is set at link time, as its own release build does.
install_go_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
# The linter of hack/ (make lint), from Debian's package, unpacked without a system install.
deb_binary shellcheck usr/bin/shellcheck "$BIN_DIR/shellcheck"
