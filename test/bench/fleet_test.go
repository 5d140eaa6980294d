// Package bench measures the operator at fleet scale against the real parts: N
// VectorIndexes applied at once, to all Ready, then left idle. Run with `make bench`.
package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/controllers/operatortest"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	os.Exit(testsupport.Main(m, testsupport.Kube|testsupport.OpenSearch))
}

// idleWindow is how long the fleet is watched at rest; production intervals apply (index
// resync 60s, cluster poll 30s), so a minute shows the steady cost.
const idleWindow = time.Minute

func BenchmarkFleetToReady(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("indexes=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				fleet(b, n)
			}
		})
	}
}

func fleet(b *testing.B, n int) {
	url := testsupport.OpenSearchURL(b)
	ctx := context.Background()
	ns := fmt.Sprintf("fleet-%d-%d", n, time.Now().UnixNano()%100000)
	k8s := operatortest.Run(b, ns, "0", controllers.Options{})

	must(b, k8s.Create(ctx, &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns},
		Spec:       v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}},
	}))
	reqs0, reconciles0 := requests(ns), reconciles()
	start := time.Now()
	for i := 0; i < n; i++ {
		must(b, k8s.Create(ctx, &v1alpha1.VectorIndex{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idx-%04d", i), Namespace: ns},
			Spec: v1alpha1.VectorIndexSpec{
				ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, IndexName: fmt.Sprintf("%s-%04d", ns, i), Shards: 1, Replicas: 0, RefreshInterval: "1s",
				Fields:         []v1alpha1.VectorField{{Name: "embedding", Dimension: 32, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}},
				Search:         v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
				DeletionPolicy: v1alpha1.DeletionPolicyDelete,
			},
		}))
	}
	for {
		var list v1alpha1.VectorIndexList
		must(b, k8s.List(ctx, &list, client.InNamespace(ns)))
		ready := 0
		for _, vi := range list.Items {
			if meta.IsStatusConditionTrue(vi.Status.Conditions, v1alpha1.ConditionReady) {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Since(start) > 20*time.Minute {
			b.Fatalf("only %d of %d Ready after 20 minutes", ready, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	toReady := time.Since(start)
	reqs1, reconciles1 := requests(ns), reconciles()
	rssAtReady := rssMB()
	time.Sleep(idleWindow)
	reqs2 := requests(ns)

	b.ReportMetric(toReady.Seconds(), "s-to-all-ready")
	b.ReportMetric((reqs1-reqs0)/(reconciles1-reconciles0), "os-requests/reconcile")
	b.ReportMetric((reqs1-reqs0)/float64(n), "os-requests/index-to-ready")
	b.ReportMetric((reqs2-reqs1)/float64(n)/idleWindow.Minutes(), "os-requests/index/idle-min")
	b.ReportMetric(rssAtReady, "operator-rss-MB")
	b.Logf("%d indexes: all Ready in %s; %.0f reconciles, %.0f OpenSearch requests to Ready; %.0f requests in %s idle; RSS %.0f MB",
		n, toReady.Round(time.Millisecond), reconciles1-reconciles0, reqs1-reqs0, reqs2-reqs1, idleWindow, rssAtReady)

	// Clean up: the Delete policy removes the indexes from the shared node.
	must(b, k8s.DeleteAllOf(ctx, &v1alpha1.VectorIndex{}, client.InNamespace(ns)))
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var list v1alpha1.VectorIndexList
		must(b, k8s.List(ctx, &list, client.InNamespace(ns)))
		if len(list.Items) == 0 {
			break
		}
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// requests is the operator's OpenSearch request counter for the namespace's cluster.
func requests(ns string) float64 {
	return sumMetric("vectorpilot_opensearch_requests_total", func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == "namespace" && l.GetValue() == ns {
				return true
			}
		}
		return false
	})
}

// reconciles counts VectorIndex reconciles so far, across managers in this process.
func reconciles() float64 {
	return sumMetric("controller_runtime_reconcile_total", func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == "controller" && l.GetValue() == "vectorindex" {
				return true
			}
		}
		return false
	})
}

func sumMetric(name string, match func(*dto.Metric) bool) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if match(m) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// rssMB is this process's resident set: the operator's controllers, caches and clients.
func rssMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}
