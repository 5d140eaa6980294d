package test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// CheckPanels runs every target of every dashboard under dashboards/ and wants each to
// return at least one series, every value finite — or, for a panel that declares what
// empty means (noValue), nothing; it logs the table panel → series → sample value.
// scrapeInterval is the scrape's: $__rate_interval is four of them, as Grafana makes it. A
// dashboard named in skip is left out, its reason logged. It returns every value each panel
// showed, keyed "dashboard / panel title", for callers that know what a panel must show.
func CheckPanels(t *testing.T, prom promv1.API, scrapeInterval time.Duration, skip map[string]string) map[string][]float64 {
	t.Helper()
	shown := map[string][]float64{}
	files, err := filepath.Glob(filepath.Join(testsupport.Root(t), "dashboards", "*.json"))
	must(t, err)
	// The metrics' types as Prometheus learnt them from the scrape.
	metadata, err := prom.Metadata(t.Context(), "", "")
	must(t, err)
	types := map[string]string{}
	for name, m := range metadata {
		if len(m) > 0 {
			types[name] = string(m[0].Type)
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-12s %-52s %-11s %6s %s\n", "dashboard", "panel", "unit", "series", "sample")
	for _, f := range files {
		var d struct {
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
			Panels []struct {
				Title       string `json:"title"`
				FieldConfig struct {
					Defaults struct {
						Unit       string `json:"unit"`
						NoValue    string `json:"noValue"`
						Thresholds struct {
							Steps []struct {
								Value *float64 `json:"value"`
							} `json:"steps"`
						} `json:"thresholds"`
					} `json:"defaults"`
				} `json:"fieldConfig"`
				Targets []struct {
					Expr         string `json:"expr"`
					LegendFormat string `json:"legendFormat"`
				} `json:"targets"`
			} `json:"panels"`
		}
		raw, err := os.ReadFile(f)
		must(t, err)
		must(t, json.Unmarshal(raw, &d))
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if why, ok := skip[name]; ok {
			fmt.Fprintf(&table, "%-12s (left out: %s)\n", name, why)
			continue
		}
		vars := map[string]string{"__rate_interval": model.Duration(4 * scrapeInterval).String()}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(string)
			vars[v.Name] = resolveVariable(t, prom, expand(q, vars))
		}
		for _, p := range d.Panels {
			last := math.Inf(-1)
			for _, step := range p.FieldConfig.Defaults.Thresholds.Steps {
				if step.Value != nil && *step.Value < last {
					t.Errorf("%s / %s: threshold steps out of order (%g after %g)", name, p.Title, *step.Value, last)
				}
				if step.Value != nil {
					last = *step.Value
				}
			}
			for _, target := range p.Targets {
				if target.Expr == "" {
					continue
				}
				for _, problem := range CheckTarget(p.FieldConfig.Defaults.Unit, target.Expr, types) {
					t.Errorf("%s / %s: %s (%s)", name, p.Title, problem, target.Expr)
				}
				uses, _ := Metrics(target.Expr) // a query that does not parse failed CheckTarget
				for _, u := range uses {
					if types[u.Metric] == "" {
						t.Errorf("%s / %s: Prometheus has no type for %s, so its use cannot be judged", name, p.Title, u.Metric)
					}
				}
				expr := expand(target.Expr, vars)
				samples, err := instantQuery(t, prom, expr)
				sample := "—"
				switch {
				case err != nil:
					t.Errorf("%s / %s: %v", name, p.Title, err)
				case len(samples) == 0 && p.FieldConfig.Defaults.NoValue != "":
					// The panel says what empty means (a quantity undefined under this load).
					sample = "«" + p.FieldConfig.Defaults.NoValue + "»"
				case len(samples) == 0:
					t.Errorf("%s / %s: No data from %s", name, p.Title, expr)
				default:
					sample = strconv.FormatFloat(float64(samples[0].Value), 'g', 4, 64)
					var values []float64
					for _, s := range samples {
						if v := float64(s.Value); math.IsNaN(v) || math.IsInf(v, 0) {
							t.Errorf("%s / %s: %v for %v from %s", name, p.Title, v, s.Metric, expr)
						}
						values = append(values, float64(s.Value))
						shown[name+" / "+p.Title] = append(shown[name+" / "+p.Title], float64(s.Value))
						// The legend names labels the series really carry, or Grafana draws
						// them blank (and every line of the panel alike).
						for _, l := range LegendLabels(target.LegendFormat) {
							if s.Metric[model.LabelName(l)] == "" {
								t.Errorf("%s / %s: legend %q names %s, which series %v lacks", name, p.Title, target.LegendFormat, l, s.Metric)
							}
						}
					}
					for _, problem := range CheckValues(p.FieldConfig.Defaults.Unit, values) {
						t.Errorf("%s / %s: %s (%s)", name, p.Title, problem, expr)
					}
				}
				fmt.Fprintf(&table, "%-12s %-52.52s %-11s %6d %s\n", name, p.Title, p.FieldConfig.Defaults.Unit, len(samples), sample)
			}
		}
	}
	t.Logf("dashboard panels against a real Prometheus:\n%s", table.String())
	// The alert rules read the same metrics: no counter without rate, no rate over a gauge.
	for _, g := range LoadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			for _, problem := range CheckTarget("", r.Expr.String(), types) {
				t.Errorf("alert %s: %s (%s)", r.Alert, problem, r.Expr.String())
			}
		}
	}
	return shown
}

// resolveVariable answers a Grafana label_values(selector, label) variable: the label's
// values among the selected series, as a regular expression of all of them (Grafana's
// "All").
func resolveVariable(t *testing.T, prom promv1.API, query string) string {
	t.Helper()
	inner, ok := strings.CutPrefix(query, "label_values(")
	if !ok {
		t.Fatalf("variable query %q is not label_values(...)", query)
	}
	inner = strings.TrimSuffix(inner, ")")
	i := strings.LastIndex(inner, ",")
	selector, label := strings.TrimSpace(inner[:i]), strings.TrimSpace(inner[i+1:])
	samples, err := instantQuery(t, prom, selector)
	must(t, err)
	seen := map[string]bool{}
	var values []string
	for _, s := range samples {
		if v := string(s.Metric[model.LabelName(label)]); v != "" && !seen[v] {
			seen[v] = true
			values = append(values, regexp.QuoteMeta(v))
		}
	}
	if len(values) == 0 {
		t.Errorf("variable %s has no values (%s)", label, query)
		return ".*"
	}
	sort.Strings(values)
	return strings.Join(values, "|")
}

// instantQuery runs an instant query; a scalar answer is one sample without labels.
func instantQuery(t *testing.T, prom promv1.API, expr string) (model.Vector, error) {
	t.Helper()
	value, _, err := prom.Query(t.Context(), expr, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	switch v := value.(type) {
	case model.Vector:
		return v, nil
	case *model.Scalar:
		return model.Vector{{Value: v.Value, Timestamp: v.Timestamp}}, nil
	}
	return nil, fmt.Errorf("query %s: a %s answer", expr, value.Type())
}

// expand fills in $name variables, longest names first.
func expand(expr string, vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		expr = strings.ReplaceAll(expr, "$"+n, vars[n])
	}
	return expr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
