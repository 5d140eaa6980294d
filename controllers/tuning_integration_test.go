package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
)

// tuningTable: idle, 4 slices cut p90 by two thirds for 10 CPU points; from 8 clients
// (40 qps at 4 slices) up, 4 slices would need 95% CPU, so only concurrent search off
// stays within an 80% budget.
func tuningTable() autotune.Table {
	return autotune.Table{Cores: 2, Segments: 4, Results: []autotune.Measurement{
		{SliceCount: 4, Clients: 1, P90Ms: 10, CPUPercent: 20, QPS: 5},
		{SliceCount: 4, Clients: 8, P90Ms: 30, CPUPercent: 95, QPS: 40},
		{SliceCount: 1, Clients: 1, P90Ms: 30, CPUPercent: 10, QPS: 4},
		{SliceCount: 1, Clients: 8, P90Ms: 60, CPUPercent: 50, QPS: 30},
	}}
}

// TestAutoTuningFollowsTheLoad: idle, the tuner applies 4 slices; under a sustained query
// load it moves to concurrent search off; when the load stops it returns to 4 slices —
// with status, Tuned condition and Events each time.
func TestAutoTuningFollowsTheLoad(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	raw, _ := json.Marshal(tuningTable())
	e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench-results", Namespace: e.ns}, Data: map[string]string{"results.json": string(raw)}})

	vi := luceneIndex(e, "tuned")
	vi.Spec.Shards = 1
	vi.Spec.Tuning = &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", HysteresisPercent: 5,
		BenchmarkRef: &v1alpha1.BenchmarkReference{ConfigMap: v1alpha1.ConfigMapKeyReference{Name: "bench-results", Key: "results.json"}}}
	e.create(vi)
	e.waitIndexReady(vi)
	base, queries := dataset.Generate(dataset.Spec{Count: 2000, Queries: 50, Dim: 32, Seed: 11})
	ingest(t, osClient, vi.Spec.IndexName, base)

	waitSlices := func(want int32, mode string) {
		t.Helper()
		e.eventually(60*time.Second, func() (bool, string) {
			if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
				return false, err.Error()
			}
			live := liveIndex(t, osClient, vi.Spec.IndexName).Settings
			ts := vi.Status.Tuning
			if ts == nil {
				return false, "no tuning status yet"
			}
			ok := ts.SliceCount == want && live["index.search.concurrent_segment_search.mode"] == mode
			return ok, fmt.Sprintf("tuned %d (%s) at %s clients / %s qps; index mode %s slices %s", ts.SliceCount, ts.Reason, ts.LoadClients, ts.LiveQueriesPerSecond,
				live["index.search.concurrent_segment_search.mode"], live["index.search.concurrent.max_slice_count"])
		})
	}
	waitSlices(4, "all")
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionTrue, v1alpha1.ReasonTuned, 10*time.Second)
	if s := liveIndex(t, osClient, vi.Spec.IndexName).Settings["index.search.concurrent.max_slice_count"]; s != "4" {
		t.Errorf("idle: max_slice_count %s, want 4", s)
	}

	// Sustained load well above 40 qps, until the test says stop.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for q := c; ctx.Err() == nil; q = (q + 1) % queries.Len() {
				_, _ = osClient.Search(ctx, vi.Spec.IndexName, opensearch.KNNQuery("embedding", queries.At(q), 10))
			}
		}(c)
	}
	waitSlices(1, "none")
	if !strings.Contains(vi.Status.Tuning.Reason, "cheapest setting under 80% CPU") && !strings.Contains(vi.Status.Tuning.Reason, "least CPU") {
		t.Errorf("under load the reason should be the CPU budget: %q", vi.Status.Tuning.Reason)
	}
	stop()
	wg.Wait()
	waitSlices(4, "all")

	var tunedEvents int
	for _, ev := range e.events(vi.Name) {
		if ev.Reason == "Tuned" {
			tunedEvents++
		}
	}
	if tunedEvents < 3 {
		t.Errorf("Tuned events = %d, want one per change (4, off, 4)", tunedEvents)
	}
}

func TestAutoTuningWithoutResultsSaysSoAndKeepsTheSpec(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "untuned")
	vi.Spec.Tuning = &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1",
		BenchmarkRef: &v1alpha1.BenchmarkReference{ConfigMap: v1alpha1.ConfigMapKeyReference{Name: "missing", Key: "results.json"}}}
	e.create(vi)
	e.waitIndexReady(vi)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionFalse, v1alpha1.ReasonBenchmarkMissing, 30*time.Second)
	if vi.Status.MaxSliceCount != 2 {
		t.Errorf("without results the spec's 2 slices must apply, status says %d", vi.Status.MaxSliceCount)
	}
}
