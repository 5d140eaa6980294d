package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// clusterStatus sets a SearchCluster's conditions from what its steps found, in one
// place: a step that failed its part says why (Degraded), as does any step's error — a
// reconcile that stops short never leaves status saying what it said before; once every
// step ran, the pods, the rollout and OpenSearch's answer decide. It looks again within
// seconds while pods start, roll or leave, and while copies recover after them — or, on an
// external cluster, while its shards initialize or relocate.
func (r *SearchClusterReconciler) clusterStatus(m *clusterRun, out *steps.Outcome) {
	sc := m.sc
	switch {
	case m.failed != nil:
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, m.failed.reason, m.failed.message)
	case sc.Spec.Managed == nil:
		conditions.Set(&sc.Status.Conditions, sc.Generation, m.probe.state, m.probe.reason, m.probe.message)
		if m.probe.shardsMoving {
			// Copies initializing or relocating (a node of it restarted, an index grew
			// replicas): its health is about to change, and no event wakes the reconcile.
			out.Within(r.Options.RolloutPollInterval)
		}
	case out.Err != nil:
		f := classify(out.Err)
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, f.reason, out.StoppedAt+": "+f.message)
	case out.StoppedAt == "":
		wasFailing := podsFailingNow(sc)
		setManagedConditions(sc, m.obs, m.plan, m.probe, m.variants)
		if !wasFailing && podsFailingNow(sc) {
			r.Recorder.Eventf(sc, nil, corev1.EventTypeWarning, v1alpha1.ReasonPodsFailing, "Observe", "%s", podsFailing(sc, m.obs))
		}
		if m.obs.ready < m.obs.desired || m.plan.Pending > 0 || !m.obs.settled || sc.Status.AllocationRestricted ||
			sc.Status.ScaleDown != nil || len(sc.Status.DrainingNodes) > 0 || recovering(sc, m.probe) {
			// Pods starting, rolling or leaving, or copies recovering after them: pod events
			// wake the reconcile too, but OpenSearch health and shard moves do not.
			out.Within(r.Options.RolloutPollInterval)
			return
		}
		out.Err = m.probe.retry
	}
}

// recoveryWatch is how long after a managed cluster became Ready its unassigned copies
// are taken for copies about to recover: a restarted node's replicas wait for the reroute
// that follows the restart's end, or for index.unassigned.node_left.delayed_timeout (1 min
// by default), before they initialize.
const recoveryWatch = 2 * time.Minute

// recovering says that sc's health is about to change: shards initialize or relocate, or
// copies have no node while the cluster became Ready moments ago (its pods back, a rollout
// ended). It is read again from status and OpenSearch on every reconcile — a reconcile an
// event starts replaces the requeue of the one before it — and a cluster yellow for good
// (more replicas than nodes) falls back to the poll interval after recoveryWatch. Without
// it, status said yellow for up to the 30 s poll after the cluster was green again.
func recovering(sc *v1alpha1.SearchCluster, probe probeResult) bool {
	if probe.shardsMoving {
		return true
	}
	ready := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionReady)
	return probe.shardsUnassigned && ready != nil && ready.Status == metav1.ConditionTrue && time.Since(ready.LastTransitionTime.Time) < recoveryWatch
}

// setManagedConditions: unschedulable pods first (they need a person or an autoscaler),
// then pods starting, then a rollout, then what OpenSearch itself says.
func setManagedConditions(sc *v1alpha1.SearchCluster, obs poolObservation, plan rollout.Plan, probe probeResult, variants variantFinding) {
	unschedulable := ""
	if len(obs.unschedulable) > 0 {
		sort.Strings(obs.unschedulable)
		unschedulable = "no node can take pods of pool " + strings.Join(obs.unschedulable, "; pool ")
		conditions.SetAspect(&sc.Status.Conditions, sc.Generation, v1alpha1.ConditionScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, unschedulable)
	} else {
		conditions.SetAspect(&sc.Status.Conditions, sc.Generation, v1alpha1.ConditionScheduled, metav1.ConditionTrue, v1alpha1.ReasonReconciled, "every pod has a node")
	}
	switch {
	case obs.securityPluginMissing != "":
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, v1alpha1.ReasonSecurityPluginMissing, obs.securityPluginMissing)
	case len(obs.failing) > 0:
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, v1alpha1.ReasonPodsFailing, podsFailing(sc, obs))
	case len(obs.unschedulable) > 0:
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, v1alpha1.ReasonUnschedulable, unschedulable)
	case obs.ready < obs.desired:
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Progressing, v1alpha1.ReasonPodsStarting, fmt.Sprintf("%d of %d pods ready", obs.ready, obs.desired))
	case sc.Status.ScaleDown != nil:
		d := sc.Status.ScaleDown
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Progressing, v1alpha1.ReasonScalingDown, fmt.Sprintf("removing %s (%s): %s", d.Node, d.Phase, d.Message))
	case plan.Pending > 0:
		msg := fmt.Sprintf("%d pods to restart onto the new configuration", plan.Pending)
		if plan.BlockedBy != "" {
			msg += fmt.Sprintf("; waiting on %s (%s)", plan.BlockedBy, plan.Reason)
		}
		state, reason := conditions.Progressing, v1alpha1.ReasonRollingRestart
		switch {
		case plan.BlockedBy == "upgrade_preflight":
			// It does not go on by itself: the indexes or the version must change.
			state, reason = conditions.Degraded, v1alpha1.ReasonUpgradeRefused
		case obs.upgrade && plan.BlockedBy == "cluster_health":
			reason = v1alpha1.ReasonUpgradePaused
		}
		conditions.Set(&sc.Status.Conditions, sc.Generation, state, reason, msg)
	case variants.message != "" && probe.state != conditions.Degraded:
		// The cluster serves, on other vector code than asked for: the pods landed on
		// machines the pool's placement let through (a wrong label, a pin on instance
		// types), or the image lacks the library variant.
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, variants.reason, variants.message)
	default:
		conditions.Set(&sc.Status.Conditions, sc.Generation, probe.state, probe.reason, probe.message)
	}
}
