package observability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	vptest "github.com/vectorpilot/vectorpilot/test"
)

// TestLiveRecallBelowTargetFiresAndClears runs the operator on an index of 20,000 vectors
// with a live recall objective (0.95 @10) and a real Prometheus evaluating the shipped
// alert rules: at efSearch 100 the measured recall meets the target; efSearch 4 really
// lowers it, and the RecallBelowTarget condition and alert fire; efSearch 100 again clears
// both. The measurement's searches must not count as the clients' load. The field is
// lucene's, whose ef_search is an index setting that changes live (faiss builds it into
// the graph's mapping: TestFaissEfSearchIsABuildParameter).
func TestLiveRecallBelowTargetFiresAndClears(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	ctx := t.Context()
	ns, addr, k8s := runObservedOperator(t, "recall")
	must(t, k8s.Create(ctx, &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}}}))
	vi := &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: "measured", Namespace: ns},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, IndexName: ns + "-measured", Shards: 1, Replicas: 0, RefreshInterval: "1s",
			Fields: []v1alpha1.VectorField{{Name: "embedding", Dimension: 32, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x",
				Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{EfSearch: ptr.To[int32](100)}}}},
			Recall:         &v1alpha1.RecallSpec{Target: "0.95", K: 10, SampleSize: 50, Interval: &metav1.Duration{Duration: 2 * time.Second}, QueriesPerSecond: 200},
			DeletionPolicy: v1alpha1.DeletionPolicyDelete,
		},
	}
	must(t, k8s.Create(ctx, vi))
	defer func() { _ = k8s.Delete(context.Background(), vi) }()
	osClient, err := opensearch.New(opensearch.Config{Endpoint: url})
	must(t, err)
	waitFor(t, "the index", func() bool { _, err := osClient.GetIndex(ctx, vi.Spec.IndexName); return err == nil })
	// One Gaussian cloud rather than tight clusters: a neighbourhood a small candidate list
	// really misses.
	base, _ := dataset.Generate(dataset.Spec{Count: 20000, Queries: 1, Dim: 32, Clusters: 1, Spread: 1, Seed: 21})
	must(t, bench.Ingest(ctx, osClient, vi.Spec.IndexName, "embedding", base, 1000, nil))
	// One segment: the figure then depends on the graph search alone, not on how many
	// segments each return their own k.
	must(t, osClient.ForceMerge(ctx, vi.Spec.IndexName, 1))
	must(t, osClient.Refresh(ctx, vi.Spec.IndexName))

	recallNow := func() (*v1alpha1.RecallStatus, *metav1.Condition) {
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(vi), vi))
		return vi.Status.Recall, meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionRecallBelowTarget)
	}
	// waitRecall waits for a measurement of the current spec whose condition has status.
	waitRecall := func(status metav1.ConditionStatus) *v1alpha1.RecallStatus {
		t.Helper()
		var st *v1alpha1.RecallStatus
		var c *metav1.Condition
		waitFor(t, "RecallBelowTarget "+string(status), func() bool {
			st, c = recallNow()
			return st != nil && st.Value != "" && st.ObservedGeneration == vi.Generation && c != nil && c.Status == status
		}, func() string { return fmt.Sprintf("status.recall %+v, condition %+v", st, c) })
		t.Logf("recall@10 %s over %d queries (ef_search %s); cost %d searches, %d ms in OpenSearch, %d ms wall, CPU %v ms; condition %s: %s",
			st.Value, st.Sample, st.EfSearch, st.Cost.Searches, st.Cost.ServerMillis, st.Cost.DurationMillis, ptr.Deref(st.Cost.CPUMillis, -1), c.Reason, c.Message)
		return st
	}
	setEfSearch := func(ef int32) {
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(vi), vi))
		vi.Spec.Fields[0].Method.Parameters.EfSearch = ptr.To(ef)
		must(t, k8s.Update(ctx, vi))
	}

	before, err := osClient.Stats(ctx, vi.Spec.IndexName)
	must(t, err)
	on := waitRecall(metav1.ConditionFalse)
	if on.Cost == nil || on.Cost.Searches != 2*on.Sample+1 || on.Cost.CPUMillis == nil {
		t.Errorf("cost of a measurement = %+v, want 2 searches per query plus the sample draw, and the CPU read", on.Cost)
	}
	after, err := osClient.Stats(ctx, vi.Spec.IndexName)
	must(t, err)
	if after.Searches != before.Searches {
		t.Errorf("the index's client searches went %d → %d with only recall measurements running: they would count as the tuner's live load", before.Searches, after.Searches)
	}

	prom, err := devenv.StartPrometheus(testsupport.Root(t), addr, vptest.WriteRuleGroups(t, t.TempDir(), false))
	must(t, err)
	defer func() { _ = prom.Stop() }()
	alertCycle(t, prom, "VectorpilotRecallBelowTarget", map[string]string{"index": vi.Name, "field": "embedding", "k": "10"},
		func() {
			setEfSearch(4)
			below := waitRecall(metav1.ConditionTrue)
			if below.EfSearch != "4" {
				t.Errorf("the low recall was measured at ef_search %q, want 4", below.EfSearch)
			}
		},
		func() {
			setEfSearch(100)
			waitRecall(metav1.ConditionFalse)
		})
	// Each crossing is an Event: Warning below, Normal back on target, once each.
	for reason, kind := range map[string]string{v1alpha1.ReasonRecallBelowTarget: corev1.EventTypeWarning, v1alpha1.ReasonRecallOnTarget: corev1.EventTypeNormal} {
		var seen []string
		waitFor(t, reason+" event", func() bool {
			var list eventsv1.EventList
			must(t, k8s.List(ctx, &list, client.InNamespace(ns)))
			seen = seen[:0]
			for _, ev := range list.Items {
				if ev.Regarding.Name == vi.Name && ev.Reason == reason {
					seen = append(seen, ev.Type+": "+ev.Note)
				}
			}
			return len(seen) > 0
		}, func() string { return fmt.Sprint(seen) })
		if len(seen) != 1 || !strings.HasPrefix(seen[0], kind+": ") {
			t.Errorf("%s events = %q, want one %s", reason, seen, kind)
		}
	}
}

// waitFor polls cond for up to two minutes; details, if given, say what was seen last.
func waitFor(t *testing.T, what string, cond func() bool, details ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			seen := ""
			for _, d := range details {
				seen += "; " + d()
			}
			t.Fatalf("no %s after 2m%s", what, seen)
		}
	}
}
