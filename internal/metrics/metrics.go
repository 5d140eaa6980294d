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
var sliceCount = newPerIndexGauge(prometheus.GaugeOpts{
	Name: "vectorpilot_index_slice_count",
	Help: "Slice setting applied to an index (1 = concurrent search off, 0 = Lucene's default slicing, N = N slices), by source.",
}, []string{"namespace", "index", "source"})

// SetSliceCount records the slice setting applied to an index and where it came from.
func SetSliceCount(namespace, index, source string, count float64) {
	sliceCount.replace(namespace, index, source).Set(count)
}

// TunerDecisions counts the autotuner's decisions that changed or kept an index's setting.
var TunerDecisions = newPerIndexCounter(prometheus.CounterOpts{
	Name: "vectorpilot_tuner_decisions_total",
	Help: "Autotuner decisions per index, by kind (changed, kept).",
}, []string{"namespace", "index", "kind"})

func init() {
	ctrlmetrics.Registry.MustRegister(sliceCount, TunerDecisions)
}

// indexReady is 1 while a VectorIndex's Ready condition is True.
var indexReady = newPerIndexGauge(prometheus.GaugeOpts{
	Name: "vectorpilot_index_ready",
	Help: "1 while the VectorIndex is Ready, 0 otherwise; the reason label says why not.",
}, []string{"namespace", "cluster", "index", "reason"})

// SetIndexReady records whether a VectorIndex is Ready, and the reason when it is not.
func SetIndexReady(namespace, cluster, index, reason string, ready bool) {
	value := 0.0
	if ready {
		value = 1
	}
	indexReady.replace(namespace, cluster, index, reason).Set(value)
}

// perIndex is a metric vector whose series each belong to one VectorIndex (its namespace
// and index labels). It remembers each index's series, so an index's series go by exact
// deletes: DeletePartialMatch scans every series of the vector, and run in every reconcile
// (a new readiness reason, an index without tuning or recall) it grew with the square of
// the fleet — half the reconciles' CPU at 2,000 indexes.
type perIndex[M any] struct {
	prometheus.Collector
	with      func(...string) M
	delete    func(...string) bool
	namespace int // where the namespace and index labels are among the label values
	index     int
	mu        sync.Mutex
	series    map[indexKey][][]string // each index's series, by their label values
}

type indexKey struct{ namespace, index string }

type labelledVec[M any] interface {
	prometheus.Collector
	WithLabelValues(...string) M
	DeleteLabelValues(...string) bool
}

func newPerIndex[M any](vec labelledVec[M], labelNames []string) *perIndex[M] {
	return &perIndex[M]{Collector: vec, with: vec.WithLabelValues, delete: vec.DeleteLabelValues,
		namespace: slices.Index(labelNames, "namespace"), index: slices.Index(labelNames, "index"),
		series: map[indexKey][][]string{}}
}

func newPerIndexGauge(opts prometheus.GaugeOpts, labelNames []string) *perIndex[prometheus.Gauge] {
	return newPerIndex(prometheus.NewGaugeVec(opts, labelNames), labelNames)
}

func newPerIndexCounter(opts prometheus.CounterOpts, labelNames []string) *perIndex[prometheus.Counter] {
	return newPerIndex(prometheus.NewCounterVec(opts, labelNames), labelNames)
}

// WithLabelValues returns the series labelled with the values, one of its index's series.
func (p *perIndex[M]) WithLabelValues(labels ...string) M {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remember(labels)
	return p.with(labels...)
}

// replace returns the series labelled with the values as the only one of its index: the
// index's others go (a reason, a source or a cluster that no longer holds).
func (p *perIndex[M]) replace(labels ...string) M {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop(labels[p.namespace], labels[p.index], labels)
	p.remember(labels)
	return p.with(labels...)
}

// retain drops the index's series but those labelled with one of keep.
func (p *perIndex[M]) retain(namespace, index string, keep ...[]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop(namespace, index, keep...)
}

func (p *perIndex[M]) remember(labels []string) {
	key := indexKey{labels[p.namespace], labels[p.index]}
	if !slices.ContainsFunc(p.series[key], func(l []string) bool { return slices.Equal(l, labels) }) {
		p.series[key] = append(p.series[key], slices.Clone(labels))
	}
}

func (p *perIndex[M]) drop(namespace, index string, keep ...[]string) {
	key := indexKey{namespace, index}
	kept := slices.DeleteFunc(p.series[key], func(labels []string) bool {
		if slices.ContainsFunc(keep, func(k []string) bool { return slices.Equal(k, labels) }) {
			return false
		}
		p.delete(labels...)
		return true
	})
	if len(kept) == 0 {
		delete(p.series, key)
	} else {
		p.series[key] = kept
	}
}

// forget drops the index's series.
func (p *perIndex[M]) forget(namespace, index string) {
	p.retain(namespace, index)
}

// TuningHeadroom is the CPU headroom an Auto-tuned index asks for, per cluster, so alerts
// can compare node CPU with it.
var TuningHeadroom = newPerIndexGauge(prometheus.GaugeOpts{
	Name: "vectorpilot_index_tuning_headroom_percent",
	Help: "CPU headroom target of an Auto-tuned index, in percent.",
}, []string{"namespace", "cluster", "index"})

// BenchmarkP90 and BenchmarkCPU are the benchmark table an Auto-tuned index is tuned from.
var (
	BenchmarkP90 = newPerIndexGauge(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_p90_seconds",
		Help: "p90 service time measured by the benchmark an index is tuned from, per slice setting and client level.",
	}, []string{"namespace", "index", "slices", "clients"})
	BenchmarkCPU = newPerIndexGauge(prometheus.GaugeOpts{
		Name: "vectorpilot_benchmark_cpu_percent",
		Help: "Node CPU measured by the benchmark an index is tuned from, per slice setting and client level.",
	}, []string{"namespace", "index", "slices", "clients"})
)

// The tuner's closed loop: live node CPU under the applied setting, what the benchmark
// table predicts for it, and the correction applied to the table.
var (
	TuningObservedCPU = newPerIndexGauge(prometheus.GaugeOpts{
		Name: "vectorpilot_index_tuning_observed_cpu_percent",
		Help: "OpenSearch process CPU of the nodes between the tuner's last two samples, in percent of their cores.",
	}, []string{"namespace", "index"})
	TuningPredictedCPU = newPerIndexGauge(prometheus.GaugeOpts{
		Name: "vectorpilot_index_tuning_predicted_cpu_percent",
		Help: "CPU the benchmark table, as measured, predicts for the applied slice setting at the same load.",
	}, []string{"namespace", "index"})
	TuningCPUCorrection = newPerIndexGauge(prometheus.GaugeOpts{
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
	IndexRecall = newPerIndexGauge(prometheus.GaugeOpts{
		Name: "vectorpilot_index_recall",
		Help: "Live recall@k of an index as last measured (approximate against exact search on sampled documents).",
	}, []string{"namespace", "cluster", "index", "field", "k"})
	IndexRecallTarget = newPerIndexGauge(prometheus.GaugeOpts{
		Name: "vectorpilot_index_recall_target",
		Help: "Recall@k an index's spec.recall asks for.",
	}, []string{"namespace", "cluster", "index", "field", "k"})
	RecallSearches = newPerIndexCounter(prometheus.CounterOpts{
		Name: "vectorpilot_index_recall_searches_total",
		Help: "Searches the operator sent to measure an index's live recall.",
	}, []string{"namespace", "cluster", "index"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(IndexRecall, IndexRecallTarget, RecallSearches)
}

// ForgetRecall drops an index's live recall series.
func ForgetRecall(namespace, index string) {
	IndexRecall.forget(namespace, index)
	IndexRecallTarget.forget(namespace, index)
	RecallSearches.forget(namespace, index)
}

// ForgetRun drops every series of a deleted BenchmarkRun.
func ForgetRun(namespace, run string) {
	for _, m := range []*prometheus.MetricVec{BenchmarkVariantQPSRatio.MetricVec, BenchmarkRepresentationRecall.MetricVec, BenchmarkRepresentationHotBytes.MetricVec} {
		m.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "run": run})
	}
}

// BenchmarkCell is one cell of the benchmark table an index is tuned from.
type BenchmarkCell struct {
	Slices, Clients        string
	P90Seconds, CPUPercent float64
}

// SetBenchmarkTable publishes the benchmark table an Auto-tuned index is tuned from; the
// cells of an earlier table that this one lacks go.
func SetBenchmarkTable(namespace, index string, cells []BenchmarkCell) {
	keep := make([][]string, len(cells))
	for i, c := range cells {
		keep[i] = []string{namespace, index, c.Slices, c.Clients}
	}
	BenchmarkP90.retain(namespace, index, keep...)
	BenchmarkCPU.retain(namespace, index, keep...)
	for i, c := range cells {
		BenchmarkP90.WithLabelValues(keep[i]...).Set(c.P90Seconds)
		BenchmarkCPU.WithLabelValues(keep[i]...).Set(c.CPUPercent)
	}
}

// ForgetTuning drops the autotuner's series of an index: when it stops being Auto-tuned,
// and with the index.
func ForgetTuning(namespace, index string) {
	TuningHeadroom.forget(namespace, index)
	BenchmarkP90.forget(namespace, index)
	BenchmarkCPU.forget(namespace, index)
	TuningObservedCPU.forget(namespace, index)
	TuningPredictedCPU.forget(namespace, index)
	TuningCPUCorrection.forget(namespace, index)
}

// ForgetIndex drops every series of a deleted VectorIndex, the tuner's included.
func ForgetIndex(namespace, index string) {
	sliceCount.forget(namespace, index)
	indexReady.forget(namespace, index)
	TunerDecisions.forget(namespace, index)
	ForgetTuning(namespace, index)
	ForgetRecall(namespace, index)
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
