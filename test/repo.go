package test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// LoadRules decodes config/prometheus/rules.yaml strictly into the Prometheus Operator's
// own type, so a misspelt field fails here rather than being dropped by the apiserver.
func LoadRules(t *testing.T) monitoringv1.PrometheusRule {
	t.Helper()
	var rule monitoringv1.PrometheusRule
	raw, err := os.ReadFile(filepath.Join(testsupport.Root(t), "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &rule); err != nil {
		t.Fatalf("rules.yaml is not a valid PrometheusRule: %v", err)
	}
	return rule
}

// WriteRuleGroups writes the PrometheusRule's groups as a Prometheus rules file in dir and
// returns its path. With keepFor false every rule's `for` is dropped, so an alert fires on
// its first true evaluation (the durations themselves are promtool-tested).
func WriteRuleGroups(t *testing.T, dir string, keepFor bool) string {
	t.Helper()
	groups := LoadRules(t).Spec.Groups
	if !keepFor {
		for g := range groups {
			for r := range groups[g].Rules {
				groups[g].Rules[r].For = nil
			}
		}
	}
	raw, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.groups.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var metricName = regexp.MustCompile(`\b(vectorpilot_[a-z0-9_]+|controller_runtime_[a-z0-9_]+)\b`)

// UsedMetrics are the metric names that any dashboard query or alert expression uses.
func UsedMetrics(t *testing.T) []string {
	t.Helper()
	root := testsupport.Root(t)
	var sources [][]byte
	files, _ := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, raw)
	}
	for _, g := range LoadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			sources = append(sources, []byte(r.Expr.String()))
		}
	}
	seen := map[string]bool{}
	for _, src := range sources {
		for _, m := range metricName.FindAllString(string(src), -1) {
			seen[m] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckHonorsLabels wants every endpoint of a ServiceMonitor of the operator to honour the
// scraped labels: the operator's series carry the namespace of the object they describe,
// which the target's namespace label (the operator's Service's) would otherwise replace —
// every dashboard's namespace variable then lists only the operator's namespace (seen on
// the real node, test/e2e).
func CheckHonorsLabels(t *testing.T, sm monitoringv1.ServiceMonitor) {
	t.Helper()
	for i, e := range sm.Spec.Endpoints {
		if !e.HonorLabels {
			t.Errorf("ServiceMonitor %s endpoint %d (port %s): honorLabels is false, so the operator's namespace labels would be overwritten", sm.Name, i, e.Port)
		}
	}
}
