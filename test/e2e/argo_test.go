package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// argoBenchmarkRunTunesTheIndex: a BenchmarkRun on the Argo runner, on the sandbox's
// index (loaded by the recall run before): the operator submits a Workflow from
// workflows/benchmark-sweep.yaml; Argo's own workflow controller (installed from its
// release manifest, test/sandbox) runs every step as a pod with argoexec as executor, in
// the restricted namespace; the steps (`vectorpilot bench` in the operator image) measure
// the index through its Service and the reporter writes the table into the run; the run
// goes Succeeded and the index, its tuning then set to Auto, applies the run's
// recommendation.
func argoBenchmarkRunTunesTheIndex(t *testing.T) {
	ctx := context.Background()
	ensureSearchNamespace(t)
	for _, f := range []string{"workflows/rbac.yaml", "workflows/benchmark-sweep.yaml"} {
		if err := box.Apply(ctx, searchNamespace, f); err != nil {
			t.Fatal(err)
		}
	}
	index := &v1alpha1.VectorIndex{}
	if err := readSandbox("vectorindex-managed.yaml", index); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: index.Name}, index); err != nil {
		t.Fatalf("the sandbox index (TestManagedClusterServesVectorsFromPods makes it): %v", err)
	}
	// The recall run's dataset: the index holds it already (load IfIncomplete).
	run := sandbox.RecallRun(searchNamespace, "argo-sweep", index.Name, documents, 1, 4)
	run.Spec.Workload.Duration = metav1.Duration{Duration: 3 * time.Second}
	run.Spec.Runner = v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerArgo, WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep"},
		ServiceAccountName: "vectorpilot-benchmark", Image: images.OperatorRef}
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), run) })
	started := time.Now()
	if err := box.WaitSucceeded(ctx, run, 10*time.Minute); err != nil {
		var wf wfv1.Workflow
		_ = k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: run.Status.WorkflowName}, &wf)
		t.Fatalf("%v\nWorkflow %s: %s %s\n%s", err, wf.Name, wf.Status.Phase, wf.Status.Message, nodeTable(t, &wf))
	}
	t.Logf("BenchmarkRun on Argo Succeeded in %s", time.Since(started).Round(time.Second))
	// The template was applied just before the run: Argo's controller may fail the first
	// Workflow before its cache holds it, and the operator then submits it again.
	eventFor(t, run, v1alpha1.ReasonWorkflowCreated)

	// Argo ran it: the Workflow's every step a pod that Succeeded.
	var wf wfv1.Workflow
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: searchNamespace, Name: run.Status.WorkflowName}, &wf); err != nil {
		t.Fatal(err)
	}
	if wf.Status.Phase != wfv1.WorkflowSucceeded {
		t.Errorf("Workflow %s is %s", wf.Name, wf.Status.Phase)
	}
	if p := run.Status.Progress; p == nil || p.WorkflowSteps != string(wf.Status.Progress) || p.Step != "" {
		t.Errorf("the finished run's progress %+v, want the Workflow's steps %s and no step", p, wf.Status.Progress)
	}
	t.Logf("Workflow %s (%s → %s):\n%s", wf.Name, wf.Status.StartedAt.Format(time.TimeOnly), wf.Status.FinishedAt.Format(time.TimeOnly), nodeTable(t, &wf))
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(searchNamespace), client.MatchingLabels{workflowLabel: wf.Name}); err != nil {
		t.Fatal(err)
	}
	// prepare; set-slices, warmup and measure per cell; representations; report.
	cells := len(run.Spec.SliceCounts) * len(run.Spec.Clients)
	if want := 3 + 3*cells; len(pods.Items) != want {
		t.Errorf("the Workflow ran %d pods, want %d", len(pods.Items), want)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("step pod %s is %s", p.Name, p.Status.Phase)
		}
		if !strings.Contains(p.Spec.InitContainers[0].Image, "argoexec") {
			t.Errorf("step pod %s runs %s as executor, want the argoexec image", p.Name, p.Spec.InitContainers[0].Image)
		}
	}

	// The table the steps measured, in the run's status.
	if run.Status.Engine != "vectorpilot" || len(run.Status.Results) != cells || len(run.Status.Recommendations) == 0 {
		t.Fatalf("status: engine %q, %d cells (want %d), recommendations %+v", run.Status.Engine, len(run.Status.Results), cells, run.Status.Recommendations)
	}
	for _, c := range run.Status.Results {
		t.Logf("cell slices=%d clients=%d p50=%sms p90=%sms p99=%sms qps=%s cpu=%s%% recall=%s", c.SliceCount, c.Clients, c.P50Ms, c.P90Ms, c.P99Ms, c.QPS, c.CPUPercent, c.Recall)
		if cpu, err := strconv.ParseFloat(c.CPUPercent, 64); err != nil || cpu <= 0 {
			t.Errorf("cell %+v: no CPU measured by the measure step", c)
		}
		if recall, err := strconv.ParseFloat(c.Recall, 64); err != nil || recall < 0.95 {
			t.Errorf("cell %+v: recall@10 %q, want ≥ 0.95", c, c.Recall)
		}
	}
	for _, r := range run.Status.Recommendations {
		t.Logf("recommendation: %d clients → %d slices (%s)", r.Clients, r.SliceCount, r.Reason)
	}

	// Tuning on: the tuner takes the latest run's table, this one, and applies its
	// recommendation for the idle index.
	setTuning(t, index, &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 25, MinGainPerCPUPercent: "1", HysteresisPercent: 5})
	// The other tests run the index with its own settings.
	t.Cleanup(func() { setTuning(t, index, nil) })
	waitFor(t, 2*time.Minute, "the index tuned from the run", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(index), index); err != nil {
			return false, err.Error()
		}
		tuned := meta.FindStatusCondition(index.Status.Conditions, v1alpha1.ConditionTuned)
		return tuned != nil && tuned.Status == metav1.ConditionTrue && index.Status.Tuning != nil, fmt.Sprintf("Tuned condition %+v", tuned)
	})
	t.Logf("index tuned: %d slices (%s)", index.Status.Tuning.SliceCount, index.Status.Tuning.Reason)
	if idle := run.Status.Recommendations[0]; index.Status.Tuning.SliceCount != idle.SliceCount {
		t.Errorf("index tuned to %d slices (%s); the run recommends %d at %d client(s)", index.Status.Tuning.SliceCount, index.Status.Tuning.Reason, idle.SliceCount, idle.Clients)
	}
	if !eventFor(t, index, v1alpha1.ReasonTuned) {
		t.Error("no Tuned Event on the index")
	}
}

// workflowLabel is the label Argo gives a Workflow's pods.
const workflowLabel = "workflows.argoproj.io/workflow"

// setTuning sets the index's spec.tuning.
func setTuning(t *testing.T, index *v1alpha1.VectorIndex, tuning *v1alpha1.TuningSpec) {
	t.Helper()
	patchSpec(t, index, func(s *v1alpha1.VectorIndexSpec) { s.Tuning = tuning })
}

// patchSpec changes the index's spec with a merge patch over its latest version.
func patchSpec(t *testing.T, index *v1alpha1.VectorIndex, change func(*v1alpha1.VectorIndexSpec)) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(index), index); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(index.DeepCopy())
	change(&index.Spec)
	if err := k8s.Patch(ctx, index, patch); err != nil {
		t.Fatal(err)
	}
}

// nodeTable lists a Workflow's pod nodes in start order: step, phase, pod, duration.
func nodeTable(t *testing.T, wf *wfv1.Workflow) string {
	t.Helper()
	// Argo marks each pod with the node it runs.
	var list corev1.PodList
	if err := k8s.List(context.Background(), &list, client.InNamespace(wf.Namespace), client.MatchingLabels{workflowLabel: wf.Name}); err != nil {
		t.Fatal(err)
	}
	pods := map[string]string{}
	for _, p := range list.Items {
		pods[p.Annotations["workflows.argoproj.io/node-id"]] = p.Name
	}
	var nodes []wfv1.NodeStatus
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].StartedAt.Before(&nodes[j].StartedAt) })
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "STEP\tPHASE\tPOD\tDURATION")
	for _, n := range nodes {
		d := "-"
		if !n.FinishedAt.IsZero() {
			d = n.FinishedAt.Sub(n.StartedAt.Time).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n.Name[len(wf.Name):], n.Phase, pods[n.ID], d)
		if n.Phase != wfv1.NodeSucceeded && n.Message != "" {
			fmt.Fprintf(w, "    %s\t\t\t\n", n.Message)
		}
	}
	_ = w.Flush()
	return b.String()
}
