// Package conditions keeps an object's Ready, Progressing and Degraded conditions in
// agreement: every state sets all three, with a reason, and with the generation observed;
// and their kstatus twins, Reconciling (= Progressing) and Stalled (= Degraded).
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// State is the summary of an object that the three conditions express.
type State int

const (
	// Ready means the declared state holds.
	Ready State = iota
	// Progressing means the operator is making changes that have not finished yet.
	Progressing
	// Degraded means the declared state cannot be reached now; the reason says why.
	Degraded
)

// Set records state on conds. Conditions whose status does not change keep their
// transition time, as meta.SetStatusCondition does.
func Set(conds *[]metav1.Condition, generation int64, state State, reason, message string) {
	status := func(want State) metav1.ConditionStatus {
		if state == want {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	for _, c := range []struct {
		typ   string
		state State
	}{{v1alpha1.ConditionReady, Ready}, {v1alpha1.ConditionProgressing, Progressing}, {v1alpha1.ConditionDegraded, Degraded},
		{v1alpha1.ConditionReconciling, Progressing}, {v1alpha1.ConditionStalled, Degraded}} {
		meta.SetStatusCondition(conds, metav1.Condition{
			Type:               c.typ,
			Status:             status(c.state),
			Reason:             reason,
			Message:            message,
			ObservedGeneration: generation,
		})
	}
}

// IsReady says the Ready condition is True.
func IsReady(conds []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReady)
}

// SetAspect records one condition beside the summary that Set keeps — Scheduled, Secured,
// Tuned, RecallBelowTarget, RebuildGateFailed, Paused — with the generation observed.
func SetAspect(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation})
}

// SetPaused records whether the object is paused. The other conditions keep what they
// said when the pause began.
func SetPaused(conds *[]metav1.Condition, generation int64, paused bool) {
	if paused {
		SetAspect(conds, generation, v1alpha1.ConditionPaused, metav1.ConditionTrue, v1alpha1.ReasonPaused,
			v1alpha1.PausedAnnotation+` is "true": the operator writes nothing to OpenSearch for this object; deleting it leaves its data in place`)
		return
	}
	if meta.FindStatusCondition(*conds, v1alpha1.ConditionPaused) == nil {
		return // never paused: no condition to carry
	}
	SetAspect(conds, generation, v1alpha1.ConditionPaused, metav1.ConditionFalse, v1alpha1.ReasonResumed, "the operator manages this object")
}
