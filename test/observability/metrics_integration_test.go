// Package observability checks the operator's metrics endpoint against what the dashboards
// and alerts use, with the real parts.
package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/dashboards"
	"github.com/vectorpilot/vectorpilot/internal/devenv"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
	vptest "github.com/vectorpilot/vectorpilot/test"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel + 1)))
	os.Exit(testsupport.Main(m, testsupport.Kube|testsupport.OpenSearch))
}

// TestEveryMetricUsedByDashboardsAndAlertsIsExported runs the operator with its metrics
// endpoint on loopback, manages a real index (tuned, so tuning metrics exist), scrapes
// /metrics over HTTP, and checks every metric name any dashboard panel or alert uses; then
// a real Prometheus scrapes it under a query load and every dashboard panel's query must
// return data (checkPanels).
func TestEveryMetricUsedByDashboardsAndAlertsIsExported(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	ctx := t.Context()
	ns := fmt.Sprintf("metrics-%d", time.Now().UnixNano()%1000000)
	port, err := devenv.FreePort("127.0.0.1")
	must(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	k8s := testsupport.RunOperator(t, ns, addr, controllers.Options{ClusterPollInterval: time.Second, IndexResyncInterval: time.Second, MetricsInterval: time.Second, MaxRetryDelay: time.Second})

	table, _ := json.Marshal(autotune.Table{Cores: 2, Results: []autotune.Measurement{
		{SliceCount: 1, Clients: 1, P90Ms: 9, CPUPercent: 10, QPS: 50}, {SliceCount: 2, Clients: 1, P90Ms: 5, CPUPercent: 12, QPS: 90},
	}})
	must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns}, Data: map[string]string{"results.json": string(table)}}))
	must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}}}))
	vi := &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: "observed", Namespace: ns},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, IndexName: ns + "-observed", Shards: 1, Replicas: 0, RefreshInterval: "1s",
			Fields: []v1alpha1.VectorField{{Name: "embedding", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}},
			Search: v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
			Tuning: &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", HysteresisPercent: 5,
				BenchmarkRef: &v1alpha1.BenchmarkReference{ConfigMap: v1alpha1.ConfigMapKeyReference{Name: "bench", Key: "results.json"}}},
			DeletionPolicy: v1alpha1.DeletionPolicyDelete,
		},
	}
	must(t, k8s.Create(ctx, vi))
	defer func() { _ = k8s.Delete(context.Background(), vi) }()
	// A policy snapshotting to an fs repository under the node's path.repo, so the snapshot
	// metrics exist.
	must(t, k8s.Create(ctx, &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "observed", Namespace: ns},
		Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Schedule: "@every 5s",
			Repository: v1alpha1.SnapshotRepository{Name: ns + "-fs", FS: &v1alpha1.FSRepository{Location: ns}},
			Retention:  v1alpha1.SnapshotRetention{MaxCount: ptr.To[int32](2)}},
	}))
	// A Local BenchmarkRun comparing two variants and two representations, so the
	// benchmark dashboard's comparison panels have a run to show.
	must(t, k8s.Create(ctx, &v1alpha1.BenchmarkRun{
		ObjectMeta: metav1.ObjectMeta{Name: "compared", Namespace: ns},
		Spec: v1alpha1.BenchmarkRunSpec{
			IndexRef: v1alpha1.LocalObjectReference{Name: vi.Name},
			Workload: v1alpha1.BenchmarkWorkload{
				Dataset: v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: 500, Queries: 20, Seed: 1}},
				K:       10, Load: "IfIncomplete",
				Warmup: metav1.Duration{Duration: 200 * time.Millisecond}, Duration: metav1.Duration{Duration: time.Second},
			},
			SliceCounts: []int32{1}, Clients: []int32{1},
			Variants:        []v1alpha1.BenchmarkVariant{{Name: "all", Nodes: "*"}, {Name: "local", Nodes: "_local"}},
			Representations: []v1alpha1.VectorRepresentation{"float", "byte"}, RecallTarget: "0.9",
			Runner: v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerLocal},
		},
	}))
	osClient, err := opensearch.New(opensearch.Config{Endpoint: url})
	must(t, err)

	used := vptest.UsedMetrics(t)
	var missing []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(vi), vi)
		_, _ = osClient.Search(ctx, vi.Spec.IndexName, opensearch.KNNQuery("embedding", make([]float32, 8), 1))
		if !meta.IsStatusConditionTrue(vi.Status.Conditions, v1alpha1.ConditionTuned) {
			continue
		}
		exported := scrape(t, "http://"+addr+"/metrics")
		missing = missing[:0]
		for _, name := range used {
			if !exported[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			t.Logf("all %d metric names used by dashboards and alerts are exported", len(used))
			break
		}
	}
	if len(missing) > 0 {
		t.Fatalf("metrics used by dashboards or alerts but not exported: %s", strings.Join(missing, ", "))
	}

	// A real Prometheus scrapes the operator while the index serves a bounded query load;
	// then every panel query of every dashboard runs through it with the dashboard's own
	// variables resolved as Grafana resolves them.
	prom, err := devenv.StartPrometheus(testsupport.Root(t), addr, vptest.WriteRuleGroups(t, t.TempDir(), false))
	must(t, err)
	defer func() { _ = prom.Stop() }()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		_, _ = osClient.Search(ctx, vi.Spec.IndexName, opensearch.KNNQuery("embedding", make([]float32, 8), 1))
	}
	checkPanels(t, prom)

	// The shipped alert rules (their `for` dropped) on real conditions: a policy that stops
	// taking snapshots, and an index whose SearchCluster goes away; each fires, then
	// resolves once the condition clears.
	policy := &v1alpha1.SnapshotPolicy{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "observed"}, policy))
	setSuspend := func(suspend bool) {
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(policy), policy))
		policy.Spec.Suspend = suspend
		must(t, k8s.Update(ctx, policy))
	}
	alertCycle(t, prom, "VectorpilotSnapshotStale", map[string]string{"policy": "observed"},
		func() { setSuspend(true) }, func() { setSuspend(false) })
	cluster := &v1alpha1.SearchCluster{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vectors"}, cluster))
	alertCycle(t, prom, "VectorpilotIndexNotReady", map[string]string{"index": "observed"},
		func() { must(t, k8s.Delete(ctx, cluster)) },
		func() {
			must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns}, Spec: cluster.Spec}))
		})
}

// alertCycle causes a condition, waits for the alert with those labels to fire, clears the
// condition and waits for the alert to go; it logs both times.
func alertCycle(t *testing.T, prom *devenv.Prometheus, alert string, labels map[string]string, cause, undo func()) {
	t.Helper()
	firing := func() bool {
		alerts, err := prom.API.Alerts(t.Context())
		must(t, err)
		for _, a := range alerts.Alerts {
			match := a.Labels[model.AlertNameLabel] == model.LabelValue(alert) && a.State == promv1.AlertStateFiring
			for k, v := range labels {
				match = match && a.Labels[model.LabelName(k)] == model.LabelValue(v)
			}
			if match {
				return true
			}
		}
		return false
	}
	wait := func(want bool, what string) time.Time {
		for deadline := time.Now().Add(90 * time.Second); firing() != want; time.Sleep(500 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s not %s after 90s", alert, what)
			}
		}
		return time.Now()
	}
	if firing() {
		t.Fatalf("%s fires before its condition", alert)
	}
	caused := time.Now()
	cause()
	fired := wait(true, "firing")
	undo()
	resolved := wait(false, "resolved")
	t.Logf("%s: condition at %s, firing at %s (+%s), cleared then resolved at %s (+%s)", alert,
		caused.Format("15:04:05"), fired.Format("15:04:05"), fired.Sub(caused).Round(time.Second),
		resolved.Format("15:04:05"), resolved.Sub(fired).Round(time.Second))
}

// rateInterval stands for Grafana's $__rate_interval: four scrape intervals and more.
const rateInterval = "15s"

// checkPanels runs every target of every dashboard under dashboards/ and wants each to
// return at least one series, every value finite — or, for a panel that declares what
// empty means (noValue), nothing; it logs the table panel → series → sample value.
func checkPanels(t *testing.T, prom *devenv.Prometheus) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testsupport.Root(t), "dashboards", "*.json"))
	must(t, err)
	// The metrics' types as Prometheus learnt them from the scrape.
	metadata, err := prom.API.Metadata(t.Context(), "", "")
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
		vars := map[string]string{"__rate_interval": rateInterval}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(string)
			vars[v.Name] = resolveVariable(t, prom, expand(q, vars))
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
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
				for _, problem := range dashboards.CheckTarget(p.FieldConfig.Defaults.Unit, target.Expr, types) {
					t.Errorf("%s / %s: %s (%s)", name, p.Title, problem, target.Expr)
				}
				for _, u := range dashboards.Metrics(target.Expr) {
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
						// The legend names labels the series really carry, or Grafana draws
						// them blank (and every line of the panel alike).
						for _, l := range dashboards.LegendLabels(target.LegendFormat) {
							if s.Metric[model.LabelName(l)] == "" {
								t.Errorf("%s / %s: legend %q names %s, which series %v lacks", name, p.Title, target.LegendFormat, l, s.Metric)
							}
						}
					}
					for _, problem := range dashboards.CheckValues(p.FieldConfig.Defaults.Unit, values) {
						t.Errorf("%s / %s: %s (%s)", name, p.Title, problem, expr)
					}
				}
				fmt.Fprintf(&table, "%-12s %-52.52s %-11s %6d %s\n", name, p.Title, p.FieldConfig.Defaults.Unit, len(samples), sample)
			}
		}
	}
	t.Logf("dashboard panels against a real Prometheus:\n%s", table.String())
	// The alert rules read the same metrics: no counter without rate, no rate over a gauge.
	for _, g := range vptest.LoadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			for _, problem := range dashboards.CheckTarget("", r.Expr.String(), types) {
				t.Errorf("alert %s: %s (%s)", r.Alert, problem, r.Expr.String())
			}
		}
	}
}

// resolveVariable answers a Grafana label_values(selector, label) variable: the label's
// values among the selected series, as a regular expression of all of them (Grafana's
// "All").
func resolveVariable(t *testing.T, prom *devenv.Prometheus, query string) string {
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
func instantQuery(t *testing.T, prom *devenv.Prometheus, expr string) (model.Vector, error) {
	t.Helper()
	value, _, err := prom.API.Query(t.Context(), expr, time.Now())
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

// scrape reads the metrics endpoint and returns the metric names it serves.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("metrics endpoint served unparseable text: %v", err)
	}
	names := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) > 0 {
			names[name] = true
		}
	}
	return names
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
