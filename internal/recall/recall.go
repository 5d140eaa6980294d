// Package recall measures the live recall@k of a k-NN index: queries drawn from the index's
// own documents, each searched as clients search (a knn query under the index's current
// settings) and exactly (the k-NN plugin's exact scoring, script_score with knn_score, over
// every document), the two top-k lists compared.
//
// Exact search runs in OpenSearch rather than over vectors fetched to the operator: it
// moves k ids per query instead of the whole index, and costs one pass over the field's
// vectors per query, which sampleSize and the rate limit bound.
package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// StatsGroup is the search stats group every measurement search carries, so the index's
// search counters can tell them from the clients' searches (opensearch.Stats does).
const StatsGroup = opensearch.OperatorStatsGroup

// Searcher runs a search on the shard copies a preference picks; *opensearch.Client is one.
type Searcher interface {
	SearchPreferring(ctx context.Context, index string, body any, preference string) (opensearch.SearchResult, error)
}

// measurement sends one measurement's searches: paced at p.QueriesPerSecond, in the stats
// group StatsGroup, and on the shard copies one preference picks. Left to
// OpenSearch, the exact and the approximate search of a query may run on different copies;
// under segment replication a replica shows its primary's documents only once it has
// copied the segments of the primary's last refresh, and the two lists would differ by
// what the copies hold, not by what the graph misses. The preference is new with each
// seed, so measurements spread over the copies.
type measurement struct {
	s          Searcher
	limiter    *rate.Limiter
	preference string
}

func newMeasurement(s Searcher, p Params) *measurement {
	return &measurement{s: s, limiter: rate.NewLimiter(rate.Limit(p.QueriesPerSecond), 1), preference: "vectorpilot-recall-" + strconv.FormatInt(p.Seed, 10)}
}

// search runs one search and says how long the operator waited for it, pacing excluded.
func (m *measurement) search(ctx context.Context, index string, body map[string]any) (opensearch.SearchResult, time.Duration, error) {
	if err := m.limiter.Wait(ctx); err != nil {
		return opensearch.SearchResult{}, 0, err
	}
	body["stats"] = []string{StatsGroup}
	start := time.Now()
	r, err := m.s.SearchPreferring(ctx, index, body, m.preference)
	return r, time.Since(start), err
}

// Params say what to measure.
type Params struct {
	Index, Field string
	// SpaceType is the field's (l2, cosinesimil, innerproduct, hamming …), which the exact
	// scoring must be told.
	SpaceType  string
	K          int
	SampleSize int
	// QueriesPerSecond paces every search of the measurement.
	QueriesPerSecond float64
	// Seed chooses the sample; a new one per measurement draws new documents.
	Seed int64
}

// Result is one measurement.
type Result struct {
	// Recall is the mean recall@k over Sample queries.
	Recall       float64
	Sample       int
	Searches     int
	ServerMillis int64
	Duration     time.Duration
}

// ErrNoDocuments is a measurement of an index with no document holding the field.
var ErrNoDocuments = fmt.Errorf("no document holds the field")

// Measure runs one measurement.
func Measure(ctx context.Context, s Searcher, p Params) (Result, error) {
	start := time.Now()
	m := newMeasurement(s, p)
	var res Result
	search := func(body map[string]any) (opensearch.SearchResult, error) {
		r, _, err := m.search(ctx, p.Index, body)
		if err == nil {
			res.Searches++
			res.ServerMillis += r.TookMs
		}
		return r, err
	}
	sample, err := search(SampleQuery(p.Field, p.SampleSize, p.Seed))
	if err != nil {
		return res, fmt.Errorf("drawing the sample: %w", err)
	}
	var sum float64
	for _, h := range sample.Hits {
		vector, err := fieldValue(h.Source, p.Field)
		if err != nil {
			return res, fmt.Errorf("document %s: %w", h.ID, err)
		}
		approx, err := search(ApproximateQuery(p.Field, vector, p.K+1))
		if err != nil {
			return res, fmt.Errorf("approximate search: %w", err)
		}
		exact, err := search(ExactQuery(p.Field, p.SpaceType, vector, p.K+1))
		if err != nil {
			return res, fmt.Errorf("exact search: %w", err)
		}
		sum += Of(h.ID, ids(approx.Hits), ids(exact.Hits), p.K)
		res.Sample++
	}
	res.Duration = time.Since(start)
	if res.Sample == 0 {
		return res, ErrNoDocuments
	}
	res.Recall = sum / float64(res.Sample)
	return res, nil
}

// Of is one query's recall@k: the share of the exact top k (the query's own document left
// out, as it is trivially its own nearest neighbour) that the approximate top k holds.
// Fewer than k exact neighbours (a small index) count as they are; none is recall 1.
func Of(self string, approx, exact []string, k int) float64 {
	top := func(ids []string) []string {
		out := make([]string, 0, k)
		for _, id := range ids {
			if id != self && len(out) < k {
				out = append(out, id)
			}
		}
		return out
	}
	want := top(exact)
	if len(want) == 0 {
		return 1
	}
	got := map[string]bool{}
	for _, id := range top(approx) {
		got[id] = true
	}
	found := 0
	for _, id := range want {
		if got[id] {
			found++
		}
	}
	return float64(found) / float64(len(want))
}

// SampleQuery draws n documents holding field at random (seeded), with the field's value.
func SampleQuery(field string, n int, seed int64) map[string]any {
	return map[string]any{
		"size":    n,
		"_source": []string{field},
		"query": map[string]any{"function_score": map[string]any{
			"query":        map[string]any{"exists": map[string]any{"field": field}},
			"random_score": map[string]any{"seed": seed, "field": "_seq_no"},
			"boost_mode":   "replace",
		}},
	}
}

// ApproximateQuery is a client's search: a knn query for k neighbours, ids only, under
// the index's own search settings.
func ApproximateQuery(field string, vector json.RawMessage, k int) map[string]any {
	return map[string]any{
		"size":    k,
		"_source": false,
		"query":   map[string]any{"knn": map[string]any{field: map[string]any{"vector": vector, "k": k}}},
	}
}

// ExactQuery scores every document holding field against vector with the k-NN plugin's
// exact scoring, highest score (nearest) first. knn_score takes the field's own space type,
// binary fields' hamming included (measured on 3.6; its "hammingbit" is for long fields).
func ExactQuery(field, spaceType string, vector json.RawMessage, k int) map[string]any {
	return map[string]any{
		"size":    k,
		"_source": false,
		"query": map[string]any{"script_score": map[string]any{
			"query": map[string]any{"exists": map[string]any{"field": field}},
			"script": map[string]any{"source": "knn_score", "lang": "knn", "params": map[string]any{
				"field": field, "query_value": vector, "space_type": spaceType,
			}},
		}},
	}
}

func fieldValue(source json.RawMessage, field string) (json.RawMessage, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("reading _source: %w", err)
	}
	v, ok := doc[field]
	if !ok {
		return nil, fmt.Errorf("_source has no %s (is the field excluded from _source?)", field)
	}
	return v, nil
}

func ids(hits []opensearch.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// Format is a recall as status shows it, four decimals.
func Format(r float64) string { return strconv.FormatFloat(r, 'f', 4, 64) }
