// Package metrics holds the operator's own Prometheus metrics, registered with
// controller-runtime's registry so they are served on the manager's metrics endpoint.
package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vectorpilot/vectorpilot/internal/version"
)

// OpenSearchRequests counts HTTP requests the operator sent to each cluster: the cost of
// managing it, and the figure to watch for hot loops.
var OpenSearchRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vectorpilot_opensearch_requests_total",
	Help: "HTTP requests sent by the operator to an OpenSearch cluster.",
}, []string{"namespace", "cluster"})

func init() {
	ctrlmetrics.Registry.MustRegister(OpenSearchRequests)
}

// BuildInfo is 1, labelled with the running operator's release and source revision: which
// operator a fleet runs, and when it changed.
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "vectorpilot_build_info",
	Help: "Always 1; the labels say which vectorpilot runs (release, source revision, Go version).",
}, []string{"version", "revision", "goversion"})

func init() {
	info := version.Get()
	BuildInfo.WithLabelValues(info.Version, info.Revision, info.GoVersion).Set(1)
	ctrlmetrics.Registry.MustRegister(BuildInfo)
}

// CRDOutdated is 1 for each of the operator's CRDs that lacks fields or versions the
// operator needs (internal/crds), 0 once it has them: while any is 1 the controllers do not
// run.
var CRDOutdated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "vectorpilot_crd_outdated",
	Help: "1 while the installed CRD lacks fields or versions this operator needs (its controllers wait), else 0.",
}, []string{"crd"})

func init() {
	ctrlmetrics.Registry.MustRegister(CRDOutdated)
}

// sliceCount is the slice setting the operator applies to an index, by where it came from.
var sliceCount = newIndexGauge(prometheus.GaugeOpts{
	Name: "vectorpilot_index_slice_count",
	Help: "Slice setting applied to an index (1 = concurrent search off, 0 = Lucene's default slicing, N = N slices), by source.",
}, []string{"namespace", "index", "source"})

// SetSliceCount records the slice setting applied to an index and where it came from.
func SetSliceCount(namespace, index, source string, count float64) {
	sliceCount.set(namespace, index, count, namespace, index, source)
}

// TunerDecisions counts the autotuner's decisions that changed or kept an index's setting.
var TunerDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vectorpilot_tuner_decisions_total",
	Help: "Autotuner decisions per index, by kind (changed, kept).",
}, []string{"namespace", "index", "kind"})

func init() {
	ctrlmetrics.Registry.MustRegister(sliceCount, TunerDecisions)
}

// indexReady is 1 while a VectorIndex's Ready condition is True.
var indexReady = newIndexGauge(prometheus.GaugeOpts{
	Name: "vectorpilot_index_ready",
	Help: "1 while the VectorIndex is Ready, 0 otherwise; the reason label says why not.",
}, []string{"namespace", "cluster", "index", "reason"})

// SetIndexReady records whether a VectorIndex is Ready, and the reason when it is not.
func SetIndexReady(namespace, cluster, index, reason string, ready bool) {
	value := 0.0
	if ready {
		value = 1
	}
	indexReady.set(namespace, index, value, namespace, cluster, index, reason)
}

// indexGauge is a gauge with one series per VectorIndex, whose other labels change (the
// cluster, a readiness reason, a setting's source). It remembers each index's labels, so a
// new series replaces the index's last by deleting exactly that one: DeletePartialMatch
// scans every series of the vector, which once per reconcile grew with the square of the
// fleet (half the reconcile's CPU at 2,000 indexes).
type indexGauge struct {
	*prometheus.GaugeVec
	mu     sync.Mutex
	labels map[indexKey][]string
}

type indexKey struct{ namespace, index string }

func newIndexGauge(opts prometheus.GaugeOpts, labelNames []string) *indexGauge {
	return &indexGauge{GaugeVec: prometheus.NewGaugeVec(opts, labelNames), labels: map[indexKey][]string{}}
}

// set gives the index's series, labelled with labels, the value.
func (g *indexGauge) set(namespace, index string, value float64, labels ...string) {
	key := indexKey{namespace, index}
	g.mu.Lock()
	defer g.mu.Unlock()
	if last, ok := g.labels[key]; ok && !slices.Equal(last, labels) {
		g.DeleteLabelValues(last...)
	}
	g.labels[key] = labels
	g.WithLabelValues(labels...).Set(value)
}

// forget drops the index's series.
func (g *indexGauge) forget(namespace, index string) {
	key := indexKey{namespace, index}
	g.mu.Lock()
	defer g.mu.Unlock()
	if last, ok := g.labels[key]; ok {
		g.DeleteLabelValues(last...)
		delete(g.labels, key)
	}
}

// TuningHeadroom is the CPU headroom an Auto-tuned index asks for, per cluster, so alerts
// can compare node CPU with it.
var TuningHeadroom = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "vectorpilot_index_tuning_headroom_percent",
	Help: "CPU headroom target of an Auto-tuned index, in percent.",
}, []string{"namespace", "cluster", "index"})

// BenchmarkP90 and BenchmarkCPU are the benchmark table an Auto-tuned index is tuned from.
var (
	BenchmarkP90 = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_p90_seconds",
		Help: "p90 service time measured by the benchmark an index is tuned from, per slice setting and client level.",
	}, []string{"namespace", "index", "slices", "clients"})
	BenchmarkCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_cpu_percent",
		Help: "Node CPU measured by the benchmark an index is tuned from, per slice setting and client level.",
	}, []string{"namespace", "index", "slices", "clients"})
)

// The tuner's closed loop: live node CPU under the applied setting, what the benchmark
// table predicts for it, and the correction applied to the table.
var (
	TuningObservedCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_index_tuning_observed_cpu_percent",
		Help: "OpenSearch process CPU of the nodes between the tuner's last two samples, in percent of their cores.",
	}, []string{"namespace", "index"})
	TuningPredictedCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_index_tuning_predicted_cpu_percent",
		Help: "CPU the benchmark table, as measured, predicts for the applied slice setting at the same load.",
	}, []string{"namespace", "index"})
	TuningCPUCorrection = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_index_tuning_cpu_correction",
		Help: "Factor the tuner multiplies the benchmark table's CPU by, from live CPU (1: the table as measured).",
	}, []string{"namespace", "index"})
)

// A succeeded BenchmarkRun's comparisons, per run: its variants' throughput against the
// first variant, and its representations' recall and hot bytes.
var (
	BenchmarkVariantQPSRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_variant_qps_ratio",
		Help: "Throughput of a BenchmarkRun variant over its first variant's (geometric mean over the cells both measured).",
	}, []string{"namespace", "index", "run", "variant", "simd", "lucene_vector", "faiss_library"})
	BenchmarkRepresentationRecall = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_representation_recall",
		Help: "recall@k of a vector representation a BenchmarkRun measured, against the exact float neighbours, at one client.",
	}, []string{"namespace", "index", "run", "representation"})
	BenchmarkRepresentationHotBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_representation_hot_per_document_bytes",
		Help: "Bytes per document an HNSW search keeps hot (graph and scored vectors) in a representation a BenchmarkRun measured.",
	}, []string{"namespace", "index", "run", "representation"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(indexReady, TuningHeadroom, BenchmarkP90, BenchmarkCPU, TuningObservedCPU, TuningPredictedCPU, TuningCPUCorrection,
		BenchmarkVariantQPSRatio, BenchmarkRepresentationRecall, BenchmarkRepresentationHotBytes)
}

// IndexRecall, IndexRecallTarget and RecallSearches are an index's live recall objective:
// the recall@k last measured, its target, and the searches measuring it cost.
var (
	IndexRecall = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_index_recall",
		Help: "Live recall@k of an index as last measured (approximate against exact search on sampled documents).",
	}, []string{"namespace", "cluster", "index", "field", "k"})
	IndexRecallTarget = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_index_recall_target",
		Help: "Recall@k an index's spec.recall asks for.",
	}, []string{"namespace", "cluster", "index", "field", "k"})
	RecallSearches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vectorpilot_index_recall_searches_total",
		Help: "Searches the operator sent to measure an index's live recall.",
	}, []string{"namespace", "cluster", "index"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(IndexRecall, IndexRecallTarget, RecallSearches)
}

// recallSeries go when an index's spec.recall goes, and with the index.
var recallSeries = []*prometheus.MetricVec{IndexRecall.MetricVec, IndexRecallTarget.MetricVec, RecallSearches.MetricVec}

// ForgetRecall drops an index's live recall series.
func ForgetRecall(namespace, index string) {
	forgetIndexSeries(recallSeries, namespace, index)
}

// ForgetRun drops every series of a deleted BenchmarkRun.
func ForgetRun(namespace, run string) {
	for _, m := range []*prometheus.MetricVec{BenchmarkVariantQPSRatio.MetricVec, BenchmarkRepresentationRecall.MetricVec, BenchmarkRepresentationHotBytes.MetricVec} {
		m.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "run": run})
	}
}

// tuningSeries are the autotuner's series of an index: they go when the index stops being
// Auto-tuned, and with the index.
var tuningSeries = []*prometheus.MetricVec{TuningHeadroom.MetricVec, BenchmarkP90.MetricVec, BenchmarkCPU.MetricVec,
	TuningObservedCPU.MetricVec, TuningPredictedCPU.MetricVec, TuningCPUCorrection.MetricVec}

// ForgetTuning drops the autotuner's series of an index.
func ForgetTuning(namespace, index string) {
	forgetIndexSeries(tuningSeries, namespace, index)
}

// ForgetIndex drops every series of a deleted VectorIndex, the tuner's included.
func ForgetIndex(namespace, index string) {
	sliceCount.forget(namespace, index)
	indexReady.forget(namespace, index)
	forgetIndexSeries([]*prometheus.MetricVec{TunerDecisions.MetricVec}, namespace, index)
	ForgetTuning(namespace, index)
	ForgetRecall(namespace, index)
}

func forgetIndexSeries(vecs []*prometheus.MetricVec, namespace, index string) {
	for _, m := range vecs {
		m.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "index": index})
	}
}

// Snapshot metrics, per SnapshotPolicy.
var (
	SnapshotLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_snapshot_last_success_timestamp_seconds",
		Help: "Completion time of the policy's newest successful snapshot (Unix seconds).",
	}, []string{"namespace", "policy"})
	SnapshotDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_snapshot_duration_seconds",
		Help: "How long the policy's newest successful snapshot took.",
	}, []string{"namespace", "policy"})
	SnapshotInterval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vectorpilot_snapshot_schedule_interval_seconds",
		Help: "Time between two runs of the policy's schedule, for alerting on stale snapshots.",
	}, []string{"namespace", "policy"})
	SnapshotFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vectorpilot_snapshot_failures_total",
		Help: "VectorSnapshots of the policy that ended Failed.",
	}, []string{"namespace", "policy"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(SnapshotLastSuccess, SnapshotDuration, SnapshotInterval, SnapshotFailures)
}

// ForgetPolicy drops every series of a deleted SnapshotPolicy.
func ForgetPolicy(namespace, policy string) {
	for _, m := range []*prometheus.MetricVec{SnapshotLastSuccess.MetricVec, SnapshotDuration.MetricVec, SnapshotInterval.MetricVec, SnapshotFailures.MetricVec} {
		m.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "policy": policy})
	}
}
