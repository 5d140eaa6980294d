package controllers

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// indexStatus sums a reconcile up in the index's conditions and says when to look again:
// soon while shards start, on a growing backoff while the index stays red.
func (r *VectorIndexReconciler) indexStatus(run *indexRun, out *steps.Outcome) {
	redFor, retry := r.recordOutcome(run, out.Err)
	recordReadiness(run.vi)
	r.rememberRead(run, out.Err == nil && conditions.IsReady(run.vi.Status.Conditions))
	out.Err = retry
	switch {
	case redFor > 0:
		out.RequeueAfter = redBackoff(redFor, r.Options.IndexResyncInterval)
	case run.progressing != "":
		// Shards are starting: look again soon rather than at the next resync.
		out.RequeueAfter = min(progressPollInterval, r.Options.IndexResyncInterval)
	}
}

// recordOutcome sets the conditions from the steps' outcome and returns how long the index
// has been red, if it is, and the error to retry on, if the failure may pass by itself.
func (r *VectorIndexReconciler) recordOutcome(run *indexRun, stepErr error) (time.Duration, error) {
	st := &run.vi.Status
	gen := run.vi.Generation
	var conflict *conflictError
	switch {
	case stepErr == nil && run.redPastGrace(r.Options.IndexRedGrace):
		msg := "index health is red: some primary shards are unassigned"
		if run.redCause != "" {
			msg += "; " + run.redCause
		}
		conditions.Set(&st.Conditions, gen, conditions.Degraded, v1alpha1.ReasonIndexHealthRed, msg)
		return time.Since(meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded).LastTransitionTime.Time), nil
	case stepErr == nil && run.rebuildProgress != "":
		conditions.Set(&st.Conditions, gen, conditions.Progressing, v1alpha1.ReasonRebuilding, run.rebuildProgress)
	case stepErr == nil && run.progressing != "":
		conditions.Set(&st.Conditions, gen, conditions.Progressing, v1alpha1.ReasonReconciling, run.progressing)
	case stepErr == nil:
		msg := fmt.Sprintf("index %s matches the spec", run.name)
		switch {
		case st.Storage == v1alpha1.StorageRemoteSnapshot:
			msg = fmt.Sprintf("index %s is a read-only searchable snapshot", run.name)
			if len(st.FixedSettings) > 0 {
				msg += "; settings it keeps from the snapshot instead of the spec's: " + strings.Join(st.FixedSettings, ", ")
			}
		case len(st.FixedSettings) > 0:
			msg = fmt.Sprintf("index %s matches the spec but for what it cannot take: %s", run.name, strings.Join(st.FixedSettings, "; "))
		}
		if st.Health == "yellow" {
			msg += "; health yellow: some replicas are unassigned"
		}
		conditions.Set(&st.Conditions, gen, conditions.Ready, v1alpha1.ReasonReconciled, msg)
	case errors.As(stepErr, &conflict):
		conditions.Set(&st.Conditions, gen, conditions.Degraded, v1alpha1.ReasonConflict, conflict.Error())
	default:
		f := classify(stepErr)
		conditions.Set(&st.Conditions, gen, conditions.Degraded, f.reason, f.message)
		if f.transient {
			return 0, stepErr
		}
	}
	return 0, nil
}

// recordReadiness exports the Ready condition as a metric, with its reason when False.
func recordReadiness(vi *v1alpha1.VectorIndex) {
	ready, reason := false, ""
	if c := meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		reason = c.Reason
		if c.Status == metav1.ConditionTrue {
			ready, reason = true, ""
		}
	}
	metrics.SetIndexReady(vi.Namespace, vi.Spec.ClusterRef.Name, vi.Name, reason, ready)
}

// redBackoff is when a red index is looked at again: it needs a node, a disk or a person,
// so the wait grows with how long it has been red, from the progress poll up to the resync
// interval.
func redBackoff(redFor, resync time.Duration) time.Duration {
	return min(max(redFor, progressPollInterval), resync)
}
