package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/recall"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// cpuProbe is the window the nodes' CPU is read over before a recall measurement.
const cpuProbe = time.Second

// defaultRecallHeadroom is the CPU headroom a recall measurement respects when the index
// has no tuning spec (the tuner's default).
const defaultRecallHeadroom = 20

// measureRecall is the live recall objective: when a measurement is due it draws the
// sample and measures recall@k (internal/recall), unless the index or the nodes say not
// now; either way status.recall, the RecallBelowTarget condition and the metrics say where
// the index stands. A failed measurement never degrades the index: it is a skip, retried.
func (r *VectorIndexReconciler) measureRecall(ctx context.Context, run *indexRun) steps.Result {
	vi := run.vi
	spec := vi.Spec.Recall
	if spec == nil {
		vi.Status.Recall = nil
		meta.RemoveStatusCondition(&vi.Status.Conditions, v1alpha1.ConditionRecallBelowTarget)
		metrics.ForgetRecall(vi.Namespace, vi.Name)
		return steps.Continue()
	}
	field := recallField(vi)
	st := vi.Status.Recall
	if st == nil || st.Field != field.Name || st.K != spec.K {
		// Another field or k: the last value says nothing about this objective.
		st = &v1alpha1.RecallStatus{}
		metrics.ForgetRecall(vi.Namespace, vi.Name)
	}
	st.Field, st.K, st.Target = field.Name, spec.K, spec.Target
	vi.Status.Recall = st
	defer r.reportRecall(vi, st)

	interval := 10 * time.Minute
	if spec.Interval != nil {
		interval = spec.Interval.Duration
	}
	due, wait := recall.Due(recall.Last{MeasuredAt: timeOf(st.MeasuredAt), SkippedAt: timeOf(st.SkippedAt), Generation: st.ObservedGeneration}, vi.Generation, interval, time.Now())
	if !due {
		return steps.After(wait)
	}
	st.ObservedGeneration = vi.Generation
	skip := func(why string) steps.Result {
		st.Skipped, st.SkippedAt = why, ptr.To(metav1.Now())
		return steps.After(min(interval, recall.RetryAfterSkip))
	}
	stats, err := run.indexStats(ctx)
	if err != nil {
		return skip("reading the index's stats: " + err.Error())
	}
	load := recall.Load{Health: stats.Health, Documents: stats.DocsCount, Benchmarking: run.benchmarking, HeadroomPercent: defaultRecallHeadroom}
	var cluster v1alpha1.SearchCluster
	if err := r.Get(ctx, types.NamespacedName{Namespace: vi.Namespace, Name: vi.Spec.ClusterRef.Name}, &cluster); err == nil {
		load.ClusterHealth = cluster.Status.Health
	}
	if t := vi.Spec.Tuning; t != nil {
		load.HeadroomPercent = t.CPUHeadroomPercent
	}
	var before opensearch.NodeStats
	var beforeAt time.Time
	if recall.Skip(load) == "" {
		// Only an index worth measuring costs the probe's second.
		cpu, probed, err := probeCPU(ctx, run.osClient)
		if err != nil {
			return skip("the nodes' CPU could not be read: " + err.Error())
		}
		load.CPUPercent, before, beforeAt = &cpu, probed, time.Now()
	}
	if why := recall.Skip(load); why != "" {
		return skip(why)
	}
	res, err := recall.Measure(ctx, run.osClient, recall.Params{
		Index: run.name, Field: field.Name, SpaceType: field.SpaceType, K: int(spec.K), SampleSize: int(spec.SampleSize),
		QueriesPerSecond: float64(spec.QueriesPerSecond), Seed: time.Now().UnixNano(),
	})
	metrics.RecallSearches.WithLabelValues(vi.Namespace, vi.Spec.ClusterRef.Name, vi.Name).Add(float64(res.Searches))
	if errors.Is(err, recall.ErrNoDocuments) {
		return skip("no document holds field " + field.Name)
	}
	if err != nil {
		logf.FromContext(ctx).Info("recall measurement failed", "error", err.Error())
		return skip("a measurement search failed: " + err.Error())
	}
	st.Cost = &v1alpha1.RecallCost{Searches: int32(res.Searches), ServerMillis: res.ServerMillis, DurationMillis: res.Duration.Milliseconds()}
	if after, err := readCPUAfter(ctx, run.osClient, beforeAt); err == nil && after.ProcessCPUMillis >= before.ProcessCPUMillis {
		st.Cost.CPUMillis = ptr.To(after.ProcessCPUMillis - before.ProcessCPUMillis)
	}
	st.Value, st.Sample, st.MeasuredAt = recall.Format(res.Recall), int32(res.Sample), ptr.To(metav1.Now())
	st.EfSearch = indexspec.LiveEfSearch(field, run.live.Properties, run.live.Settings)
	st.Skipped, st.SkippedAt = "", nil
	return steps.After(interval)
}

// reportRecall sets the RecallBelowTarget condition and the metrics from status.recall,
// with an Event when the index crosses its target either way.
func (r *VectorIndexReconciler) reportRecall(vi *v1alpha1.VectorIndex, st *v1alpha1.RecallStatus) {
	labels := []string{vi.Namespace, vi.Spec.ClusterRef.Name, vi.Name, st.Field, strconv.Itoa(int(st.K))}
	target, _ := strconv.ParseFloat(st.Target, 64)
	metrics.IndexRecallTarget.WithLabelValues(labels...).Set(target)
	metrics.RecallSearches.WithLabelValues(vi.Namespace, vi.Spec.ClusterRef.Name, vi.Name)
	cond := metav1.Condition{Type: v1alpha1.ConditionRecallBelowTarget}
	value, err := strconv.ParseFloat(st.Value, 64)
	switch {
	case err != nil:
		cond.Status, cond.Reason = metav1.ConditionUnknown, v1alpha1.ReasonRecallNotMeasured
		cond.Message = "recall not measured yet"
		if st.Skipped != "" {
			cond.Message += ": " + st.Skipped
		}
		conditions.SetAspect(&vi.Status.Conditions, vi.Generation, cond.Type, cond.Status, cond.Reason, cond.Message)
		return
	case value < target:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonRecallBelowTarget
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonRecallOnTarget
	}
	metrics.IndexRecall.WithLabelValues(labels...).Set(value)
	cond.Message = recallMessage(st, value < target)
	var was metav1.ConditionStatus
	if c := meta.FindStatusCondition(vi.Status.Conditions, cond.Type); c != nil {
		was = c.Status
	}
	conditions.SetAspect(&vi.Status.Conditions, vi.Generation, cond.Type, cond.Status, cond.Reason, cond.Message)
	switch {
	case was == cond.Status:
	case cond.Status == metav1.ConditionTrue:
		r.Recorder.Eventf(vi, nil, corev1.EventTypeWarning, cond.Reason, "MeasureRecall", "%s", cond.Message)
	case was == metav1.ConditionTrue:
		// Back on target: said once, as the crossing below was.
		r.Recorder.Eventf(vi, nil, corev1.EventTypeNormal, cond.Reason, "MeasureRecall", "%s", cond.Message)
	}
}

func recallMessage(st *v1alpha1.RecallStatus, below bool) string {
	verdict := "meets"
	if below {
		verdict = "is below"
	}
	msg := fmt.Sprintf("recall@%d of field %s %s %s the target %s (%d sampled queries", st.K, st.Field, st.Value, verdict, st.Target, st.Sample)
	if st.EfSearch != "" {
		msg += ", ef_search " + st.EfSearch
	}
	msg += ")"
	if st.Skipped != "" {
		msg += "; the last measurement due was skipped: " + st.Skipped
	}
	return msg
}

// recallField is the field spec.recall measures: the one it names, else the first.
func recallField(vi *v1alpha1.VectorIndex) v1alpha1.VectorField {
	for _, f := range vi.Spec.Fields {
		if f.Name == vi.Spec.Recall.Field {
			return f
		}
	}
	return vi.Spec.Fields[0]
}

// probeCPU is the nodes' OpenSearch CPU over cpuProbe, in percent of their processors,
// and the stats read at its end.
func probeCPU(ctx context.Context, c indexAPI) (float64, opensearch.NodeStats, error) {
	a, err := c.NodeStats(ctx, "")
	if err != nil {
		return 0, a, err
	}
	start := time.Now()
	if err := sleep(ctx, cpuProbe); err != nil {
		return 0, a, err
	}
	b, err := c.NodeStats(ctx, "")
	switch {
	case err != nil:
		return 0, b, err
	case b.Processors == 0 || b.ProcessCPUMillis < a.ProcessCPUMillis:
		return 0, b, fmt.Errorf("the nodes changed between two reads (%d → %d processors)", a.Processors, b.Processors)
	}
	return opensearch.CPUPercent(b.ProcessCPUMillis-a.ProcessCPUMillis, time.Since(start), b.Processors), b, nil
}

// readCPUAfter reads the nodes' stats at least cpuProbe after since: OpenSearch refreshes
// a node's process CPU once a second (monitor.process.refresh_interval), so two reads
// closer together may see the same figure and call a busy second free.
func readCPUAfter(ctx context.Context, c indexAPI, since time.Time) (opensearch.NodeStats, error) {
	if err := sleep(ctx, time.Until(since.Add(cpuProbe))); err != nil {
		return opensearch.NodeStats{}, err
	}
	return c.NodeStats(ctx, "")
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
