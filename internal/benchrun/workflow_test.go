package benchrun

import (
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFailedBeforeTemplateSeen: a Workflow Argo's controller put in Error because its cache
// lacked the template the API server had (or had just made) is submitted again; one that
// failed otherwise, whose template is gone, or whose template was there long before, is not.
func TestFailedBeforeTemplateSeen(t *testing.T) {
	made := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	const notFound = `workflowtemplates.argoproj.io "vectorpilot-benchmark-sweep" not found`
	for _, tc := range []struct {
		name     string
		phase    wfv1.WorkflowPhase
		message  string
		template time.Duration // the template's creation, after the Workflow's
		noTmpl   bool
		want     bool
	}{
		{"applied together: the template a second older", wfv1.WorkflowError, notFound, -time.Second, false, true},
		{"the template made after the Workflow", wfv1.WorkflowError, notFound, 5 * time.Second, false, true},
		{"the template 59 s older", wfv1.WorkflowError, notFound, -59 * time.Second, false, true},
		{"the template a minute older: Argo cannot see it", wfv1.WorkflowError, notFound, -time.Minute, false, false},
		{"the template still missing", wfv1.WorkflowError, notFound, 0, true, false},
		{"another template not found", wfv1.WorkflowError, `workflowtemplates.argoproj.io "other" not found`, -time.Second, false, false},
		{"an error of another kind", wfv1.WorkflowError, "pods \"x\" is forbidden", -time.Second, false, false},
		{"a failed step", wfv1.WorkflowFailed, notFound, -time.Second, false, false},
		{"running", wfv1.WorkflowRunning, "", -time.Second, false, false},
	} {
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(made)},
			Spec:   wfv1.WorkflowSpec{WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: "vectorpilot-benchmark-sweep"}},
			Status: wfv1.WorkflowStatus{Phase: tc.phase, Message: tc.message}}
		var tmpl *wfv1.WorkflowTemplate
		if !tc.noTmpl {
			tmpl = &wfv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(made.Add(tc.template))}}
		}
		if got := FailedBeforeTemplateSeen(wf, tmpl); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
