package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// QueryResult is what one pass of queries measured.
type QueryResult struct {
	Queries    int
	Recall     float64
	P50Ms      float64
	P90Ms      float64
	P99Ms      float64
	Throughput float64 // queries per second, one client
}

// MeasureQueries runs every query once, one at a time, timing each round trip into an HDR
// histogram (microsecond precision), and scores recall@k against the exact neighbours.
func MeasureQueries(ctx context.Context, c *opensearch.Client, index, field string, queries dataset.Vectors, exact [][]dataset.Neighbor, k int) (QueryResult, error) {
	hist := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	got := make([][]int, queries.Len())
	start := time.Now()
	for q := 0; q < queries.Len(); q++ {
		t0 := time.Now()
		res, err := c.Search(ctx, index, opensearch.KNNQuery(field, queries.At(q), k))
		if err != nil {
			return QueryResult{}, fmt.Errorf("query %d: %w", q, err)
		}
		if err := hist.RecordValue(time.Since(t0).Microseconds()); err != nil {
			return QueryResult{}, err
		}
		for _, h := range res.Hits {
			id, err := strconv.Atoi(h.ID)
			if err != nil {
				return QueryResult{}, fmt.Errorf("query %d: hit id %q is not a vector position", q, h.ID)
			}
			got[q] = append(got[q], id)
		}
	}
	elapsed := time.Since(start)
	ms := func(p float64) float64 { return float64(hist.ValueAtQuantile(p)) / 1000 }
	return QueryResult{
		Queries:    queries.Len(),
		Recall:     dataset.Recall(exact, got),
		P50Ms:      ms(50),
		P90Ms:      ms(90),
		P99Ms:      ms(99),
		Throughput: float64(queries.Len()) / elapsed.Seconds(),
	}, nil
}
