// Package bench measures the operator at fleet scale against the real parts: N
// VectorIndexes applied at once, to all Ready, then left idle. Run with `make bench`.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/procfs"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
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
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	os.Exit(testsupport.Main(m, testsupport.Kube|testsupport.OpenSearch))
}

// The fleet is watched at rest for idleWindows minutes; production intervals apply (index
// resync 60s, cluster poll 30s). An index's first resync after Ready reads the index (no
// catalogue had seen it yet, internal/lastread), so the first minute is reported apart
// from the steady ones after it.
const idleWindows = 3

// BenchmarkFleetToReady applies each of FLEET_SIZES (default 100,500) VectorIndexes at once
// (FLEET_SIZES=100,500,5000 OPENSEARCH_HEAP=4g for #43's fleet), and then has the node
// create the same indexes with no operator, for the time the node alone needs.
func BenchmarkFleetToReady(b *testing.B) {
	sizes := []int{100, 500}
	if env := os.Getenv("FLEET_SIZES"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("FLEET_SIZES=%q: want sizes like 100,500,5000", env)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
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
	// FLEET_INDEX_WORKERS sets the operator's --index-workers (its default when unset), and
	// how many creates the node-alone phase sends at once.
	workers, _ := strconv.Atoi(os.Getenv("FLEET_INDEX_WORKERS"))
	var sent requestKinds
	opts := controllers.Options{IndexWorkers: workers, ObserveRequest: sent.observe}.WithDefaults()
	k8s := operatortest.Run(b, ns, "0", opts)
	// One shard each: past OpenSearch's default 1,000 shards per node the node refuses
	// new indexes, so the limit follows the fleet while it runs.
	testsupport.Send(b, "PUT", url+"/_cluster/settings", fmt.Sprintf(`{"persistent":{"cluster.max_shards_per_node":%d}}`, max(1000, 2*n)))
	b.Cleanup(func() {
		testsupport.Send(b, "PUT", url+"/_cluster/settings", `{"persistent":{"cluster.max_shards_per_node":null}}`)
	})

	must(b, k8s.Create(ctx, &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: ns},
		Spec:       v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}},
	}))
	before := gather()
	reqs0, reconciles0, latency0 := before.requests(ns), before.reconciles(), before.reconcileLatency()
	sent.reset()
	cpu0 := cpuNow(b)
	start := time.Now()
	for i := 0; i < n; i++ {
		must(b, k8s.Create(ctx, fleetIndex(ns, i)))
	}
	maxDepth := 0.0
	// The operator's own Ready gauge is polled once a second; the API is listed only to
	// confirm what it says. Listing 5,000 objects every 200 ms, as this loop did, kept the
	// apiserver at 31-57 % of a core beside the node whose index creation is the bound.
	// Reading the gauge is not free either: a gather has the operator's collector build
	// every index's series, and ten a second took a third of this process's CPU at 2,000
	// indexes (Prometheus gathers once a scrape). Each poll reads the gauge and the queue
	// depth from one gather.
	//
	// A line a minute while the fleet converges: how fast indexes turn Ready, and what the
	// operator asked of OpenSearch meanwhile, so a slow run says where it slowed.
	nextProgress := start.Add(time.Minute)
	for {
		now := gather()
		maxDepth = max(maxDepth, now.queueDepth())
		ready := int(now.sum("vectorpilot_index_ready", "namespace", ns))
		if ready == n && readyInAPI(b, k8s, ns) == n {
			break
		}
		if time.Since(start) > 20*time.Minute {
			b.Fatalf("only %d of %d Ready after 20 minutes", readyInAPI(b, k8s, ns), n)
		}
		if time.Now().After(nextProgress) {
			nextProgress = nextProgress.Add(time.Minute)
			b.Logf("%s: %d of %d Ready, work queue depth %.0f, %.0f reconciles, %.0f OpenSearch requests so far",
				time.Since(start).Round(time.Second), ready, n, now.queueDepth(), now.reconciles()-reconciles0, now.requests(ns)-reqs0)
		}
		time.Sleep(time.Second)
	}
	toReady := time.Since(start)
	cpuToReady := cpuNow(b).minus(cpu0)
	kindsToReady := sent.reset()
	atReady := gather()
	reqs1, reconciles1 := atReady.requests(ns), atReady.reconciles()
	p99 := atReady.reconcileLatency().minus(latency0).quantileBound(0.99)
	rssAtReady := rssMB(b)
	time.Sleep(time.Minute)
	reqs2 := gather().requests(ns)
	time.Sleep((idleWindows - 1) * time.Minute)
	reqs3 := gather().requests(ns)
	steadyIdle := (reqs3 - reqs2) / float64(n) / (idleWindows - 1)

	b.ReportMetric(toReady.Seconds(), "s-to-all-ready")
	b.ReportMetric((reqs1-reqs0)/(reconciles1-reconciles0), "os-requests/reconcile")
	b.ReportMetric((reqs1-reqs0)/float64(n), "os-requests/index-to-ready")
	b.ReportMetric((reqs2-reqs1)/float64(n), "os-requests/index/first-idle-min")
	b.ReportMetric(steadyIdle, "os-requests/index/idle-min")
	b.ReportMetric(rssAtReady, "operator-rss-MB")
	b.ReportMetric(p99, "p99-reconcile-s-at-most")
	b.ReportMetric(maxDepth, "max-queue-depth")
	b.Logf("%d indexes: all Ready in %s; %.0f reconciles (p99 at most %gs), work queue depth up to %.0f, %.0f OpenSearch requests to Ready; idle, %.0f requests in the first minute and %.0f in the %d after; RSS %.0f MB",
		n, toReady.Round(time.Millisecond), reconciles1-reconciles0, p99, maxDepth, reqs1-reqs0, reqs2-reqs1, reqs3-reqs2, idleWindows-1, rssAtReady)

	// The Delete policy removes the indexes from the shared node; the node alone then
	// creates the same fleet on the node as the operator found it.
	must(b, k8s.DeleteAllOf(ctx, &v1alpha1.VectorIndex{}, client.InNamespace(ns)))
	deleting := time.Now()
	for {
		var list v1alpha1.VectorIndexList
		must(b, k8s.List(ctx, &list, client.InNamespace(ns)))
		if len(list.Items) == 0 {
			break
		}
		if time.Since(deleting) > 20*time.Minute {
			b.Fatalf("%d of %d VectorIndexes still there 20 minutes after they were deleted", len(list.Items), n)
		}
		time.Sleep(time.Second)
	}
	b.Logf("%d indexes: deleted with their OpenSearch indexes in %s", n, time.Since(deleting).Round(time.Second))
	cpu1 := cpuNow(b)
	alone := nodeAlone(b, ns, n, opts.IndexWorkers)
	cpuAlone := cpuNow(b).minus(cpu1)
	b.ReportMetric(alone.Seconds(), "s-node-alone")
	b.ReportMetric(toReady.Seconds()/alone.Seconds(), "to-ready/node-alone")
	b.ReportMetric(cpuToReady.node/cpuAlone.node, "node-cpu-s/node-alone")
	b.Logf("%d indexes: the node alone created them in %s, the operator took %.2f times that to all Ready; its requests to Ready, per index: %s",
		n, alone.Round(time.Millisecond), toReady.Seconds()/alone.Seconds(), perIndex(kindsToReady, n))
	b.Logf("%d indexes: CPU to all Ready: %s; the node alone: %s", n, cpuToReady.String(toReady), cpuAlone.String(alone))
}

// cpuSpent is CPU time, in seconds, spent by the processes of a fleet's run.
type cpuSpent struct {
	// node is the OpenSearch node's.
	node float64
	// controlPlane is this process's children's: kube-apiserver and etcd.
	controlPlane float64
	// operator is this process's: the operator's controllers and the benchmark's polling
	// of its metrics, and the node-alone phase's client.
	operator float64
	// machine is every core's busy time, whatever spent it.
	machine float64
}

// cpuNow is the CPU time the run's processes have spent so far: where the time to Ready
// goes on a machine the node, the control plane and the operator share.
func cpuNow(b *testing.B) cpuSpent {
	fs, err := procfs.NewDefaultFS()
	must(b, err)
	cpuOf := func(pid int) float64 {
		p, err := fs.Proc(pid)
		must(b, err)
		stat, err := p.Stat()
		must(b, err)
		return stat.CPUTime()
	}
	self := os.Getpid()
	out := cpuSpent{node: cpuOf(testsupport.OpenSearchPID(b)), operator: cpuOf(self)}
	procs, err := fs.AllProcs()
	must(b, err)
	for _, p := range procs {
		// A process may end between the listing and its read; it is none of ours.
		if stat, err := p.Stat(); err == nil && stat.PPID == self {
			out.controlPlane += stat.CPUTime()
		}
	}
	machine, err := fs.Stat()
	must(b, err)
	t := machine.CPUTotal
	out.machine = t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal
	return out
}

func (c cpuSpent) minus(earlier cpuSpent) cpuSpent {
	return cpuSpent{node: c.node - earlier.node, controlPlane: c.controlPlane - earlier.controlPlane,
		operator: c.operator - earlier.operator, machine: c.machine - earlier.machine}
}

// String says the CPU time spent over wall, by process, each also as cores busy on average.
func (c cpuSpent) String(wall time.Duration) string {
	cores := func(s float64) string { return fmt.Sprintf("%.0f s (%.2f cores)", s, s/wall.Seconds()) }
	return fmt.Sprintf("node %s, control plane %s, operator %s, machine %s of %d",
		cores(c.node), cores(c.controlPlane), cores(c.operator), cores(c.machine), runtime.NumCPU())
}

// fleetIndex is the i-th VectorIndex of the fleet in namespace ns.
func fleetIndex(ns string, i int) *v1alpha1.VectorIndex {
	return &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idx-%04d", i), Namespace: ns},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, IndexName: fmt.Sprintf("%s-%04d", ns, i), Shards: 1, Replicas: 0, RefreshInterval: "1s",
			Fields:         []v1alpha1.VectorField{{Name: "embedding", Dimension: 32, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}},
			Search:         v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
			DeletionPolicy: v1alpha1.DeletionPolicyDelete,
		},
	}
}

// nodeAlone is how long the node takes to create the fleet's n indexes with no operator:
// the create requests the operator sends for them (internal/indexspec's settings, mapping
// and _meta), as many at once as the operator has workers. Each create returns once its
// primary is active, which with no replicas is the index green. Creating an index is a
// cluster-state update whoever asks, so this is the bound the operator's time to Ready is
// read against, measured in the same run. The indexes are deleted before it returns.
func nodeAlone(b *testing.B, ns string, n, workers int) time.Duration {
	b.Helper()
	node := testsupport.OpenSearchClient(b)
	defer testsupport.Send(b, "DELETE", testsupport.OpenSearchURL(b)+"/alone-"+ns+"-*", "")
	creates, ctx := errgroup.WithContext(context.Background())
	creates.SetLimit(workers)
	start := time.Now()
	for i := range n {
		creates.Go(func() error {
			vi := fleetIndex(ns, i)
			props, err := indexspec.Properties(&vi.Spec)
			if err != nil {
				return err
			}
			owner := indexspec.Owner{Namespace: ns, Name: vi.Name, UID: fmt.Sprint(i)}
			return node.CreateIndex(ctx, "alone-"+vi.Spec.IndexName, indexspec.CreateSettings(&vi.Spec), props, indexspec.MetaOf(owner))
		})
	}
	must(b, creates.Wait())
	return time.Since(start)
}

// requestKinds counts the operator's OpenSearch requests by the action they need
// (internal/opensearch's rules), so a fleet's cost per index reads by kind.
type requestKinds struct {
	mu    sync.Mutex
	kinds map[string]int
}

func (r *requestKinds) observe(req opensearch.SentRequest) {
	kind := req.Method + " " + req.Path
	if p, ok := opensearch.PermissionsOf(req.Method, req.Path); ok {
		kind = strings.Join(slices.Concat(p.Cluster, p.Index), "+")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = map[string]int{}
	}
	r.kinds[kind]++
}

// reset returns the counts so far and starts again from none.
func (r *requestKinds) reset() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.kinds
	r.kinds = nil
	return out
}

// perIndex lists request counts by kind, most first, each as requests per index.
func perIndex(kinds map[string]int, n int) string {
	names := slices.SortedFunc(maps.Keys(kinds), func(a, b string) int { return cmp.Or(kinds[b]-kinds[a], strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %.2f", k, float64(kinds[k])/float64(n))
	}
	return strings.Join(parts, ", ")
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// gathered is one gather of the operator's registry: each costs the operator's collectors
// a pass over every index's series, so a poll reads all it needs from one.
type gathered []*dto.MetricFamily

func gather() gathered {
	families, _ := ctrlmetrics.Registry.Gather()
	return families
}

func (g gathered) named(name string) []*dto.Metric {
	for _, f := range g {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

// sum adds the counter's or gauge's series whose label key is value (a series has one of
// the two; the other reads 0).
func (g gathered) sum(name, key, value string) float64 {
	var sum float64
	for _, m := range g.named(name) {
		if label(m, key) == value {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// requests is the operator's OpenSearch request counter for the namespace's cluster.
func (g gathered) requests(ns string) float64 {
	return g.sum("vectorpilot_opensearch_requests_total", "namespace", ns)
}

// reconciles counts VectorIndex reconciles so far, across managers in this process.
func (g gathered) reconciles() float64 {
	return g.sum("controller_runtime_reconcile_total", "controller", "vectorindex")
}

// queueDepth is the VectorIndex controller's work queue depth.
func (g gathered) queueDepth() float64 {
	return g.sum("workqueue_depth", "name", "vectorindex")
}

// readyInAPI counts the namespace's VectorIndexes whose Ready condition is True.
func readyInAPI(b *testing.B, k8s client.Client, ns string) int {
	var list v1alpha1.VectorIndexList
	must(b, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	ready := 0
	for _, vi := range list.Items {
		if meta.IsStatusConditionTrue(vi.Status.Conditions, v1alpha1.ConditionReady) {
			ready++
		}
	}
	return ready
}

// latencyBuckets are the cumulative counts of a reconcile-time histogram by upper bound.
type latencyBuckets map[float64]uint64

// reconcileLatency is controller-runtime's VectorIndex reconcile-time histogram so far.
func (g gathered) reconcileLatency() latencyBuckets {
	out := latencyBuckets{}
	for _, m := range g.named("controller_runtime_reconcile_time_seconds") {
		if label(m, "controller") != "vectorindex" {
			continue
		}
		for _, bucket := range m.GetHistogram().GetBucket() {
			out[bucket.GetUpperBound()] += bucket.GetCumulativeCount()
		}
	}
	return out
}

func (l latencyBuckets) minus(earlier latencyBuckets) latencyBuckets {
	out := latencyBuckets{}
	for bound, n := range l {
		out[bound] = n - earlier[bound]
	}
	return out
}

// quantileBound is the smallest bucket bound at or under which a fraction q of the
// reconciles ended: the quantile is at most that (the buckets do not say where inside).
func (l latencyBuckets) quantileBound(q float64) float64 {
	bounds := slices.Sorted(maps.Keys(l))
	if len(bounds) == 0 {
		return math.NaN()
	}
	total := l[bounds[len(bounds)-1]]
	for _, bound := range bounds {
		if float64(l[bound]) >= q*float64(total) {
			return bound
		}
	}
	return math.Inf(1)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rssMB is this process's resident set: the operator's controllers, caches and clients.
func rssMB(b *testing.B) float64 {
	self, err := procfs.Self()
	must(b, err)
	status, err := self.NewStatus()
	must(b, err)
	return float64(status.VmRSS) / (1 << 20)
}
