package test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/vectorpilot/vectorpilot/internal/dashboards"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
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
