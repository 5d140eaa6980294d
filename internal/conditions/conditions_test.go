package conditions

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

func TestSetKeepsTheThreeConditionsInAgreement(t *testing.T) {
	cases := []struct {
		state                       State
		ready, progressing, degrade metav1.ConditionStatus
	}{
		{Ready, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse},
		{Progressing, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse},
		{Degraded, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue},
	}
	for _, tc := range cases {
		var conds []metav1.Condition
		Set(&conds, 7, tc.state, "SomeReason", "some message")
		for typ, want := range map[string]metav1.ConditionStatus{
			v1alpha1.ConditionReady: tc.ready, v1alpha1.ConditionProgressing: tc.progressing, v1alpha1.ConditionDegraded: tc.degrade,
			v1alpha1.ConditionReconciling: tc.progressing, v1alpha1.ConditionStalled: tc.degrade,
		} {
			c := meta.FindStatusCondition(conds, typ)
			if c == nil || c.Status != want || c.Reason != "SomeReason" || c.ObservedGeneration != 7 {
				t.Errorf("state %d: condition %s = %+v, want status %s with reason and generation", tc.state, typ, c, want)
			}
		}
		if IsReady(conds) != (tc.state == Ready) {
			t.Errorf("state %d: IsReady = %v", tc.state, IsReady(conds))
		}
	}
}

func TestSetKeepsTransitionTimeWhenStatusHolds(t *testing.T) {
	var conds []metav1.Condition
	Set(&conds, 1, Degraded, "Unreachable", "first")
	first := meta.FindStatusCondition(conds, v1alpha1.ConditionDegraded).LastTransitionTime
	Set(&conds, 2, Degraded, "OpenSearchError", "second")
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionDegraded)
	if !c.LastTransitionTime.Equal(&first) || c.Reason != "OpenSearchError" || c.ObservedGeneration != 2 {
		t.Errorf("condition after same-status update = %+v", c)
	}
}
