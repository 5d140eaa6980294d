package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestSweepLeavesTheIndexsSlicesAsItFoundThem: a sweep sets each slice count it measures
// on the index; when it ends — done, or cancelled mid-way — the index serves with the
// slice settings it had before (the tuner reads the live setting as the one it applied:
// a leftover was kept by its hysteresis as if it had chosen it).
func TestSweepLeavesTheIndexsSlicesAsItFoundThem(t *testing.T) {
	c := testsupport.OpenSearchClient(t)
	const index, field, k = "sweep-restores-slices", "embedding", 10
	base, queries := dataset.Generate(dataset.Spec{Count: 500, Queries: 10, Dim: 8, Seed: 7})
	ctx := context.Background()
	_ = c.DeleteIndex(ctx, index)
	t.Cleanup(func() { _ = c.DeleteIndex(context.Background(), index) })
	props := map[string]any{field: map[string]any{"type": "knn_vector", "dimension": base.Dim,
		"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2"}}}
	if err := c.CreateIndex(ctx, index, map[string]any{"index.knn": true, "index.number_of_replicas": 0}, props, nil); err != nil {
		t.Fatal(err)
	}
	if err := bench.Ingest(ctx, c, index, field, base, 500, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx, index); err != nil {
		t.Fatal(err)
	}
	exact := dataset.ExactKNN(base, queries, k)

	for _, tc := range []struct {
		name string
		// before is the index's slice setting before the sweep (nil: none set on the index).
		before *int
		// cancel stops the sweep after its first cell.
		cancel bool
	}{
		{name: "no slice setting on the index"},
		{name: "two slices", before: ptr(2)},
		{name: "concurrent search off", before: ptr(1)},
		{name: "two slices, the sweep cancelled after its first cell", before: ptr(2), cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset := map[string]any{indexspec.SettingConcurrentMode: nil, indexspec.SettingMaxSliceCount: nil}
			if err := c.PutSettings(ctx, index, reset); err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				if err := bench.SetSlices(ctx, c, index, indexspec.Slices(*tc.before)); err != nil {
					t.Fatal(err)
				}
			}
			want := sliceSettings(t, c, index)
			sweepCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			cfg := bench.SweepConfig{Index: index, Field: field, Queries: queries, Exact: exact, K: k,
				SliceCounts: []indexspec.Slices{4, 1, 0}, Clients: []int{1}, Duration: 200 * time.Millisecond}
			if tc.cancel {
				cfg.OnCell = func(bench.Cell) { cancel() }
			}
			_, err := bench.Sweep(sweepCtx, c, cfg)
			if tc.cancel != errors.Is(err, context.Canceled) {
				t.Fatalf("sweep: %v", err)
			}
			if got := sliceSettings(t, c, index); got != want {
				t.Errorf("after the sweep the index has %s, had %s", got, want)
			}
		})
	}
}

func ptr(n int) *int { return &n }

// sliceSettings are the index's own concurrent search settings, as one string.
func sliceSettings(t *testing.T, c *opensearch.Client, index string) string {
	t.Helper()
	live, err := c.GetIndex(context.Background(), index)
	if err != nil {
		t.Fatal(err)
	}
	return "mode=" + live.Settings[indexspec.SettingConcurrentMode] + " max_slice_count=" + live.Settings[indexspec.SettingMaxSliceCount]
}
