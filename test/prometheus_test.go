package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

func TestServiceMonitorDecodesStrictly(t *testing.T) {
	var sm monitoringv1.ServiceMonitor
	raw, err := os.ReadFile(filepath.Join(testsupport.Root(t), "config", "prometheus", "monitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &sm); err != nil {
		t.Fatalf("monitor.yaml is not a valid ServiceMonitor: %v", err)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("ServiceMonitor endpoints = %+v, want the metrics port", sm.Spec.Endpoints)
	}
	CheckHonorsLabels(t, sm)
}

// TestAlertRulesWithPromtool runs promtool check rules on the rule groups and promtool test
// rules on config/prometheus/rules_test.yaml, which fires and resolves every alert.
func TestAlertRulesWithPromtool(t *testing.T) {
	testgate.Integration(t, "promtool from bin/")
	root := testsupport.Root(t)
	promtool := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool missing at %s: run hack/install-promtool.sh (make test does)", promtool)
	}
	dir := t.TempDir()
	WriteRuleGroups(t, dir, true)
	tests, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.groups.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}
	// Every alert must be exercised by the unit tests.
	var tested struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &tested); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range tested.Tests {
		for _, a := range tc.AlertRuleTest {
			seen[a.Alertname] = true
		}
	}
	for _, g := range LoadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !seen[r.Alert] {
				t.Errorf("alert %s has no promtool unit test", r.Alert)
			}
		}
	}
}
