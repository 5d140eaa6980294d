package test

import (
	"bytes"
	"encoding/json"
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

// TestEveryQueryIsPromQL: every panel query of the dashboards and every alert expression
// parses with the parser of the Prometheus that will run it, and selects a metric.
func TestEveryQueryIsPromQL(t *testing.T) {
	var queries []string
	for name, b := range dashboards.All() {
		raw, err := dashboards.Render(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var d struct {
			Panels []struct {
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range d.Panels {
			for _, target := range p.Targets {
				queries = append(queries, target.Expr)
			}
		}
	}
	for _, g := range LoadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			queries = append(queries, r.Expr.String())
		}
	}
	if len(queries) < 40 {
		t.Fatalf("only %d queries found in the dashboards and rules; the extraction is broken", len(queries))
	}
	t.Logf("%d queries", len(queries))
	for _, q := range queries {
		if uses, err := Metrics(q); err != nil || len(uses) == 0 {
			t.Errorf("%s: %v, selecting %v", q, err, uses)
		}
	}
}
