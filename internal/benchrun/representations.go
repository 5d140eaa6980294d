package benchrun

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// ScratchMark is the _meta key of the indexes a run creates for its representation sweep;
// its value names the run, so only that run ever replaces or deletes them.
const ScratchMark = "vectorpilot.io/benchmark-scratch"

// ScratchIndex is the index a run measures a representation in.
func ScratchIndex(index string, rep v1alpha1.VectorRepresentation) string {
	return index + "-vpbench-" + string(rep)
}

// ScratchOwner is the mark value of a run's scratch indexes.
func ScratchOwner(run *v1alpha1.BenchmarkRun) string {
	return run.Namespace + "/" + run.Name + "/" + string(run.UID)
}

// MeasureRepresentations loads the workload's base vectors into one scratch index per
// representation the run names (created beside the index, marked as the run's) and
// measures each with one client, concurrent search off: recall and latency are judged
// there, without queueing. The scratch indexes
// stay until DropScratch; an index of a scratch name without the run's mark is never
// touched and fails the run.
func MeasureRepresentations(ctx context.Context, c *opensearch.Client, w Workload, d Data, names []v1alpha1.VectorRepresentation, owner string) ([]bench.RepresentationResult, error) {
	if len(names) == 0 {
		return nil, nil
	}
	reps, err := bench.RepresentationsNamed(representationNames(names))
	if err != nil {
		return nil, err
	}
	cfg := bench.RepresentationConfig{
		Prefix: w.Index + "-vpbench", Field: w.Field, Base: d.Base, Queries: d.Queries, Exact: d.Exact,
		K: w.K, Shards: w.Shards, Clients: []int{1}, Representations: reps, Load: true, Warmup: w.Warmup, Duration: w.Duration,
		MarkKey: ScratchMark, MarkValue: owner,
		// The run's sweep (or a Workflow's prepare step) warmed the nodes up.
		NodesWarm: true,
	}
	res, err := bench.MeasureRepresentations(ctx, c, cfg)
	if errors.Is(err, bench.ErrNotOurs) {
		return res, &ScratchTakenError{err.Error()}
	}
	return res, err
}

// ScratchTakenError is a scratch index name held by an index that is not the run's.
type ScratchTakenError struct{ Message string }

func (e *ScratchTakenError) Error() string { return e.Message }

// indexAPI is what dropping scratch indexes needs.
type indexAPI interface {
	GetIndex(ctx context.Context, name string) (*opensearch.Index, error)
	DeleteIndex(ctx context.Context, name string) error
}

// DropScratch deletes the run's scratch indexes: those of its representations that carry
// its mark. Gone already is fine; an index without the mark is left alone.
func DropScratch(ctx context.Context, c indexAPI, run *v1alpha1.BenchmarkRun, index string) error {
	return DropScratchOf(ctx, c, run.Spec.Representations, index, ScratchOwner(run))
}

// DropScratchOf deletes the scratch indexes of these representations that carry owner's mark.
func DropScratchOf(ctx context.Context, c indexAPI, reps []v1alpha1.VectorRepresentation, index, owner string) error {
	for _, rep := range reps {
		name := ScratchIndex(index, rep)
		idx, err := c.GetIndex(ctx, name)
		if opensearch.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if idx.Meta[ScratchMark] != owner {
			continue
		}
		if err := c.DeleteIndex(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// applyRepresentations writes the representation results and the cheapest meeting the
// run's recall target.
func (r Result) applyRepresentations(run *v1alpha1.BenchmarkRun) error {
	status := &run.Status
	status.Representations, status.RepresentationRecommendation = nil, nil
	if len(r.Representations) == 0 {
		return nil
	}
	target := run.Spec.RecallTarget
	if target == "" {
		target = "0.95"
	}
	t, err := strconv.ParseFloat(target, 64)
	if err != nil {
		return fmt.Errorf("spec.recallTarget: %w", err)
	}
	for _, res := range r.Representations {
		out := v1alpha1.BenchmarkRepresentationResult{Name: v1alpha1.VectorRepresentation(res.Name),
			HotBytesPerDoc: num(res.HotBytesPerDoc), DiskBytesPerDoc: num(res.DiskBytesPerDoc)}
		for _, c := range res.HNSW {
			if c.Clients == 1 {
				out.Recall, out.P90Ms, out.QPS = strconv.FormatFloat(c.Recall, 'f', 4, 64), num(c.P90Ms), num(c.QPS)
			}
		}
		status.Representations = append(status.Representations, out)
	}
	choice, ok := bench.RecommendRepresentation(r.Representations, t)
	if !ok {
		return nil
	}
	rec := &v1alpha1.BenchmarkRepresentationRecommendation{RecallTarget: target, Name: v1alpha1.VectorRepresentation(choice.Name), Met: choice.Met}
	if choice.Met {
		rec.Reason = fmt.Sprintf("%s reaches recall %.4f ≥ %s with the fewest bytes an HNSW search keeps hot (%.0f per document; p90 %.2f ms at one client); changing the index to it needs a reindex",
			choice.Name, choice.Recall, target, choice.HotBytesPerDoc, choice.P90Ms)
	} else {
		rec.Reason = fmt.Sprintf("no representation measured reaches recall %s; %s comes closest with %.4f", target, choice.Name, choice.Recall)
	}
	status.RepresentationRecommendation = rec
	return nil
}
