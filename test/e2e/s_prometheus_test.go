package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	vptest "github.com/vectorpilot/vectorpilot/test"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// TestPrometheusScrapesTheOperatorThroughItsServiceMonitor (after the rolling tests, before
// the teardown): the Prometheus Operator (installed from its release bundle, test/sandbox)
// configures the Prometheus this test creates from the chart's ServiceMonitor and
// PrometheusRule; that Prometheus, in a pod, discovers the
// operator's metrics Service, scrapes the operator pod over HTTPS with its service account
// token (allowed by the chart's metrics-reader role), loads and evaluates the chart's alert
// rules without error, and every dashboard panel's query returns data from its series while
// the sandbox index, benchmarked and tuned, serves queries.
func TestPrometheusScrapesTheOperatorThroughItsServiceMonitor(t *testing.T) {
	integration(t)
	ctx := t.Context()
	if err := box.CreatePrometheus(); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	waitFor(t, 3*time.Minute, "the Prometheus pod Ready", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: sandbox.MonitoringNamespace, Name: "prometheus-vectorpilot-0"}, &pod)
		if err != nil {
			return false, err.Error()
		}
		return managed.PodReady(&pod), fmt.Sprintf("phase %s, conditions %+v", pod.Status.Phase, pod.Status.Conditions)
	})
	c, err := promapi.NewClient(promapi.Config{Address: fmt.Sprintf("http://%s:9090", pod.Status.PodIP)})
	if err != nil {
		t.Fatal(err)
	}
	prom := promv1.NewAPI(c)

	// The ServiceMonitor's one endpoint is one scrape pool, named as the Prometheus
	// Operator names it; its target is the operator pod.
	pool := fmt.Sprintf("serviceMonitor/%s/%s/0", operatorNamespace, sandbox.OperatorDeployment())
	var target promv1.ActiveTarget
	waitFor(t, 2*time.Minute, "the ServiceMonitor's target up", func() (bool, string) {
		targets, err := prom.Targets(ctx)
		if err != nil {
			return false, err.Error()
		}
		var pools []string
		for _, tg := range targets.Active {
			pools = append(pools, tg.ScrapePool)
			if tg.ScrapePool == pool {
				target = tg
				return tg.Health == promv1.HealthGood, fmt.Sprintf("target %s %s: %s", tg.ScrapeURL, tg.Health, tg.LastError)
			}
		}
		return false, fmt.Sprintf("no target in %s; pools %v", pool, pools)
	})
	operator := operatorPod(t)
	t.Logf("target %s up (last scrape %s, %.3fs): labels %v", target.ScrapeURL, target.LastScrape.Format(time.TimeOnly), target.LastScrapeDuration, target.Labels)
	if want := fmt.Sprintf("https://%s:", operator.Status.PodIP); !strings.HasPrefix(target.ScrapeURL, want) {
		t.Errorf("target %s, want the operator pod over HTTPS (%s…)", target.ScrapeURL, want)
	}
	if target.Labels["pod"] != model.LabelValue(operator.Name) || target.Labels["namespace"] != model.LabelValue(operatorNamespace) {
		t.Errorf("target labels %v do not name the operator pod %s/%s", target.Labels, operatorNamespace, operator.Name)
	}

	// Every alert rule of the chart's PrometheusRule is loaded and evaluates cleanly.
	want := map[string]bool{}
	for _, g := range vptest.LoadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			want[r.Alert+r.Record] = true
		}
	}
	waitFor(t, time.Minute, "the chart's rules evaluated", func() (bool, string) {
		rules, err := prom.Rules(ctx, nil)
		if err != nil {
			return false, err.Error()
		}
		var problems []string
		seen := map[string]bool{}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				name, health, lastError, evaluated := ruleState(r)
				if !want[name] {
					continue
				}
				seen[name] = true
				if health != promv1.RuleHealthGood || evaluated.IsZero() {
					problems = append(problems, fmt.Sprintf("%s: %s %s (evaluated %s)", name, health, lastError, evaluated))
				}
			}
		}
		for name := range want {
			if !seen[name] {
				problems = append(problems, name+": not loaded")
			}
		}
		sort.Strings(problems)
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	t.Logf("all %d rules of the chart's PrometheusRule loaded and evaluated", len(want))

	// The operator's series keep the namespace of the object they describe (the
	// ServiceMonitor honours their labels), not the operator's.
	ready, _, err := prom.Query(ctx, `vectorpilot_index_ready{index="docs"}`, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ready.(model.Vector); !ok || len(v) != 1 || v[0].Metric["namespace"] != searchNamespace {
		t.Errorf("vectorpilot_index_ready of the sandbox index: %v, want one series with namespace=%q", ready, searchNamespace)
	}

	// What the benchmark and index dashboards show: a Local run on the sandbox index comparing
	// two SIMD variants and two representations, and the index tuned from it.
	index := &v1alpha1.VectorIndex{}
	if err := readSandbox("vectorindex-managed.yaml", index); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: index.Name}, index); err != nil {
		t.Fatalf("the sandbox index (TestManagedClusterServesVectorsFromPods makes it): %v", err)
	}
	run := sandbox.RecallRun(searchNamespace, "dashboards", index.Name, documents, 1)
	run.Spec.Workload.Duration = metav1.Duration{Duration: 2 * time.Second}
	// Two variants over nodes that together hold every shard (here: one pool).
	run.Spec.Variants = []v1alpha1.BenchmarkVariant{{Name: "all", Nodes: "*"}, {Name: "data", Nodes: "data:true"}}
	run.Spec.Representations = []v1alpha1.VectorRepresentation{"float", "byte"}
	run.Spec.RecallTarget = "0.9"
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), run) })
	if err := box.WaitSucceeded(ctx, run, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	setTuning(t, index, &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 25, MinGainPerCPUPercent: "1", HysteresisPercent: 5})
	t.Cleanup(func() { setTuning(t, index, nil) })
	waitFor(t, time.Minute, "the index tuned", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(index), index); err != nil {
			return false, err.Error()
		}
		tuned := meta.FindStatusCondition(index.Status.Conditions, v1alpha1.ConditionTuned)
		return tuned != nil && tuned.Status == metav1.ConditionTrue, fmt.Sprintf("Tuned condition %+v", tuned)
	})

	// A live recall objective, so the recall panels have series: measured by the operator
	// in its pod against the cluster's pods.
	patchSpec(t, index, func(s *v1alpha1.VectorIndexSpec) {
		s.Recall = &v1alpha1.RecallSpec{Target: "0.9", K: 10, SampleSize: 10, Interval: &metav1.Duration{Duration: 10 * time.Second}, QueriesPerSecond: 50}
	})
	t.Cleanup(func() { patchSpec(t, index, func(s *v1alpha1.VectorIndexSpec) { s.Recall = nil }) })
	waitFor(t, 2*time.Minute, "the index's live recall measured", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(index), index); err != nil {
			return false, err.Error()
		}
		st := index.Status.Recall
		return st != nil && st.Value != "", fmt.Sprintf("status.recall %+v", st)
	})
	t.Logf("live recall@10 of the sandbox index, measured by the operator's pod: %s over %d sampled documents (%d searches)",
		index.Status.Recall.Value, index.Status.Recall.Sample, index.Status.Recall.Cost.Searches)

	// Every panel, over what this Prometheus scraped while the index served queries for
	// several of its scrapes.
	oc, err := opensearch.New(opensearch.Config{Endpoint: clientServiceURL(t, sandboxCluster(t))})
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(6 * sandbox.StatsInterval); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		_, _ = oc.Search(ctx, index.Spec.IndexName, opensearch.KNNQuery(index.Spec.Fields[0].Name, make([]float32, index.Spec.Fields[0].Dimension), 10))
	}
	vptest.CheckPanels(t, prom, sandbox.StatsInterval, map[string]string{
		"snapshots": "the sandbox cluster has no snapshot repository; test/observability runs these panels over a real policy's series"})
}

// ruleState is what the rules API says of an alerting or a recording rule.
func ruleState(r any) (name string, health promv1.RuleHealth, lastError string, evaluated time.Time) {
	switch r := r.(type) {
	case promv1.AlertingRule:
		return r.Name, r.Health, r.LastError, r.LastEvaluation
	case promv1.RecordingRule:
		return r.Name, r.Health, r.LastError, r.LastEvaluation
	}
	return "", "", fmt.Sprintf("a rule of type %T", r), time.Time{}
}
