package test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/vectorpilot/vectorpilot/internal/dashboards"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
)

// TestDashboardsAreCurrentAndParseStrictly: the committed JSON is what internal/dashboards
// builds (run `make dashboards`), and Grafana's own types read it without unknown fields.
func TestDashboardsAreCurrentAndParseStrictly(t *testing.T) {
	dir := filepath.Join(testsupport.Root(t), "dashboards")
	for name, b := range dashboards.All() {
		want, err := dashboards.Render(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s not committed: run make dashboards", name)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("dashboards/%s is stale: run make dashboards", name)
		}
		var d dashboard.Dashboard
		if err := strictErrors(d.UnmarshalJSONStrict(got)); err != nil {
			t.Errorf("dashboards/%s does not parse strictly: %v", name, err)
		}
		if len(d.Panels) == 0 || d.Templating.List == nil {
			t.Errorf("dashboards/%s has no panels or no variables", name)
		}
	}
}

// strictErrors keeps a strict-parse error only when it holds errors: the SDK returns its
// error list typed, so an empty list is a non-nil error.
func strictErrors(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
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
	for _, g := range loadRules(t).Spec.Groups {
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

func TestUsedMetricsAreFound(t *testing.T) {
	if n := len(UsedMetrics(t)); n < 15 {
		t.Fatalf("only %d metric names found in dashboards and rules; the extraction is broken", n)
	}
}

func TestStrictParseRefusesUnknownFields(t *testing.T) {
	var d dashboard.Dashboard
	if err := strictErrors(d.UnmarshalJSONStrict([]byte(`{"uid": "x", "title": "t", "panels": [], "refreshh": "30s"}`))); err == nil {
		t.Fatal("a dashboard with an unknown field parsed strictly")
	}
}
