package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/bench"
	"github.com/vectorpilot/vectorpilot/internal/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.OpenSearch)) }

// TestLuceneHNSWRecallOnRealNode loads 5,000 clustered 64-d vectors into a lucene HNSW
// index on the real node and checks recall@10 against brute-force ground truth.
func TestLuceneHNSWRecallOnRealNode(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := opensearch.New(opensearch.Config{Endpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	const index, field, k = "recall-lucene-hnsw", "embedding", 10
	base, queries := dataset.Generate(dataset.Spec{Count: 5000, Queries: 100, Dim: 64, Seed: 20261122})
	_ = c.DeleteIndex(ctx, index)
	t.Cleanup(func() { _ = c.DeleteIndex(context.Background(), index) })
	settings := map[string]any{"index.knn": true, "index.number_of_shards": 1, "index.number_of_replicas": 0, "index.knn.algo_param.ef_search": 100}
	props := map[string]any{field: map[string]any{
		"type": "knn_vector", "dimension": base.Dim,
		"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2", "parameters": map[string]any{"m": 16, "ef_construction": 128}},
	}}
	if err := c.CreateIndex(ctx, index, settings, props, nil); err != nil {
		t.Fatal(err)
	}
	if err := bench.Ingest(ctx, c, index, field, base, 500, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx, index); err != nil {
		t.Fatal(err)
	}
	stats, err := c.Stats(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	if stats.DocsCount != int64(base.Len()) {
		t.Fatalf("index holds %d docs, ingested %d", stats.DocsCount, base.Len())
	}
	got, err := bench.SearchIDs(ctx, c, index, field, queries, k)
	if err != nil {
		t.Fatal(err)
	}
	recall := dataset.Recall(dataset.ExactKNN(base, queries, k), got)
	t.Logf("recall@%d = %.4f over %d queries, %d vectors of dimension %d, %d segments", k, recall, queries.Len(), base.Len(), base.Dim, stats.Segments)
	if recall < 0.95 {
		t.Fatalf("recall@%d = %.4f, want >= 0.95", k, recall)
	}
}
