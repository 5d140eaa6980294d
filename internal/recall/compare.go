package recall

import (
	"context"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Side is one index's figures in a comparison.
type Side struct {
	Recall float64
	// P90 of the approximate searches' latency as the operator, a client, saw it.
	P90 time.Duration
}

// Comparison is two indexes measured on the same queries.
type Comparison struct {
	Source, Target Side
	Sample         int
}

// Compare measures the recall@k and search latency of target against source on the same
// queries: documents drawn from source, each searched exactly on both, then approximately
// on both (in turns, so that neither always runs first on a warm cache). p.Index is the
// source. Each index's recall is against its own exact top k: a rebuild's target is gated
// while clients still write to the source, and lacks their latest writes until the swap's
// final pass; against the source's neighbours, each of those would count as the new
// graph's miss.
func Compare(ctx context.Context, s Searcher, p Params, target string) (Comparison, error) {
	m := newMeasurement(s, p)
	var cmp Comparison
	sample, _, err := m.search(ctx, p.Index, SampleQuery(p.Field, p.SampleSize, p.Seed))
	if err != nil {
		return cmp, fmt.Errorf("drawing the sample: %w", err)
	}
	hist := map[string]*hdrhistogram.Histogram{p.Index: newLatencyHistogram(), target: newLatencyHistogram()}
	recall := map[string]float64{}
	for i, h := range sample.Hits {
		vector, err := fieldValue(h.Source, p.Field)
		if err != nil {
			return cmp, fmt.Errorf("document %s: %w", h.ID, err)
		}
		exact := map[string][]string{}
		for _, index := range []string{p.Index, target} {
			res, _, err := m.search(ctx, index, ExactQuery(p.Field, p.SpaceType, vector, p.K+1))
			if err != nil {
				return cmp, fmt.Errorf("exact search on %s: %w", index, err)
			}
			exact[index] = ids(res.Hits)
		}
		order := []string{p.Index, target}
		if i%2 == 1 {
			order = []string{target, p.Index}
		}
		for _, index := range order {
			approx, took, err := m.search(ctx, index, ApproximateQuery(p.Field, vector, p.K+1))
			if err != nil {
				return cmp, fmt.Errorf("approximate search on %s: %w", index, err)
			}
			_ = hist[index].RecordValue(took.Microseconds())
			recall[index] += Of(h.ID, ids(approx.Hits), exact[index], p.K)
		}
		cmp.Sample++
	}
	if cmp.Sample == 0 {
		return cmp, ErrNoDocuments
	}
	side := func(index string) Side {
		return Side{Recall: recall[index] / float64(cmp.Sample), P90: time.Duration(hist[index].ValueAtQuantile(90)) * time.Microsecond}
	}
	cmp.Source, cmp.Target = side(p.Index), side(target)
	return cmp, nil
}

func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
}
