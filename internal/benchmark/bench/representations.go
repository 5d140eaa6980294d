package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// RepresentationConfig says what a representation sweep measures: one index per
// representation, loaded from the same float vectors, queried with the same queries, and
// scored against the same exact float neighbours.
type RepresentationConfig struct {
	// NodesWarm says the run's sweep warmed the nodes up already.
	NodesWarm bool
	// Prefix names the indexes: <prefix>-<representation>.
	Prefix, Field   string
	Base, Queries   dataset.Vectors
	Exact           [][]dataset.Neighbor
	K, Shards       int
	Clients         []int
	Representations []Representation
	// Load (re)creates and loads the indexes; without it they are measured as they are
	// (a node restarted with other JVM options measures the same segments).
	Load bool
	// MarkKey and MarkValue, when set, are the _meta entry the indexes are created with:
	// an existing index of the same name is then replaced only when it carries it.
	MarkKey, MarkValue string
	Warmup, Duration   time.Duration
	// ExactDuration is the measured time of the brute-force cell (one client); 0 skips it.
	ExactDuration time.Duration
	Progress      func(format string, args ...any)
}

// RepresentationResult is one representation measured.
type RepresentationResult struct {
	Representation
	Index string `json:"index"`
	Docs  int64  `json:"docs"`
	// LoadSeconds is how long loading took, graphs built and merged, when this run loaded.
	LoadSeconds float64 `json:"loadSeconds,omitempty"`
	// HNSW are the approximate k-NN cells, one per client level, concurrent search off.
	HNSW []Cell `json:"hnsw"`
	// Exact is the brute-force cell (the k-NN scoring script over every document), nil
	// when not measured.
	Exact *Cell `json:"exact,omitempty"`
	// Files are the primary segment files' bytes by extension.
	Files map[string]int64 `json:"files"`
	// HotBytesPerDoc is what an HNSW search reads per document: the graph and the vectors
	// it scores (the quantized copy when there is one), the memory to keep cached — for
	// faiss the native memory its graphs take once loaded (k-NN stats).
	HotBytesPerDoc float64 `json:"hotBytesPerDoc"`
	// DiskBytesPerDoc is every vector file per document.
	DiskBytesPerDoc float64 `json:"diskBytesPerDoc"`
}

// vectorFiles are the vector format files: Lucene's raw vectors and their metadata, HNSW
// graph and its metadata, quantized vectors and their metadata, and faiss's native graphs.
var vectorFiles = []string{"vec", "vemf", "vex", "vem", "veq", "vemq", "faiss"}

// MeasureRepresentations loads (when asked) and measures every representation in turn.
func MeasureRepresentations(ctx context.Context, c *opensearch.Client, cfg RepresentationConfig) ([]RepresentationResult, error) {
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	var out []RepresentationResult
	for _, rep := range cfg.Representations {
		enc := NewEncoder(rep, cfg.Base)
		index := cfg.Prefix + "-" + rep.Name
		var loaded time.Duration
		if cfg.Load {
			progress("%s: loading %d vectors", index, cfg.Base.Len())
			start := time.Now()
			if err := loadRepresentation(ctx, c, cfg, index, rep, enc.Encode(cfg.Base)); err != nil {
				return out, fmt.Errorf("%s: %w", index, err)
			}
			loaded = time.Since(start)
		}
		res, err := measureRepresentation(ctx, c, cfg, rep, index, enc.Encode(cfg.Queries))
		if err != nil {
			return out, fmt.Errorf("%s: %w", index, err)
		}
		res.LoadSeconds = round2(loaded.Seconds())
		progress("%s: %s", index, res.summary())
		out = append(out, res)
	}
	return out, nil
}

// ErrNotOurs is a scratch index name taken by an index without the run's mark.
var ErrNotOurs = errors.New("an index of that name exists and is not this run's scratch index")

func loadRepresentation(ctx context.Context, c *opensearch.Client, cfg RepresentationConfig, index string, rep Representation, v dataset.Vectors) error {
	var meta map[string]any
	if cfg.MarkKey != "" {
		meta = map[string]any{cfg.MarkKey: cfg.MarkValue}
		existing, err := c.GetIndex(ctx, index)
		switch {
		case opensearch.IsNotFound(err):
		case err != nil:
			return err
		case existing.Meta[cfg.MarkKey] != cfg.MarkValue:
			return ErrNotOurs
		}
	}
	if err := c.DeleteIndex(ctx, index); err != nil {
		return err
	}
	settings := map[string]any{"index.knn": true, "number_of_shards": max(cfg.Shards, 1), "number_of_replicas": 0}
	if err := c.CreateIndex(ctx, index, settings, map[string]any{cfg.Field: rep.Mapping(cfg.Base.Dim)}, meta); err != nil {
		return err
	}
	// One segment per shard: every representation searches the same structure.
	return LoadInSegments(ctx, c, index, cfg.Field, v, 1, 1000, nil)
}

func measureRepresentation(ctx context.Context, c *opensearch.Client, cfg RepresentationConfig, rep Representation, index string, queries dataset.Vectors) (RepresentationResult, error) {
	res := RepresentationResult{Representation: rep, Index: index}
	stats, err := c.Stats(ctx, index)
	if err != nil {
		return res, err
	}
	res.Docs = stats.DocsCount
	if res.Files, err = c.SegmentFileBytes(ctx, index); err != nil {
		return res, err
	}
	if res.Docs > 0 {
		var disk int64
		for _, ext := range vectorFiles {
			disk += res.Files[ext]
		}
		scored := res.Files["vec"]
		if q := res.Files["veq"]; q > 0 {
			scored = q
		}
		res.HotBytesPerDoc = round2(float64(res.Files["vex"]+scored) / float64(res.Docs))
		res.DiskBytesPerDoc = round2(float64(disk) / float64(res.Docs))
	}
	sweep := SweepConfig{Index: index, Field: cfg.Field, Queries: queries, Exact: cfg.Exact, K: cfg.K,
		SliceCounts: []indexspec.Slices{indexspec.SlicesOff}, Clients: cfg.Clients, Warmup: cfg.Warmup, Duration: cfg.Duration, NodesWarm: cfg.NodesWarm}
	report, err := Sweep(ctx, c, sweep)
	if err != nil {
		return res, err
	}
	res.HNSW = report.Results
	if rep.Native() && res.Docs > 0 {
		// The sweep's queries loaded the graphs into the k-NN cache.
		graph, err := c.GraphMemoryBytes(ctx, index)
		if err != nil {
			return res, err
		}
		if graph == 0 {
			return res, fmt.Errorf("index %s: no faiss graph in the k-NN cache after its queries: its hot bytes cannot be measured", index)
		}
		res.HotBytesPerDoc = round2(float64(graph) / float64(res.Docs))
	}
	if cfg.ExactDuration > 0 {
		sweep.Clients, sweep.Duration = []int{1}, cfg.ExactDuration
		sweep.Body = func(v []float32, k int) any { return opensearch.ExactKNNQuery(cfg.Field, v, k, rep.SpaceType()) }
		report, err := Sweep(ctx, c, sweep)
		if err != nil {
			return res, fmt.Errorf("exact search: %w", err)
		}
		res.Exact = &report.Results[0]
	}
	return res, nil
}

func (r RepresentationResult) summary() string {
	s := fmt.Sprintf("%.0f hot bytes/doc", r.HotBytesPerDoc)
	for _, c := range r.HNSW {
		s += fmt.Sprintf("; %d client(s): recall %.4f p90 %.2f ms %.1f q/s cpu %.1f%%", c.Clients, c.Recall, c.P90Ms, c.QPS, c.CPUPercent)
	}
	if r.Exact != nil {
		s += fmt.Sprintf("; exact: recall %.4f p90 %.2f ms %.1f q/s", r.Exact.Recall, r.Exact.P90Ms, r.Exact.QPS)
	}
	return s
}
