package controllers_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
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
		ready := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionReady)
		return run.Status.Phase == phase, fmt.Sprintf("phase %q, ready %+v", run.Status.Phase, ready)
	})
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
	e.waitRunPhase(run, v1alpha1.BenchmarkSucceeded, 120*time.Second)
	t.Logf("run took %s; results %+v; recommendations %+v", time.Since(start).Round(time.Second), run.Status.Results, run.Status.Recommendations)

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
