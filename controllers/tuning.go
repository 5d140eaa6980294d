package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get

// tune runs the autotuner when spec.tuning.mode is Auto: the benchmark table and the live
// search rate go in, a slice setting comes out and is applied by the next step. A tuner
// that cannot decide never blocks the index: the spec's own settings stay in force and
// the Tuned condition says why.
func (r *VectorIndexReconciler) tune(ctx context.Context, run *indexRun) error {
	vi := run.vi
	spec := vi.Spec.Tuning
	if spec == nil || spec.Mode != v1alpha1.TuningAuto {
		vi.Status.Tuning = nil
		meta.RemoveStatusCondition(&vi.Status.Conditions, v1alpha1.ConditionTuned)
		for _, m := range []*prometheus.GaugeVec{metrics.TuningHeadroom, metrics.BenchmarkP90, metrics.BenchmarkCPU} {
			m.DeletePartialMatch(prometheus.Labels{"namespace": vi.Namespace, "index": vi.Name})
		}
		return nil
	}
	if run.benchmarking {
		// Benchmark queries are not the index's load, and the run owns the slices now.
		return nil
	}
	notTuned := func(reason, msg string) error {
		meta.SetStatusCondition(&vi.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionTuned, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: vi.Generation})
		return nil
	}
	table, err := r.benchmarkTable(ctx, vi, spec.BenchmarkRef)
	if err != nil {
		return notTuned(v1alpha1.ReasonBenchmarkMissing, err.Error())
	}
	exportTable(vi, table)
	metrics.TuningHeadroom.WithLabelValues(vi.Namespace, vi.Spec.ClusterRef.Name, vi.Name).Set(float64(spec.CPUHeadroomPercent))
	stats, err := run.indexStats(ctx)
	if err != nil {
		return err
	}
	prev := vi.Status.Tuning
	now := metav1.Now()
	st := &v1alpha1.TuningStatus{QueryTotal: stats.Searches, SampledAt: &now, Segments: stats.Segments}
	params := autotune.Params{
		HeadroomPercent:   float64(spec.CPUHeadroomPercent),
		HysteresisPercent: float64(spec.HysteresisPercent),
	}
	if params.MinGainPerCPUPercent, err = strconv.ParseFloat(spec.MinGainPerCPUPercent, 64); err != nil && spec.MinGainPerCPUPercent != "" {
		return notTuned(v1alpha1.ReasonBenchmarkInvalid, "spec.tuning.minGainPerCpuPercent: "+err.Error())
	}
	for _, c := range spec.SliceCandidates {
		params.Candidates = append(params.Candidates, int(c))
	}
	current := appliedSlices(run)
	params.Current = &current
	// Load: the search rate since the last sample, in the benchmark's unit (clients).
	if prev != nil && prev.SampledAt != nil && stats.Searches >= prev.QueryTotal {
		if elapsed := now.Sub(prev.SampledAt.Time).Seconds(); elapsed > 0 {
			qps := float64(stats.Searches-prev.QueryTotal) / elapsed
			st.LiveQueriesPerSecond = strconv.FormatFloat(qps, 'f', 2, 64)
			if clients, ok := autotune.ClientsForRate(table, current, qps); ok {
				params.Clients = clients
			}
		}
	}
	st.LoadClients = strconv.FormatFloat(params.Clients, 'f', 2, 64)
	d, err := autotune.Decide(table, params)
	if err != nil {
		return notTuned(v1alpha1.ReasonBenchmarkInvalid, err.Error())
	}
	st.SliceCount, st.Reason = int32(d.SliceCount), d.Reason
	st.PredictedP90Ms = strconv.FormatFloat(d.PredictedP90Ms, 'f', 2, 64)
	st.PredictedCPUPercent = strconv.FormatFloat(d.PredictedCPUPercent, 'f', 2, 64)
	st.DecidedAt = &now
	if prev != nil && prev.SliceCount == st.SliceCount && prev.DecidedAt != nil {
		st.DecidedAt = prev.DecidedAt
	}
	if prev == nil || prev.SliceCount != st.SliceCount {
		change := fmt.Sprintf("slice setting %d → %d", current, d.SliceCount)
		if current == d.SliceCount {
			change = fmt.Sprintf("slice setting %d (already applied)", current)
		}
		r.Recorder.Eventf(vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonTuned, "Tune", "%s at %.2f clients (%s): %s", change, params.Clients, liveRate(st.LiveQueriesPerSecond), d.Reason)
	}
	metrics.TunerDecisions.WithLabelValues(vi.Namespace, vi.Name, decisionKind(current, d.SliceCount)).Inc()
	vi.Status.Tuning = st
	slices := d.SliceCount
	run.tunedSlices = &slices
	meta.SetStatusCondition(&vi.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionTuned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTuned,
		Message: fmt.Sprintf("slice setting %d: %s", d.SliceCount, d.Reason), ObservedGeneration: vi.Generation})
	return nil
}

// exportTable publishes the benchmark table the index is tuned from.
func exportTable(vi *v1alpha1.VectorIndex, t autotune.Table) {
	for _, m := range t.Results {
		slices, clients := strconv.Itoa(m.SliceCount), strconv.Itoa(m.Clients)
		metrics.BenchmarkP90.WithLabelValues(vi.Namespace, vi.Name, slices, clients).Set(m.P90Ms / 1000)
		metrics.BenchmarkCPU.WithLabelValues(vi.Namespace, vi.Name, slices, clients).Set(m.CPUPercent)
	}
}

// appliedSlices is the slice setting in force on the live index, in the slice encoding.
func appliedSlices(run *indexRun) int {
	if run.live.Settings[indexspec.SettingConcurrentMode] == "none" {
		return 1
	}
	n, _ := strconv.Atoi(run.live.Settings[indexspec.SettingMaxSliceCount])
	return n
}

func decisionKind(from, to int) string {
	if from == to {
		return "kept"
	}
	return "changed"
}

func liveRate(qps string) string {
	if qps == "" {
		return "no live rate yet"
	}
	return qps + " qps"
}

// benchmarkTable reads the results JSON a BenchmarkReference names. ConfigMaps are read
// directly rather than cached: the operator needs only get on the few it is pointed at.
func (r *VectorIndexReconciler) benchmarkTable(ctx context.Context, vi *v1alpha1.VectorIndex, ref *v1alpha1.BenchmarkReference) (autotune.Table, error) {
	var t autotune.Table
	if ref == nil {
		return r.latestRunTable(ctx, vi)
	}
	namespace := vi.Namespace
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: namespace, Name: ref.ConfigMap.Name}
	if err := r.APIReader.Get(ctx, key, &cm); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return t, fmt.Errorf("ConfigMap %s with benchmark results not found", key.Name)
		}
		return t, err
	}
	dataKey := ref.ConfigMap.Key
	if dataKey == "" {
		dataKey = "results.json"
	}
	raw, ok := cm.Data[dataKey]
	if !ok {
		return t, fmt.Errorf("ConfigMap %s has no key %q", key.Name, dataKey)
	}
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return t, fmt.Errorf("ConfigMap %s key %s: %w", key.Name, dataKey, err)
	}
	if len(t.Results) == 0 {
		return t, fmt.Errorf("ConfigMap %s key %s holds no results", key.Name, dataKey)
	}
	return t, nil
}

// latestRunTable is the table of the index's most recently completed succeeded
// BenchmarkRun.
func (r *VectorIndexReconciler) latestRunTable(ctx context.Context, vi *v1alpha1.VectorIndex) (autotune.Table, error) {
	var runs v1alpha1.BenchmarkRunList
	if err := r.List(ctx, &runs, client.InNamespace(vi.Namespace), client.MatchingFields{indexRefField: vi.Name}); err != nil {
		return autotune.Table{}, err
	}
	var latest *v1alpha1.BenchmarkRun
	for i := range runs.Items {
		run := &runs.Items[i]
		if !benchrun.TunerInput(run) {
			continue
		}
		if latest == nil || run.Status.CompletionTime.After(latest.Status.CompletionTime.Time) {
			latest = run
		}
	}
	if latest == nil {
		return autotune.Table{}, fmt.Errorf("no succeeded BenchmarkRun for this index and no spec.tuning.benchmarkRef")
	}
	t, err := benchrun.Table(latest.Status)
	if err != nil {
		return t, fmt.Errorf("BenchmarkRun %s: %w", latest.Name, err)
	}
	return t, nil
}
