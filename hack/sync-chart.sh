#!/usr/bin/env bash
# Copies generated and shared files into the Helm chart, which cannot read outside its
# folder: CRDs, the manager's RBAC rules, the alert rules and the dashboards. A test fails
# when the copies differ from their sources.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
chart="$ROOT_DIR/charts/vectorpilot"
rm -f "$chart"/crds/*.yaml "$chart"/files/dashboards/*.json
cp "$ROOT_DIR"/config/crd/bases/*.yaml "$chart/crds/"
cp "$ROOT_DIR/config/rbac/role.yaml" "$chart/files/manager-role.yaml"
cp "$ROOT_DIR/config/prometheus/rules.yaml" "$chart/files/prometheus-rules.yaml"
cp "$ROOT_DIR"/dashboards/*.json "$chart/files/dashboards/"
