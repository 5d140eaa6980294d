package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get

// tune runs the autotuner when spec.tuning.mode is Auto: the benchmark table and the live
// load go in, a slice setting comes out and is applied by the next step. It reads what the
// decision needs first (the table, the index's and the nodes' counters), decides with pure
// functions (decideTuning), then records and announces. A tuner that cannot decide never
// blocks the index: the spec's own settings stay in force and the Tuned condition says why.
func (r *VectorIndexReconciler) tune(ctx context.Context, run *indexRun) error {
	vi := run.vi
	spec := vi.Spec.Tuning
	if !autoTuned(vi) {
		vi.Status.Tuning = nil
		meta.RemoveStatusCondition(&vi.Status.Conditions, v1alpha1.ConditionTuned)
		metrics.ForgetTuning(vi.Namespace, vi.Name)
		return nil
	}
	if run.benchmarking {
		// Benchmark queries are not the index's load, and the run owns the slices now.
		return nil
	}
	notTuned := func(reason, msg string) error {
		conditions.SetAspect(&vi.Status.Conditions, vi.Generation, v1alpha1.ConditionTuned, metav1.ConditionFalse, reason, msg)
		return nil
	}
	// Gather.
	table, err := r.benchmarkTable(ctx, vi, spec.BenchmarkRef)
	if err != nil {
		return notTuned(v1alpha1.ReasonBenchmarkMissing, err.Error())
	}
	stats, err := run.indexStats(ctx)
	if err != nil {
		return err
	}
	nodes, err := run.osClient.NodeStats(ctx, "")
	if err != nil {
		return err
	}
	// Decide.
	t, err := decideTuning(*spec, vi.Status.Tuning, table, stats, nodes, indexspec.SlicesOf(run.live.Settings), metav1.Now())
	if err != nil {
		return notTuned(v1alpha1.ReasonBenchmarkInvalid, err.Error())
	}
	// Act: status, Events, metrics; the settings step applies the choice.
	r.recordTuning(vi, table, t)
	chosen := indexspec.Slices(t.status.SliceCount)
	run.tunedSlices = &chosen
	return nil
}

// tuning is one decision of the tuner and what it was made from.
type tuning struct {
	status *v1alpha1.TuningStatus
	// current is the setting applied when it was made.
	current indexspec.Slices
	// observedCPU and predictedCPU are the closed loop's sample (nil without one);
	// correction its factor, corrected why it changed ("" when it did not).
	observedCPU, predictedCPU *float64
	correction                float64
	corrected                 string
}

// decideTuning is the tuner's decision from what was read: the live load since the last
// sample (Little's law over the index's counters, in the table's clients), the closed
// loop's CPU sample against the table's prediction for the applied setting, the corrected
// table's choice under the dwell. prev is the last decision's status.
func decideTuning(spec v1alpha1.TuningSpec, prev *v1alpha1.TuningStatus, table autotune.Table, stats opensearch.IndexStats, nodes opensearch.NodeStats,
	current indexspec.Slices, now metav1.Time) (tuning, error) {
	st := &v1alpha1.TuningStatus{QueryTotal: stats.Searches, QueryMillis: stats.SearchMillis, SampledAt: &now, Segments: stats.Segments}
	params := autotune.Params{HeadroomPercent: float64(spec.CPUHeadroomPercent), HysteresisPercent: float64(spec.HysteresisPercent), Current: &current}
	var err error
	if params.MinGainPerCPUPercent, err = strconv.ParseFloat(spec.MinGainPerCPUPercent, 64); err != nil && spec.MinGainPerCPUPercent != "" {
		return tuning{}, fmt.Errorf("spec.tuning.minGainPerCpuPercent: %w", err)
	}
	for _, c := range spec.SliceCandidates {
		params.Candidates = append(params.Candidates, indexspec.Slices(c))
	}
	// Load: the searches in flight since the last sample (Little's law over the index's
	// query time) and the search rate, in the benchmark's unit (clients). A sample across a
	// restart (counters went back) or from an operator that kept no query time only starts
	// the next one.
	if prev != nil && prev.SampledAt != nil && stats.Searches >= prev.QueryTotal && stats.SearchMillis >= prev.QueryMillis &&
		(prev.QueryMillis > 0 || prev.QueryTotal == 0) {
		if elapsed := now.Sub(prev.SampledAt.Time); elapsed > 0 {
			qps := float64(stats.Searches-prev.QueryTotal) / elapsed.Seconds()
			inFlight := autotune.InFlight(stats.SearchMillis-prev.QueryMillis, elapsed)
			st.LiveQueriesPerSecond, st.LiveInFlight = decimal(qps), decimal(inFlight)
			if clients, by, ok := autotune.LiveClients(table, current, qps, inFlight); ok {
				params.Clients = clients
				st.LoadClients, st.LoadReadBy = decimal(clients), by
			}
		}
	}
	t := tuning{status: st, current: current}
	fb := t.observeCPU(spec, prev, table, nodes, params.Clients, now)
	corrected := autotune.Corrected(table, fb.Correction)
	d, err := autotune.Decide(corrected, params)
	if err != nil {
		return tuning{}, err
	}
	if prev != nil && prev.DecidedAt != nil && spec.MinDwell != nil {
		d = autotune.Dwell(corrected, params, d, prev.DecidedAt.Time, now.Time, spec.MinDwell.Duration)
	}
	st.SliceCount, st.Reason = int32(d.SliceCount), d.Reason
	st.PredictedP90Ms, st.PredictedCPUPercent = decimal(d.PredictedP90Ms), decimal(d.PredictedCPUPercent)
	st.DecidedAt = &now
	if prev != nil && prev.SliceCount == st.SliceCount && prev.DecidedAt != nil {
		st.DecidedAt = prev.DecidedAt
	}
	return t, nil
}

// observeCPU is the closed loop's sample: the nodes' OpenSearch process CPU since the
// last sample (as the benchmark measures it: CPU time over wall time and processors),
// against what the table predicts for the applied setting at the load of the same
// interval, folded into the correction the status keeps. A sample spanning a node restart
// or a change of nodes (the counters went back, the processors changed) only starts the
// next interval.
func (t *tuning) observeCPU(spec v1alpha1.TuningSpec, prev *v1alpha1.TuningStatus, table autotune.Table, nodes opensearch.NodeStats, clients float64, now metav1.Time) autotune.Feedback {
	var was *v1alpha1.TuningCPU
	if prev != nil {
		was = prev.CPU
	}
	fb := feedbackOf(was)
	out := &v1alpha1.TuningCPU{ProcessCPUMillis: nodes.ProcessCPUMillis, Processors: int32(nodes.Processors)}
	if was != nil {
		out.CorrectedAt, out.Reason = was.CorrectedAt, was.Reason
	}
	if was != nil && prev.SampledAt != nil && was.Processors == out.Processors && out.Processors > 0 && nodes.ProcessCPUMillis >= was.ProcessCPUMillis {
		if elapsed := now.Sub(prev.SampledAt.Time); elapsed > 0 {
			observed := opensearch.CPUPercent(nodes.ProcessCPUMillis-was.ProcessCPUMillis, elapsed, nodes.Processors)
			predicted := autotune.PredictedCPU(table, t.current, clients)
			out.ObservedPercent, out.PredictedPercent = decimal(observed), decimal(predicted)
			t.observedCPU, t.predictedCPU = &observed, &predicted
			loop := autotune.Loop{TolerancePercent: float64(spec.CPUTolerancePercent)}
			if spec.CPUWindow != nil {
				loop.Window = spec.CPUWindow.Duration
			}
			if fb, t.corrected = fb.Observe(autotune.Sample{End: now.Time, Seconds: elapsed.Seconds(), ObservedCPUPercent: observed, PredictedCPUPercent: predicted}, loop); t.corrected != "" {
				out.CorrectedAt, out.Reason = &now, t.corrected
			}
		}
	}
	out.Correction = decimal(fb.Correction)
	if !fb.OutOfBandSince.IsZero() {
		out.DisagreeingSince = &metav1.Time{Time: fb.OutOfBandSince}
		out.Above, out.WindowObserved, out.WindowPredicted = fb.Above, decimal(fb.WindowObserved), decimal(fb.WindowPredicted)
	}
	t.status.CPU, t.correction = out, fb.Correction
	return fb
}

// recordTuning writes a decision into the index's status and Tuned condition, announces a
// change of the setting and of the CPU correction as Events, and exports the table and the
// loop's figures as metrics.
func (r *VectorIndexReconciler) recordTuning(vi *v1alpha1.VectorIndex, table autotune.Table, t tuning) {
	prev, st := vi.Status.Tuning, t.status
	exportTable(vi, table)
	metrics.TuningHeadroom.WithLabelValues(vi.Namespace, vi.Spec.ClusterRef.Name, vi.Name).Set(float64(vi.Spec.Tuning.CPUHeadroomPercent))
	if t.observedCPU != nil {
		metrics.TuningObservedCPU.WithLabelValues(vi.Namespace, vi.Name).Set(*t.observedCPU)
		metrics.TuningPredictedCPU.WithLabelValues(vi.Namespace, vi.Name).Set(*t.predictedCPU)
	}
	metrics.TuningCPUCorrection.WithLabelValues(vi.Namespace, vi.Name).Set(t.correction)
	if t.corrected != "" {
		r.Recorder.Eventf(vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonCPUCorrected, "Tune", "%s", t.corrected)
	}
	chosen := indexspec.Slices(st.SliceCount)
	if prev == nil || prev.SliceCount != st.SliceCount {
		change := fmt.Sprintf("slice setting %d → %d", t.current, chosen)
		if t.current == chosen {
			change = fmt.Sprintf("slice setting %d (already applied)", t.current)
		}
		r.Recorder.Eventf(vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonTuned, "Tune", "%s %s: %s", change, liveLoad(st), st.Reason)
	}
	metrics.TunerDecisions.WithLabelValues(vi.Namespace, vi.Name, decisionKind(t.current, chosen)).Inc()
	vi.Status.Tuning = st
	conditions.SetAspect(&vi.Status.Conditions, vi.Generation, v1alpha1.ConditionTuned, metav1.ConditionTrue, v1alpha1.ReasonTuned,
		fmt.Sprintf("slice setting %d: %s", chosen, st.Reason))
}

// feedbackOf reads the loop's memory back from the status (a correction of 1 when none).
func feedbackOf(s *v1alpha1.TuningCPU) autotune.Feedback {
	fb := autotune.Feedback{Correction: 1}
	if s == nil {
		return fb
	}
	if c, err := strconv.ParseFloat(s.Correction, 64); err == nil && c > 0 {
		fb.Correction = c
	}
	if s.DisagreeingSince != nil {
		fb.OutOfBandSince, fb.Above = s.DisagreeingSince.Time, s.Above
		fb.WindowObserved, _ = strconv.ParseFloat(s.WindowObserved, 64)
		fb.WindowPredicted, _ = strconv.ParseFloat(s.WindowPredicted, 64)
	}
	return fb
}

func decimal(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// exportTable publishes the benchmark table the index is tuned from.
func exportTable(vi *v1alpha1.VectorIndex, t autotune.Table) {
	cells := make([]metrics.BenchmarkCell, len(t.Results))
	for i, m := range t.Results {
		cells[i] = metrics.BenchmarkCell{Slices: strconv.Itoa(int(m.SliceCount)), Clients: strconv.Itoa(m.Clients),
			P90Seconds: m.P90Ms / 1000, CPUPercent: m.CPUPercent}
	}
	metrics.SetBenchmarkTable(vi.Namespace, vi.Name, cells)
}

func decisionKind(from, to indexspec.Slices) string {
	if from == to {
		return "kept"
	}
	return "changed"
}

// liveLoad says the load a decision was made at, as far as it was measured: the tuner
// decides for no load until the search counters have been sampled twice, and that is no
// measured "0 clients".
func liveLoad(st *v1alpha1.TuningStatus) string {
	switch {
	case st.LoadClients != "":
		return fmt.Sprintf("at %s clients by %s (%s searches in flight, %s qps)", st.LoadClients, st.LoadReadBy, st.LiveInFlight, st.LiveQueriesPerSecond)
	case st.LiveQueriesPerSecond != "":
		return fmt.Sprintf("at %s qps, %s searches in flight (the benchmark did not measure the applied setting)", st.LiveQueriesPerSecond, st.LiveInFlight)
	default:
		return "before any live load was measured"
	}
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
