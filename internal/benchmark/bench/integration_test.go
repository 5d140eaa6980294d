package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.OpenSearch)) }

// TestLuceneHNSWRecallOnRealNode loads 5,000 clustered 64-d vectors into a lucene HNSW
// index on the real node and checks recall@10 against brute-force ground truth.
func TestLuceneHNSWRecallOnRealNode(t *testing.T) {
	c := testsupport.OpenSearchClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
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

// TestFaissRepresentationsOnRealNode measures the faiss representations of the same vectors
// on the real node, whose native libraries are built from source: each finds neighbours,
// and its hot bytes are the native memory its graphs take in the k-NN cache — fp16 less
// than float's, binary the least.
func TestFaissRepresentationsOnRealNode(t *testing.T) {
	c := testsupport.OpenSearchClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base, queries := dataset.Generate(dataset.Spec{Count: 5000, Queries: 50, Dim: 64, Seed: 31})
	reps, err := bench.RepresentationsNamed([]string{"faiss-float", "faiss-fp16", "faiss-binary"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.RepresentationConfig{Prefix: "repr-faiss", Field: "embedding", Base: base, Queries: queries, Exact: dataset.ExactKNN(base, queries, 10),
		K: 10, Shards: 1, Clients: []int{1}, Representations: reps, Load: true, Warmup: time.Second, Duration: 2 * time.Second}
	results, err := bench.MeasureRepresentations(ctx, c, cfg)
	t.Cleanup(func() {
		for _, r := range reps {
			_ = c.DeleteIndex(context.Background(), "repr-faiss-"+r.Name)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	hot := map[string]float64{}
	for _, r := range results {
		hot[r.Name] = r.HotBytesPerDoc
		t.Logf("%-12s recall %.3f p90 %.2f ms %.0f q/s; hot %.1f B/doc (k-NN cache), disk %.1f B/doc", r.Name, r.HNSW[0].Recall, r.HNSW[0].P90Ms, r.HNSW[0].QPS, r.HotBytesPerDoc, r.DiskBytesPerDoc)
		// Sign bits keep little of clusters of isotropic noise (Lucene's binary measures 0.01
		// on such data): the binary floor is ten times chance (10 of 5,000).
		floor := 0.9
		if r.DataType == "binary" {
			floor = 0.02
		}
		if r.HNSW[0].Recall < floor || r.Docs != int64(base.Len()) {
			t.Errorf("%s: recall %.3f over %d docs, want >= %.2f", r.Name, r.HNSW[0].Recall, r.Docs, floor)
		}
	}
	if !(hot["faiss-float"] > hot["faiss-fp16"] && hot["faiss-fp16"] > hot["faiss-binary"] && hot["faiss-binary"] > 0) {
		t.Errorf("hot bytes per doc %v: want float > fp16 > binary > 0", hot)
	}
}
