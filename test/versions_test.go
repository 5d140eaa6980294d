package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/test/conform"
	"github.com/vectorpilot/vectorpilot/test/helmchart"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// TestVersionsHaveOneHome: the versions the Go code carries are the ones hack/versions.env
// pins for the scripts and the Makefile, and the Helm library the tests render with is the
// Helm the kind sandbox installs.
func TestVersionsHaveOneHome(t *testing.T) {
	root := testsupport.Root(t)
	raw, err := os.ReadFile(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			pins[k] = v
		}
	}
	// Argo's types are the operator's; Helm and the Prometheus Operator's types only the
	// tests'.
	operatorMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	testsMod, err := os.ReadFile(filepath.Join(root, "test", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	required := func(gomod []byte, module string) string {
		m := regexp.MustCompile(regexp.QuoteMeta(module) + ` (v\S+)`).FindSubmatch(gomod)
		if m == nil {
			t.Fatalf("no %s in go.mod", module)
		}
		return string(m[1])
	}
	helm := required(testsMod, "helm.sh/helm/v3")
	argo := required(operatorMod, "github.com/argoproj/argo-workflows/v3")
	monitoring := required(testsMod, "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring")
	// Prometheus's Go module numbers release v3.M.P as v0.3MM.P: the PromQL parser the
	// dashboard checks read queries with is the Prometheus's the tests run.
	var promqlParser string
	if major, minor, patch, ok := semverParts(required(testsMod, "github.com/prometheus/prometheus")); ok && major == 0 && minor >= 300 {
		promqlParser = fmt.Sprintf("v%d.%d.%d", minor/100, minor%100, patch)
	}
	for _, c := range []struct{ where, have, pin string }{
		{"devenv.DefaultKubeVersion", devenv.DefaultKubeVersion, "KUBE_VERSION"},
		{"helmchart.KubeVersion", helmchart.KubeVersion.Version, "KUBE_VERSION"},
		{"sandbox.OpenSearchVersion", sandbox.OpenSearchVersion, "OPENSEARCH_VERSION"},
		{"sandbox.UpgradeFromVersion", sandbox.UpgradeFromVersion, "OPENSEARCH_UPGRADE_FROM_VERSION"},
		{"devenv.PreviousMajorVersion", devenv.PreviousMajorVersion, "OPENSEARCH_PREVIOUS_MAJOR_VERSION"},
		{"test/go.mod helm.sh/helm/v3", helm, "HELM_VERSION"},
		{"go.mod github.com/argoproj/argo-workflows/v3", argo, "ARGO_WORKFLOWS_VERSION"},
		{"test/go.mod github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring", monitoring, "PROMETHEUS_OPERATOR_VERSION"},
		{"sandbox.PrometheusVersion", sandbox.PrometheusVersion, "PROMETHEUS_VERSION"},
		{"test/go.mod github.com/prometheus/prometheus (the PromQL parser)", promqlParser, "PROMETHEUS_VERSION"},
		{"conform.ArgoCDVersion", conform.ArgoCDVersion, "ARGOCD_VERSION"},
		{"conform.FluxKustomizeControllerVersion", conform.FluxKustomizeControllerVersion, "FLUX_KUSTOMIZE_CONTROLLER_VERSION"},
		{"conform.FluxSourceControllerVersion", conform.FluxSourceControllerVersion, "FLUX_SOURCE_CONTROLLER_VERSION"},
	} {
		if c.have != pins[c.pin] {
			t.Errorf("%s is %q, hack/versions.env pins %s=%q", c.where, c.have, c.pin, pins[c.pin])
		}
	}
}

// semverParts reads vMAJOR.MINOR.PATCH.
func semverParts(v string) (major, minor, patch int, ok bool) {
	n, err := fmt.Sscanf(v, "v%d.%d.%d", &major, &minor, &patch)
	return major, minor, patch, err == nil && n == 3
}
