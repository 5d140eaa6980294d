// Package observability checks the operator's metrics endpoint against what the dashboards
// and alerts use, with the real parts.
package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
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
	"github.com/vectorpilot/vectorpilot/controllers/operatortest"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
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
	ns, addr, k8s := runObservedOperator(t, "metrics")

	table, _ := json.Marshal(autotune.Table{Cores: 2, Results: []autotune.Measurement{
		{SliceCount: 1, Clients: 1, P90Ms: 9, CPUPercent: 10, QPS: 50}, {SliceCount: 2, Clients: 1, P90Ms: 5, CPUPercent: 12, QPS: 90},
	}})
	must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns}, Data: map[string]string{"results.json": string(table)}}))
	must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}}}))
	vi := &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: "observed", Namespace: ns},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, IndexName: ns + "-observed", Shards: 1, Replicas: 0, RefreshInterval: "1s",
			// faiss, the default engine: its graphs live in the k-NN cache, so the graph
			// memory and cache panels have real, non-zero series to show.
			Fields: []v1alpha1.VectorField{{Name: "embedding", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "faiss", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}},
			Search: v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
			Tuning: &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", HysteresisPercent: 5,
				BenchmarkRef: &v1alpha1.BenchmarkReference{ConfigMap: v1alpha1.ConfigMapKeyReference{Name: "bench", Key: "results.json"}}},
			Recall:         &v1alpha1.RecallSpec{Target: "0.5", K: 10, SampleSize: 10, Interval: &metav1.Duration{Duration: 2 * time.Second}, QueriesPerSecond: 100},
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
	// A secured managed cluster (no kubelet runs its pods here), so the certificate metrics
	// exist: the operator issues its certificates whether or not its nodes answer.
	must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "secured", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0", NodePools: []v1alpha1.NodePool{{Name: "nodes", Replicas: 1, Roles: []v1alpha1.NodeRole{"cluster_manager", "data"}, SIMD: v1alpha1.SIMDAuto}}}}}))
	osClient, err := opensearch.New(opensearch.Config{Endpoint: url})
	must(t, err)

	// The vectors the BenchmarkRun loads (the same generated set), written here so the
	// recall has documents to sample and the queries below search a faiss graph whether
	// or not the run has loaded them yet.
	waitFor(t, "the index", func() bool { _, err := osClient.GetIndex(ctx, vi.Spec.IndexName); return err == nil })
	base, _ := dataset.Generate(dataset.Spec{Count: 500, Queries: 20, Dim: 8, Seed: 1})
	must(t, bench.Ingest(ctx, osClient, vi.Spec.IndexName, "embedding", base, 500, nil))
	must(t, osClient.Refresh(ctx, vi.Spec.IndexName))

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
	shown := vptest.CheckPanels(t, prom.API, devenv.PrometheusScrapeInterval, nil)
	// The k-NN panels showed only zeros while no native engine ran: on a faiss index under
	// load, graph memory is held and the cache is read.
	for _, panel := range []string{"fleet / k-NN graph memory", "index / k-NN graph cache"} {
		if values := shown[panel]; len(values) == 0 || slices.Max(values) <= 0 {
			t.Errorf("%s shows %v on a faiss index under load, want a value above 0", panel, values)
		}
	}

	// The shipped alert rules (their `for` dropped) on real conditions: a policy that stops
	// taking snapshots, an index made red, and an index whose SearchCluster goes away; each
	// fires, then resolves once the condition clears.
	policy := &v1alpha1.SnapshotPolicy{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "observed"}, policy))
	setSuspend := func(suspend bool) {
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(policy), policy))
		policy.Spec.Suspend = suspend
		must(t, k8s.Update(ctx, policy))
	}
	alertCycle(t, prom, "VectorpilotSnapshotStale", map[string]string{"policy": "observed"},
		func() { setSuspend(true) }, func() { setSuspend(false) })
	// Red: a new index whose primary no node may take (the one node excluded from allocation;
	// an index's own copy would be force-allocated back to the node holding it whatever the
	// filters say, so the existing index cannot be made red on one node). On a node of its
	// own: the exclusion is cluster-wide, and make test's shared node serves other packages
	// at the same time (a controllers test's index creation timed out behind it once).
	red, err := devenv.StartNode(testsupport.Root(t), fmt.Sprintf("obs-red-%d", time.Now().UnixNano()%100000), devenv.NodeOptions{})
	must(t, err)
	t.Cleanup(func() { _ = red.Destroy() })
	must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "red", Namespace: ns},
		Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: red.URL}}}))
	unplaced := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "unplaced", Namespace: ns}, Spec: *vi.Spec.DeepCopy()}
	unplaced.Spec.ClusterRef.Name, unplaced.Spec.IndexName, unplaced.Spec.Tuning = "red", ns+"-unplaced", nil
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), unplaced) })
	alertCycle(t, prom, "VectorpilotIndexNotReady", map[string]string{"index": unplaced.Name, "reason": v1alpha1.ReasonIndexHealthRed},
		func() {
			excludeNode(t, red.URL, true)
			must(t, k8s.Create(ctx, unplaced))
		},
		func() { excludeNode(t, red.URL, false) })
	cluster := &v1alpha1.SearchCluster{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vectors"}, cluster))
	alertCycle(t, prom, "VectorpilotIndexNotReady", map[string]string{"index": "observed"},
		func() { must(t, k8s.Delete(ctx, cluster)) },
		func() {
			must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns}, Spec: cluster.Spec}))
		})
}

// runObservedOperator runs the operator in a new namespace named after prefix, polling and
// resyncing every second, its metrics served on a loopback port; it returns the namespace,
// the metrics address and a client.
func runObservedOperator(t *testing.T, prefix string) (string, string, client.Client) {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1000000)
	port, err := devenv.FreePort("127.0.0.1")
	must(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	k8s := operatortest.Run(t, ns, addr, controllers.Options{ClusterPollInterval: time.Second, IndexResyncInterval: time.Second, MetricsInterval: time.Second,
		MaxRetryDelay: time.Second, IndexRedGrace: time.Second})
	return ns, addr, k8s
}

// excludeNode excludes the node from shard allocation, or lifts the exclusion: shards
// already started stay (there is nowhere else), new primaries stay unassigned.
func excludeNode(t *testing.T, url string, exclude bool) {
	t.Helper()
	value := "null"
	if exclude {
		var nodes struct {
			Nodes map[string]struct {
				Name string `json:"name"`
			} `json:"nodes"`
		}
		must(t, json.Unmarshal([]byte(testsupport.Send(t, http.MethodGet, url+"/_nodes/_local?filter_path=nodes.*.name", "")), &nodes))
		for _, n := range nodes.Nodes {
			value = strconv.Quote(n.Name)
		}
	}
	testsupport.Send(t, http.MethodPut, url+"/_cluster/settings", `{"persistent": {"cluster.routing.allocation.exclude._name": `+value+`}}`)
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
				alerts, _ := prom.API.Alerts(t.Context())
				series, _, _ := prom.API.Query(t.Context(), "vectorpilot_index_ready", time.Now())
				t.Fatalf("%s%v not %s after 90s; alerts %+v; vectorpilot_index_ready %v", alert, labels, what, alerts.Alerts, series)
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
