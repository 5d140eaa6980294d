package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/observe"
)

// BenchmarkMetricsCollectionCost measures the requests the metrics collector sends one
// cluster per poll with 1 and with 100 VectorIndexes on it.
func BenchmarkMetricsCollectionCost(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("indexes=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				metricsCost(b, n)
			}
		})
	}
}

func metricsCost(b *testing.B, n int) {
	url := testsupport.OpenSearchURL(b)
	cp := testsupport.ControlPlane(b)
	ctx := context.Background()
	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	must(b, err)
	ns := fmt.Sprintf("mcost-%d-%d", n, time.Now().UnixNano()%100000)
	must(b, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns}, Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}}}
	must(b, k8s.Create(ctx, sc))
	conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Ready, v1alpha1.ReasonReconciled, "marked ready by the benchmark")
	must(b, k8s.Status().Update(ctx, sc))
	for i := 0; i < n; i++ {
		must(b, k8s.Create(ctx, &v1alpha1.VectorIndex{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idx-%04d", i), Namespace: ns},
			Spec: v1alpha1.VectorIndexSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Shards: 1, RefreshInterval: "1s",
				Fields:         []v1alpha1.VectorField{{Name: "v", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}},
				Search:         v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
				DeletionPolicy: v1alpha1.DeletionPolicyRetain},
		}))
	}
	const polls = 5
	c := &observe.Collector{Reader: k8s, Resolver: &connect.Resolver{Reader: k8s}}
	before := gather().requests(ns)
	for i := 0; i < polls; i++ {
		c.Poll(ctx)
	}
	perPoll := (gather().requests(ns) - before) / polls
	b.ReportMetric(perPoll, "os-requests/poll")
	b.ReportMetric(perPoll*2, "os-requests/min-at-30s-interval")
	b.Logf("%d indexes: %.1f OpenSearch requests per poll, %.0f per minute at the default 30s interval", n, perPoll, perPoll*2)
}
