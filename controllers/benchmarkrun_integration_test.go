package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func localRun(e *env, name, index string, duration time.Duration) *v1alpha1.BenchmarkRun {
	return &v1alpha1.BenchmarkRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.BenchmarkRunSpec{
			IndexRef: v1alpha1.LocalObjectReference{Name: index},
			Workload: v1alpha1.BenchmarkWorkload{
				Dataset: v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: 3000, Queries: 100, Seed: 5}},
				Warmup:  metav1.Duration{Duration: 500 * time.Millisecond}, Duration: metav1.Duration{Duration: duration},
			},
			SliceCounts: []int32{1, 4},
			Clients:     []int32{1, 2},
		},
	}
}

func (e *env) waitRunPhase(run *v1alpha1.BenchmarkRun, phase string, timeout time.Duration) {
	e.t.Helper()
	e.eventually(timeout, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(run), run); err != nil {
			return false, err.Error()
		}
		e.capture(run, run.Status.Conditions)
		ready := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionReady)
		return run.Status.Phase == phase, fmt.Sprintf("phase %q, ready %+v", run.Status.Phase, ready)
	})
}

// sampleProgress polls run every 200 ms until it reaches phase, and returns each distinct
// status.progress it saw: step, documents, cells and the ETA's distance.
func sampleProgress(e *env, run *v1alpha1.BenchmarkRun, phase string, timeout time.Duration) []string {
	e.t.Helper()
	var seen []string
	deadline := time.Now().Add(timeout)
	for {
		if err := e.k8s.Get(e.ctx, clientKey(run), run); err != nil {
			e.t.Fatal(err)
		}
		if p := run.Status.Progress; p != nil {
			s := fmt.Sprintf("%s docs %s cells %s", p.Step, p.Documents, p.Cells)
			if p.ETA != nil {
				s += fmt.Sprintf(" eta +%s", time.Until(p.ETA.Time).Round(time.Second))
			}
			if len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], strings.SplitN(s, " eta", 2)[0]) {
				seen = append(seen, s)
			}
		}
		if run.Status.Phase == phase {
			return seen
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s not %s after %s: phase %q, progress %v", run.Name, phase, timeout, run.Status.Phase, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLocalBenchmarkRunTunesItsIndex: a Local run loads the generated dataset, measures the
// table into its status with recall, recommends slices per client level, and a VectorIndex
// in tuning Auto without a benchmarkRef tunes from it. Runs on one index go one at a time,
// and deleting a run cancels it.
func TestLocalBenchmarkRunTunesItsIndex(t *testing.T) {
	e := startOperator(t)
	e.cluster("vectors", testsupport.OpenSearchURL(t))
	vi := luceneIndex(e, "bench")
	vi.Spec.Shards = 1
	vi.Spec.Fields[0].SpaceType = "l2"
	vi.Spec.Tuning = &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", HysteresisPercent: 5}
	e.create(vi)
	e.waitIndexReady(vi)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionFalse, v1alpha1.ReasonBenchmarkMissing, 20*time.Second)

	// A long run holds the index; a second waits; deleting the first lets the second go.
	long := localRun(e, "long", vi.Name, 30*time.Second)
	e.create(long)
	e.waitRunPhase(long, v1alpha1.BenchmarkRunning, 30*time.Second)
	run := localRun(e, "sweep", vi.Name, 2*time.Second)
	e.create(run)
	e.eventually(10*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, clientKey(run), run)
		ready := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionProgressing)
		return run.Status.Phase == v1alpha1.BenchmarkPending && ready != nil && ready.Reason == "Queued", fmt.Sprintf("phase %s %+v", run.Status.Phase, ready)
	})
	if err := e.k8s.Delete(e.ctx, long); err != nil {
		t.Fatal(err)
	}
	e.waitRunPhase(run, v1alpha1.BenchmarkRunning, 15*time.Second)
	start := time.Now()
	sampled := sampleProgress(e, run, v1alpha1.BenchmarkSucceeded, 120*time.Second)
	t.Logf("run took %s; progress sampled while it ran: %s; results %+v; recommendations %+v", time.Since(start).Round(time.Second),
		strings.Join(sampled, " → "), run.Status.Results, run.Status.Recommendations)
	if p := run.Status.Progress; p == nil || p.Cells != "4/4" || p.Step != "" || p.ETA != nil {
		t.Errorf("finished run's progress %+v, want cells 4/4 and no step or ETA", p)
	}
	if !slices.ContainsFunc(sampled, func(s string) bool { return strings.Contains(s, "Sweeping") && strings.Contains(s, "eta") }) {
		t.Errorf("no progress with an ETA seen while the sweep ran: %v", sampled)
	}

	if len(run.Status.Results) != 4 || len(run.Status.Recommendations) != 2 || run.Status.Engine != "vectorpilot" || run.Status.Cores == 0 {
		t.Fatalf("status: %d results, %d recommendations, engine %q, cores %d", len(run.Status.Results), len(run.Status.Recommendations), run.Status.Engine, run.Status.Cores)
	}
	for _, c := range run.Status.Results {
		recall, err := strconv.ParseFloat(c.Recall, 64)
		if err != nil || recall < 0.9 {
			t.Errorf("cell %+v: recall %q, want >= 0.9 against the exact neighbours", c, c.Recall)
		}
		if p90, _ := strconv.ParseFloat(c.P90Ms, 64); p90 <= 0 {
			t.Errorf("cell %+v has no p90", c)
		}
	}
	if run.Status.StartTime == nil || run.Status.CompletionTime == nil || !meta.IsStatusConditionTrue(run.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("finished run lacks times or Ready: %+v", run.Status)
	}

	// The index tunes from the run.
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionTrue, v1alpha1.ReasonTuned, 30*time.Second)
	idle := run.Status.Recommendations[0]
	if vi.Status.Tuning == nil || vi.Status.Tuning.SliceCount != idle.SliceCount {
		t.Errorf("index tuned to %+v, the run recommends %d slices at %d client(s)", vi.Status.Tuning, idle.SliceCount, idle.Clients)
	}
	t.Logf("index tuned: %d slices (%s)", vi.Status.Tuning.SliceCount, vi.Status.Tuning.Reason)
}

// TestArgoBenchmarkRun: an Argo run waits for its WorkflowTemplate, then submits a Workflow
// from it with the run's parameters, owned by the run; the test plays Argo (Workflow
// status) and the reporter step (the same code `vectorpilot bench report` runs). A Workflow
// Argo's controller failed before its cache held the new template is submitted again; the
// run completes with the reported table, and ttlAfterFinished removes the Workflow but keeps
// the run.
func TestArgoBenchmarkRun(t *testing.T) {
	opts := fastOptions
	opts.BenchmarkRunners = benchrun.RunnerAllowlist{WorkflowTemplates: []string{"vectorpilot-benchmark-sweep"},
		Images: []string{"registry.example.com/vectorpilot:*"}, ServiceAccounts: []string{"benchmark"}}
	e := startOperatorWith(t, opts)
	url := testsupport.OpenSearchURL(t)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "argo")
	e.create(vi)
	e.waitIndexReady(vi)

	// A template, image or service account outside the operator's allowlists is refused; no
	// Workflow.
	for name, runner := range map[string]v1alpha1.BenchmarkRunner{
		"other-image":    {Image: "evil.example.com/miner:1"},
		"other-account":  {ServiceAccountName: "vectorpilot-manager"},
		"other-template": {WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "deploy-production"}},
	} {
		refused := localRun(e, name, vi.Name, time.Second)
		runner.Type = v1alpha1.RunnerArgo
		if runner.WorkflowTemplateRef == nil {
			runner.WorkflowTemplateRef = &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep"}
		}
		refused.Spec.Runner = runner
		e.create(refused)
		e.waitCondition(refused, func() []metav1.Condition { return refused.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonRunnerNotAllowed, 30*time.Second)
		var wfs wfv1.WorkflowList
		if err := e.k8s.List(e.ctx, &wfs, client.InNamespace(e.ns)); err != nil || len(wfs.Items) != 0 {
			t.Errorf("a refused run made a Workflow: %d %v", len(wfs.Items), err)
		}
	}
	run := localRun(e, "argo-sweep", vi.Name, 15*time.Second)
	run.Spec.Runner = v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerArgo, WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep"},
		Image: "registry.example.com/vectorpilot:test", ServiceAccountName: "benchmark"}
	run.Spec.TTLAfterFinished = &metav1.Duration{Duration: 2 * time.Second}
	e.create(run)

	// Applied before its template (as a GitOps sync may order them): the run waits, with
	// no Workflow Argo would fail at once.
	e.waitCondition(run, func() []metav1.Condition { return run.Status.Conditions }, v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonWorkflowTemplateNotFound, 30*time.Second)
	var wfs wfv1.WorkflowList
	if err := e.k8s.List(e.ctx, &wfs, client.InNamespace(e.ns)); err != nil || len(wfs.Items) != 0 || run.Status.Phase != v1alpha1.BenchmarkPending {
		t.Errorf("without its template: phase %s, %d Workflows (%v); want Pending and none", run.Status.Phase, len(wfs.Items), err)
	}
	e.create(&wfv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "vectorpilot-benchmark-sweep", Namespace: e.ns},
		Spec: wfv1.WorkflowSpec{Entrypoint: "main", Templates: []wfv1.Template{{Name: "main", Container: &corev1.Container{Image: "registry.example.com/vectorpilot:test"}}}}})
	submitted := func() wfv1.Workflow {
		t.Helper()
		var wf wfv1.Workflow
		e.eventually(30*time.Second, func() (bool, string) {
			if err := e.k8s.Get(e.ctx, clientKey(run), run); err != nil {
				return false, err.Error()
			}
			if run.Status.WorkflowName == "" {
				return false, fmt.Sprintf("no workflow yet: %+v", run.Status.Conditions)
			}
			err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: run.Status.WorkflowName}, &wf)
			return err == nil && wf.DeletionTimestamp == nil, fmt.Sprint(err)
		})
		return wf
	}
	wf := submitted()

	// Argo's controller resolves the template from its cache, which lags: it fails the
	// Workflow at once (argoproj/argo-workflows#14615). The template is there, made with
	// the Workflow: the Workflow is submitted again, and the run goes on.
	first := wf.UID
	wf.Status.Phase, wf.Status.Message = wfv1.WorkflowError, `workflowtemplates.argoproj.io "vectorpilot-benchmark-sweep" not found`
	if err := e.k8s.Update(e.ctx, &wf); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		wf = submitted()
		return wf.UID != first, fmt.Sprintf("Workflow %s still the failed one (phase %s); run %s %+v", wf.Name, wf.Status.Phase, run.Status.Phase, run.Status.Conditions)
	})
	if run.Status.Phase == v1alpha1.BenchmarkFailed {
		t.Errorf("the run failed with its Workflow: %+v", run.Status.Conditions)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		var notes []string
		for _, ev := range e.events(run.Name) {
			if ev.Reason == v1alpha1.ReasonWorkflowCreated && ev.Action == "Resubmit" {
				return true, ""
			}
			notes = append(notes, ev.Action+": "+ev.Note)
		}
		return false, fmt.Sprintf("no Resubmit Event; the run's Events: %q", notes)
	})
	params := map[string]string{}
	for _, p := range wf.Spec.Arguments.Parameters {
		params[p.Name] = p.Value.String()
	}
	want := map[string]string{
		"run-name": run.Name, "run-namespace": e.ns, "opensearch-url": url, "index": vi.Spec.IndexName, "field": "embedding", "dimension": "32",
		"cells": `[{"slices":1,"variant":"","nodes":"","clients":1},{"slices":1,"variant":"","nodes":"","clients":2},` +
			`{"slices":4,"variant":"","nodes":"","clients":1},{"slices":4,"variant":"","nodes":"","clients":2}]`,
		"dataset-count": "3000", "dataset-queries": "100", "dataset-seed": "5", "duration": "15s", "warmup": "500ms", "k": "10",
		"image": "registry.example.com/vectorpilot:test", "credentials-secret": "none",
	}
	for k, v := range want {
		if params[k] != v {
			t.Errorf("Workflow parameter %s = %q, want %q", k, params[k], v)
		}
	}
	if wf.Spec.WorkflowTemplateRef == nil || wf.Spec.WorkflowTemplateRef.Name != "vectorpilot-benchmark-sweep" || wf.Spec.ServiceAccountName != "benchmark" || !metav1.IsControlledBy(&wf, run) {
		t.Errorf("Workflow template %+v, service account %q, owned by the run %v", wf.Spec.WorkflowTemplateRef, wf.Spec.ServiceAccountName, metav1.IsControlledBy(&wf, run))
	}

	// Argo starts it (the Workflow CRD has no status subresource: status is in the object).
	wf.Status.Phase, wf.Status.Progress = wfv1.WorkflowRunning, "2/7"
	if err := e.k8s.Update(e.ctx, &wf); err != nil {
		t.Fatal(err)
	}
	e.eventually(15*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(run), run); err != nil {
			return false, err.Error()
		}
		p := run.Status.Progress
		return run.Status.Phase == v1alpha1.BenchmarkRunning && p != nil && p.Step == string(wfv1.WorkflowRunning) && p.WorkflowSteps == "2/7",
			fmt.Sprintf("phase %s, progress %+v, want the Workflow's phase and steps 2/7", run.Status.Phase, p)
	})

	// The reporter step posts the cells as Argo hands them over: a JSON array of the
	// measure steps' JSON texts.
	var texts []string
	for _, c := range [][2]int{{1, 1}, {1, 2}, {4, 1}, {4, 2}} {
		cell := benchrun.StepCell{Cores: 2, Segments: 4, RecallValid: true, CPUValid: true}
		cell.SliceCount, cell.Clients = indexspec.Slices(c[0]), c[1]
		cell.P50Ms, cell.P90Ms, cell.P99Ms, cell.QPS, cell.CPUPercent, cell.Recall = 2, 4-float64(c[0])/2, 8, 300*float64(c[1]), 30*float64(c[1])+float64(c[0]), 0.99
		raw, _ := json.Marshal(cell)
		texts = append(texts, string(raw))
	}
	arg, _ := json.Marshal(texts)
	res, err := benchrun.ParseCells(string(arg), "vectorpilot")
	if err != nil {
		t.Fatal(err)
	}
	if err := benchrun.Post(e.ctx, e.k8s, clientKey(run), res); err != nil {
		t.Fatal(err)
	}
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(&wf), &wf); err != nil {
		t.Fatal(err)
	}
	wf.Status.Phase = wfv1.WorkflowSucceeded
	if err := e.k8s.Update(e.ctx, &wf); err != nil {
		t.Fatal(err)
	}
	e.waitRunPhase(run, v1alpha1.BenchmarkSucceeded, 15*time.Second)
	if len(run.Status.Results) != 4 || len(run.Status.Recommendations) != 2 || run.Status.Results[3].P90Ms != "2.00" || run.Status.Results[0].Recall != "0.9900" {
		t.Errorf("run status after the report: %+v", run.Status)
	}
	t.Logf("recommendations from the reported table: %+v", run.Status.Recommendations)

	// ttlAfterFinished: the Workflow goes, the run and its results stay.
	e.eventually(20*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(&wf), &wf)
		return apierrors.IsNotFound(err), fmt.Sprintf("workflow still there: %v", err)
	})
	if err := e.k8s.Get(e.ctx, clientKey(run), run); err != nil || len(run.Status.Results) != 4 {
		t.Errorf("run after the TTL: %v, %d results", err, len(run.Status.Results))
	}

	// A run deleted while its Workflow runs: the Workflow (and so its pods) goes first, and
	// only then the settings the run changed are put back and the run lets go — no step can
	// change them after.
	cancelled := localRun(e, "cancelled", vi.Name, 15*time.Second)
	cancelled.Spec.Runner = v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerArgo, WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep"}}
	e.create(cancelled)
	e.waitRunPhase(cancelled, v1alpha1.BenchmarkRunning, 30*time.Second)
	running := &wfv1.Workflow{}
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: cancelled.Status.WorkflowName}, running); err != nil {
		t.Fatal(err)
	}
	if err := e.k8s.Delete(e.ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		wfErr := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(running), running)
		runErr := e.k8s.Get(e.ctx, clientKey(cancelled), cancelled)
		return apierrors.IsNotFound(wfErr) && apierrors.IsNotFound(runErr), fmt.Sprintf("workflow: %v; run: %v", wfErr, runErr)
	})
}

// TestLocalBenchmarkRunComparesVariantsAndRepresentations: a run with variants pins each
// variant's queries to its nodes and records them as observed, with ratios and the SIMD
// recommendation; its representations are measured in scratch indexes marked as the run's,
// recommended against the recall target, announced as Events, and dropped when the run
// ends. A scratch name held by somebody's index fails the run and the index is untouched;
// a variant whose nodes hold no copy fails the run before anything is measured.
func TestLocalBenchmarkRunComparesVariantsAndRepresentations(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "ab")
	vi.Spec.Shards = 1
	vi.Spec.Fields[0].SpaceType = "l2"
	e.create(vi)
	e.waitIndexReady(vi)
	os := osClient(t, url)
	ctx := t.Context()

	// Somebody's index at a scratch name: refused, not touched.
	taken := benchrun.ScratchIndex(vi.Spec.IndexName, "binary")
	if err := os.CreateIndex(ctx, taken, map[string]any{"number_of_replicas": 0}, map[string]any{"title": map[string]any{"type": "text"}}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.DeleteIndex(context.Background(), taken) })
	refused := localRun(e, "taken", vi.Name, time.Second)
	refused.Spec.SliceCounts, refused.Spec.Clients = []int32{1}, []int32{1}
	refused.Spec.Representations = []v1alpha1.VectorRepresentation{"binary"}
	e.create(refused)
	e.waitCondition(refused, func() []metav1.Condition { return refused.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonScratchIndexTaken, 90*time.Second)
	if idx, err := os.GetIndex(ctx, taken); err != nil || idx.Properties["title"] == nil {
		t.Fatalf("the index at the scratch name was changed: %v %+v", err, idx)
	}

	// A variant no node matches.
	nowhere := localRun(e, "nowhere", vi.Name, time.Second)
	nowhere.Spec.Variants = []v1alpha1.BenchmarkVariant{{Name: "all", Nodes: "*"}, {Name: "gone", Nodes: "no-such-node"}}
	e.create(nowhere)
	e.waitCondition(nowhere, func() []metav1.Condition { return nowhere.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonVariantWithoutCopy, 60*time.Second)
	t.Logf("variant refused: %s", meta.FindStatusCondition(nowhere.Status.Conditions, v1alpha1.ConditionDegraded).Message)

	run := localRun(e, "ab", vi.Name, 2*time.Second)
	run.Spec.SliceCounts, run.Spec.Clients = []int32{1, 2}, []int32{1}
	run.Spec.Variants = []v1alpha1.BenchmarkVariant{{Name: "all", Nodes: "*"}, {Name: "local", Nodes: "_local"}}
	run.Spec.Representations = []v1alpha1.VectorRepresentation{"float", "byte"}
	run.Spec.RecallTarget = "0.5"
	e.create(run)
	e.waitRunPhase(run, v1alpha1.BenchmarkSucceeded, 180*time.Second)
	s := run.Status
	t.Logf("variants %+v; simd %+v; representations %+v; recommended %+v", s.Variants, s.SIMDRecommendation, s.Representations, s.RepresentationRecommendation)
	if len(s.Results) != 4 || len(s.Recommendations) != 0 {
		t.Fatalf("%d cells (want 2 slices × 2 variants), %d slice recommendations (want none)", len(s.Results), len(s.Recommendations))
	}
	for i, want := range []string{"all", "local", "all", "local"} {
		if s.Results[i].Variant != want {
			t.Errorf("cell %d is variant %q, want %q (slices outer, variants inner)", i, s.Results[i].Variant, want)
		}
	}
	if len(s.Variants) != 2 || len(s.Variants[1].NodeNames) != 1 || s.Variants[0].QPSRatio != "1.000" || s.Variants[1].QPSRatio == "" || s.SIMDRecommendation == nil {
		t.Errorf("variants %+v, recommendation %+v", s.Variants, s.SIMDRecommendation)
	}
	if len(s.Representations) != 2 || s.RepresentationRecommendation == nil || !s.RepresentationRecommendation.Met {
		t.Fatalf("representations %+v, recommendation %+v", s.Representations, s.RepresentationRecommendation)
	}
	for _, r := range s.Representations {
		if recall, _ := strconv.ParseFloat(r.Recall, 64); recall < 0.5 {
			t.Errorf("%s: recall %s against the exact float neighbours", r.Name, r.Recall)
		}
	}
	// byte keeps fewer bytes hot than float and, at this target, is the recommendation.
	if s.RepresentationRecommendation.Name != "byte" {
		t.Errorf("recommended %s, want byte (fewer hot bytes, recall above 0.5)", s.RepresentationRecommendation.Name)
	}
	t.Logf("events: %s | %s", e.waitEvent(run.Name, v1alpha1.ReasonSIMDRecommended), e.waitEvent(run.Name, v1alpha1.ReasonRepresentationRecommended))
	e.eventually(30*time.Second, func() (bool, string) {
		for _, rep := range run.Spec.Representations {
			if _, err := os.GetIndex(ctx, benchrun.ScratchIndex(vi.Spec.IndexName, rep)); !opensearch.IsNotFound(err) {
				return false, fmt.Sprintf("scratch index of %s still there (%v)", rep, err)
			}
		}
		return true, ""
	})
	if _, err := os.GetIndex(ctx, taken); err != nil {
		t.Errorf("somebody's index at a scratch name is gone: %v", err)
	}
}

// TestLocalRunsShareOneMemoryBudget: the operator's Local runs hold their vectors and the
// representation sweep's copies in its memory, under one budget for all of them together:
// two runs on different indexes that each fit, but not both, go one after the other — the
// second Queued, saying who holds the budget — and a run whose byte copy alone takes it past
// the budget is refused.
func TestLocalRunsShareOneMemoryBudget(t *testing.T) {
	opts := fastOptions
	// 3,000 vectors and 100 queries of 32 dimensions: 422 KB, and with a byte copy 844 KB;
	// each run also holds one bulk buffer.
	opts.LocalBenchmarkMaxBytes = 1<<20 + bench.IngestBufferBytes(32)
	e := startOperatorWith(t, opts)
	e.cluster("vectors", testsupport.OpenSearchURL(t))
	var runs []*v1alpha1.BenchmarkRun
	for _, name := range []string{"first", "second"} {
		vi := luceneIndex(e, name)
		vi.Spec.Shards = 1
		e.create(vi)
		e.waitIndexReady(vi)
		run := localRun(e, name, vi.Name, 8*time.Second)
		run.Spec.SliceCounts, run.Spec.Clients = []int32{1}, []int32{1}
		run.Spec.Representations = []v1alpha1.VectorRepresentation{"float", "byte"}
		runs = append(runs, run)
	}
	e.create(runs[0])
	e.waitRunPhase(runs[0], v1alpha1.BenchmarkRunning, 30*time.Second)
	e.create(runs[1])
	e.eventually(10*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, clientKey(runs[1]), runs[1])
		c := meta.FindStatusCondition(runs[1].Status.Conditions, v1alpha1.ConditionProgressing)
		return runs[1].Status.Phase == v1alpha1.BenchmarkPending && c != nil && c.Reason == v1alpha1.ReasonQueued && strings.Contains(c.Message, "first"),
			fmt.Sprintf("phase %s %+v", runs[1].Status.Phase, c)
	})
	t.Logf("second run: %s", meta.FindStatusCondition(runs[1].Status.Conditions, v1alpha1.ConditionProgressing).Message)
	e.waitRunPhase(runs[0], v1alpha1.BenchmarkSucceeded, 3*time.Minute)
	e.waitRunPhase(runs[1], v1alpha1.BenchmarkSucceeded, 3*time.Minute)
	if runs[1].Status.StartTime.Before(runs[0].Status.CompletionTime) {
		t.Errorf("the second run started at %s, before the first ended at %s", runs[1].Status.StartTime, runs[0].Status.CompletionTime)
	}

	// Its vectors alone fit the budget, with their byte copy they do not.
	vi := luceneIndex(e, "wide")
	vi.Spec.Shards = 1
	e.create(vi)
	e.waitIndexReady(vi)
	wide := localRun(e, "wide", vi.Name, time.Second)
	wide.Spec.Workload.Dataset.Generated.Count = 6000
	wide.Spec.Representations = []v1alpha1.VectorRepresentation{"byte"}
	e.create(wide)
	e.waitCondition(wide, func() []metav1.Condition { return wide.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDatasetTooLarge, 30*time.Second)
}

// TestLocalBenchmarkRunStartsOverWhenItsNodeRestarts: the node stops while a Local run
// sweeps and is started again; the attempt fails on the connection, the run says it starts
// over (condition and Warning Event) and succeeds on its second attempt with every cell,
// the dataset loaded once (written by id, so the load resumed is never doubled).
func TestLocalBenchmarkRunStartsOverWhenItsNodeRestarts(t *testing.T) {
	e := startOperator(t)
	const nodeName = "ctl-bench-restart"
	node, err := devenv.StartNode(testsupport.Root(t), nodeName, devenv.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	e.cluster("vectors", node.URL)
	vi := luceneIndex(e, "restart")
	vi.Spec.Shards, vi.Spec.Replicas = 1, 0
	e.create(vi)
	e.waitIndexReady(vi)

	run := localRun(e, "restart", vi.Name, 2*time.Second)
	e.create(run)
	e.eventually(2*time.Minute, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(run), run); err != nil {
			return false, err.Error()
		}
		p := run.Status.Progress
		return p != nil && p.Step == benchrun.StepSweeping, fmt.Sprintf("phase %s, progress %+v", run.Status.Phase, p)
	})
	t.Logf("restarting the node mid-sweep (cells %s)", run.Status.Progress.Cells)
	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := devenv.StartNode(testsupport.Root(t), nodeName, devenv.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRunPhase(run, v1alpha1.BenchmarkSucceeded, 4*time.Minute)
	if run.Status.Attempts != 2 || len(run.Status.Results) != len(run.Spec.SliceCounts)*len(run.Spec.Clients) {
		t.Errorf("attempts %d, %d cells: want the second attempt to measure all %d", run.Status.Attempts, len(run.Status.Results), len(run.Spec.SliceCounts)*len(run.Spec.Clients))
	}
	var startedOver []string
	for _, ev := range e.events(run.Name) {
		if ev.Reason == v1alpha1.ReasonStartingOver {
			startedOver = append(startedOver, ev.Note)
		}
	}
	if len(startedOver) != 1 {
		t.Errorf("StartingOver Events %q, want one", startedOver)
	} else {
		t.Logf("Event: %s", startedOver[0])
	}
	n, err := osClient(t, node.URL).DocCount(t.Context(), vi.Spec.IndexName)
	if err != nil || n != int64(run.Spec.Workload.Dataset.Generated.Count) {
		t.Errorf("index holds %d documents (%v), want the dataset's %d once", n, err, run.Spec.Workload.Dataset.Generated.Count)
	}
}
