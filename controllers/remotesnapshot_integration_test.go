package controllers_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// warmNodeConfig makes the local node able to serve searchable snapshots: in OpenSearch
// 3.x the warm role (search must stand alone) with a file cache.
const warmNodeConfig = "node.roles: [cluster_manager, data, ingest, warm]\nnode.search.cache.size: 512mb\n"

// searchableSnapshotShape is what TestSearchableSnapshotServesFromS3 measures: CI's small
// index in a cache that holds it, or (SEARCHABLE_SNAPSHOT_VECTORS, _CACHE_MB, _ENGINE) a
// larger one in a cache smaller than the index, where queries read from S3 (the cold-read
// benchmark of docs/snapshots.md).
func searchableSnapshotShape() (vectors int, cacheMB int64, engine string) {
	vectors, cacheMB, engine = 20000, 512, "lucene"
	if v, err := strconv.Atoi(os.Getenv("SEARCHABLE_SNAPSHOT_VECTORS")); err == nil && v > 0 {
		vectors = v
	}
	if v, err := strconv.ParseInt(os.Getenv("SEARCHABLE_SNAPSHOT_CACHE_MB"), 10, 64); err == nil && v > 0 {
		cacheMB = v
	}
	if v := os.Getenv("SEARCHABLE_SNAPSHOT_ENGINE"); v != "" {
		engine = v
	}
	return vectors, cacheMB, engine
}

// TestSearchableSnapshotServesFromS3: 20,000 lucene vectors are snapshotted to the real S3
// server, the index is deleted and a VectorIndex restores it as a RemoteSnapshot: the same
// top 10 for 50 fixed queries, served from S3 through the node's file cache, read-only
// (writes refused by OpenSearch, field changes by admission), status saying so. It logs
// the restore's time and S3 reads, then query latency and S3 reads per pass (first, after
// file cache clears, after k-NN graph evictions, after both, warm) next to the local
// index's, warm and after graph evictions, the file cache in use and the local disk each
// index takes.
func TestSearchableSnapshotServesFromS3(t *testing.T) {
	e := startOperator(t)
	const node = "ctl-searchable"
	count, cacheMB, engine := searchableSnapshotShape()
	osClient, url := startS3Node(t, node, "searchable", strings.Replace(warmNodeConfig, "512mb", fmt.Sprintf("%dmb", cacheMB), 1))
	sc := e.cluster("vectors", url)
	e.eventually(60*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(sc), sc)
		fc := sc.Status.FileCache
		return fc != nil && fc.Nodes == 1 && fc.TotalBytes == cacheMB<<20 && sc.Status.RemoteStore == nil,
			fmt.Sprintf("status.fileCache %+v, remoteStore %+v; want one node's %dmb cache, not remote-backed", fc, sc.Status.RemoteStore, cacheMB)
	})

	source := luceneIndex(e, "source")
	source.Spec.Fields[0].Engine = engine
	e.create(source)
	e.waitIndexReady(source)
	base, queries := dataset.Generate(dataset.Spec{Count: count, Queries: 50, Dim: 32, Seed: 21})
	ingest(t, osClient, source.Spec.IndexName, base)
	// One segment per shard, and searched as such (a refresh opens the merged segment), so
	// the local answers come from the very segments the snapshot holds.
	if err := osClient.ForceMerge(t.Context(), source.Spec.IndexName, 1); err != nil {
		t.Fatal(err)
	}
	if err := osClient.Refresh(t.Context(), source.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	want := searchHits(t, osClient, source.Spec.IndexName, queries)
	local := latencies(t, osClient, source.Spec.IndexName, queries, nil)
	graphs := &graphEvictor{t: t, url: url}
	localCold := readPass{"local index, each query after a k-NN cache clear", latencies(t, osClient, source.Spec.IndexName, queries, graphs.evict), nil}
	graphs.expectLoads(engine, queries.Len())
	localDisk := indexDiskBytes(t, node, liveIndex(t, osClient, source.Spec.IndexName).UUID)

	if err := osClient.PutRepository(t.Context(), "searchable", "s3", map[string]any{"bucket": "searchable", "base_path": e.ns}); err != nil {
		t.Fatal(err)
	}
	snap := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "source-snap", Namespace: e.ns},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "searchable", Indices: []string{source.Name}}}
	e.create(snap)
	e.waitCondition(snap, func() []metav1.Condition { return snap.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "SnapshotSucceeded", 120*time.Second)
	if err := e.k8s.Delete(e.ctx, source); err != nil {
		t.Fatal(err)
	}
	e.eventually(60*time.Second, func() (bool, string) {
		_, err := osClient.GetIndex(t.Context(), source.Spec.IndexName)
		return opensearch.IsNotFound(err), fmt.Sprintf("index %s: %v", source.Spec.IndexName, err)
	})

	served := luceneIndex(e, "served")
	served.Spec.Fields[0].Engine = engine
	served.Spec.RestoreFrom = &v1alpha1.RestoreSource{SnapshotRef: &v1alpha1.LocalObjectReference{Name: snap.Name}, Index: source.Spec.IndexName,
		Storage: v1alpha1.StorageRemoteSnapshot}
	beforeRestore, restoreStart := readFileCacheCounts(t, url), time.Now()
	e.create(served)
	e.waitIndexReady(served)
	restoreTook := time.Since(restoreStart)
	live := liveIndex(t, osClient, served.Spec.IndexName)
	if live.Settings["index.store.type"] != "remote_snapshot" || served.Status.Storage != v1alpha1.StorageRemoteSnapshot {
		t.Fatalf("index.store.type %q, status.storage %q; want remote_snapshot, %s", live.Settings["index.store.type"], served.Status.Storage, v1alpha1.StorageRemoteSnapshot)
	}
	if served.Status.DocsCount != int64(base.Len()) {
		t.Errorf("status.docsCount %d, want %d", served.Status.DocsCount, base.Len())
	}

	restoredDisk, restoredCache := indexDiskBytes(t, node, live.UUID), fileCacheUsed(t, osClient)
	restoredCounts := readFileCacheCounts(t, url)
	pass := func(name string, before func()) readPass {
		start := readFileCacheCounts(t, url)
		h := latencies(t, osClient, served.Spec.IndexName, queries, before)
		return readPass{name, h, readFileCacheCounts(t, url).since(start)}
	}
	passes := []readPass{{"local index", local, nil}, localCold,
		pass("remote snapshot, first pass after the restore", nil),
		pass("remote snapshot, each query after a file cache clear", func() { clearFileCache(t, url) })}
	clearedCache := fileCacheUsed(t, osClient)
	// A native engine's graphs stay in the k-NN plugin's memory once loaded: evicted, each
	// query loads them again through the file cache, and from S3 when the cache was cleared
	// too — the cold path of a faiss snapshot. Lucene's graphs live in its files, which an
	// open shard pins, so for lucene these passes are the one before them again.
	passes = append(passes, pass("remote snapshot, each query after a k-NN cache clear", graphs.evict))
	graphs.expectLoads(engine, queries.Len())
	passes = append(passes, pass("remote snapshot, each query after file and k-NN cache clears", func() {
		graphs.evict()
		clearFileCache(t, url)
	}))
	graphs.expectLoads(engine, queries.Len())
	passes = append(passes, pass("remote snapshot, warm", nil))
	// The remote snapshot's files are read through the file cache, not mmap, and Lucene
	// scores such vectors on another code path, whose float sums differ in the last bit
	// (0.98364470 locally, 0.98364466 from S3): hits whose scores differ by less than
	// scoreTolerance may swap places; any other difference is a wrong answer.
	const scoreTolerance = 1e-6
	differ := 0
	for q, hits := range searchHits(t, osClient, served.Spec.IndexName, queries) {
		if why := topTenDiffers(want[q], hits, scoreTolerance); why != "" {
			differ++
			t.Errorf("query %d: %s\n  local           %v\n  remote snapshot %v", q, why, want[q], hits)
		}
	}
	servedCache, servedDisk := fileCacheUsed(t, osClient), indexDiskBytes(t, node, live.UUID)
	t.Logf("%d %s vectors × 32 dims, 2 shards, 50 queries, top 10: %d of %d differ", base.Len(), engine, differ, len(want))
	restored := restoredCounts.since(beforeRestore)
	t.Logf("restore to Ready: %.1f s; file cache meanwhile: %s", restoreTook.Seconds(), restored)
	for _, p := range passes {
		t.Logf("%s", p)
	}
	if servedCache == 0 {
		t.Error("the node's file cache is empty after queries on the searchable snapshot")
	}
	// A clear evicts only what no open file pins: the misses of each pass say what it read
	// from S3.
	t.Logf("file cache used: %d bytes after the restore, %d after a clear, %d after the queries (of %d MB)", restoredCache, clearedCache, servedCache, cacheMB)
	t.Logf("local disk: local index %d bytes; remote snapshot %d bytes after the restore, %d after the queries (what they read, cached)",
		localDisk, restoredDisk, servedDisk)

	// Read-only: OpenSearch refuses documents; admission refuses a new field, and a
	// setting the snapshot keeps is reported, not written.
	if err := osClient.Bulk(t.Context(), []byte(`{"index":{"_index":"`+served.Spec.IndexName+`","_id":"x"}}`+"\n"+`{"title":"new"}`+"\n")); err == nil {
		t.Error("a document was written to the searchable snapshot")
	}
	more := v1alpha1.VectorField{Name: "more", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "lucene",
		Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}
	if err := e.tryUpdate(served, func() { served.Spec.Fields = append(served.Spec.Fields, more) }); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "RemoteSnapshot index are immutable") {
		t.Errorf("a field added to a RemoteSnapshot index: %v, want refused at admission", err)
	}
	e.update(served, func() { served.Spec.RefreshInterval = "30s"; served.Spec.Replicas = 1 })
	e.eventually(60*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(served), served); err != nil {
			return false, err.Error()
		}
		live := liveIndex(t, osClient, served.Spec.IndexName)
		return slices.Contains(served.Status.FixedSettings, "index.refresh_interval=30s") && live.Settings["index.number_of_replicas"] == "1" &&
				served.Status.ObservedGeneration == served.Generation,
			fmt.Sprintf("fixedSettings %v, replicas %s", served.Status.FixedSettings, live.Settings["index.number_of_replicas"])
	})
	if v := liveIndex(t, osClient, served.Spec.IndexName).Settings["index.refresh_interval"]; v == "30s" {
		t.Error("refresh_interval was written to the searchable snapshot")
	}
}

// readPass is one pass of the queries over an index: their latency and, on the searchable
// snapshot, what the file cache did meanwhile (a miss is a block read from S3).
type readPass struct {
	name    string
	latency *hdrhistogram.Histogram
	cache   *fileCacheCounts
}

func (p readPass) String() string {
	s := fmt.Sprintf("%-62s p50 %5.1f ms  p90 %5.1f ms", p.name, float64(p.latency.ValueAtQuantile(50))/1000, float64(p.latency.ValueAtQuantile(90))/1000)
	if p.cache != nil {
		s += "  file cache: " + p.cache.String()
	}
	return s
}

// latencies runs each query once, after before (when given), and records its round trip.
func latencies(t *testing.T, c *opensearch.Client, index string, queries dataset.Vectors, before func()) *hdrhistogram.Histogram {
	t.Helper()
	h := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	for q := 0; q < queries.Len(); q++ {
		if before != nil {
			before()
		}
		start := time.Now()
		if _, err := c.Search(t.Context(), index, opensearch.KNNQuery("embedding", queries.At(q), 10)); err != nil {
			t.Fatal(err)
		}
		_ = h.RecordValue(time.Since(start).Microseconds())
	}
	return h
}

// fileCacheUsed is the bytes of the node's file cache in use.
func fileCacheUsed(t *testing.T, c *opensearch.Client) int64 {
	t.Helper()
	nodes, err := c.FileCacheNodes(t.Context())
	if err != nil || len(nodes) != 1 || nodes[0].UsedBytes == nil {
		t.Fatalf("file cache of the node: %+v, %v", nodes, err)
	}
	return *nodes[0].UsedBytes
}

// fileCacheCounts are a node's file cache counters since it started.
type fileCacheCounts struct {
	Hits         int64 `json:"hit_count"`
	Misses       int64 `json:"miss_count"`
	EvictedBytes int64 `json:"evictions_in_bytes"`
}

// since is what the counters moved by from start.
func (c fileCacheCounts) since(start fileCacheCounts) *fileCacheCounts {
	return &fileCacheCounts{Hits: c.Hits - start.Hits, Misses: c.Misses - start.Misses, EvictedBytes: c.EvictedBytes - start.EvictedBytes}
}

func (c fileCacheCounts) String() string {
	return fmt.Sprintf("%d hits, %d misses, %d bytes evicted", c.Hits, c.Misses, c.EvictedBytes)
}

// readFileCacheCounts reads the one node's file cache counters (_nodes/stats/file_cache,
// which OpenSearch 3.x answers as aggregate_file_cache).
func readFileCacheCounts(t *testing.T, url string) fileCacheCounts {
	t.Helper()
	return oneNodeStats[struct {
		FileCache fileCacheCounts `json:"aggregate_file_cache"`
	}](t, url+"/_nodes/stats/file_cache").FileCache
}

// oneNodeStats reads a node stats API's answer for the one node there is.
func oneNodeStats[T any](t *testing.T, url string) T {
	t.Helper()
	var stats struct {
		Nodes map[string]T `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(testsupport.Send(t, http.MethodGet, url, "")), &stats); err != nil || len(stats.Nodes) != 1 {
		t.Fatalf("GET %s: %d nodes, %v", url, len(stats.Nodes), err)
	}
	var one T
	for _, n := range stats.Nodes {
		one = n
	}
	return one
}

// clearFileCache evicts from the node's file cache what no open file pins.
func clearFileCache(t *testing.T, url string) {
	t.Helper()
	testsupport.Send(t, http.MethodPost, url+"/_cache/clear?file=true", "")
}

// graphEvictor drops every graph from the k-NN plugin's native memory before each query of
// a pass and counts the graphs the queries load again. The plugin's clear-cache API refuses
// a searchable snapshot ("remote index is read-only"), but the plugin rebuilds its cache,
// empty, whenever its memory limit changes: each eviction sets a limit other than the one
// before it. The load count restarts with the cache, so each query's loads are read before
// the next eviction, the last one's when the pass ends.
type graphEvictor struct {
	t         *testing.T
	url       string
	evictions int64
	inPass    bool  // a query of the pass ran since the last eviction
	loaded    int64 // graphs the pass's queries loaded
}

func (g *graphEvictor) evict() {
	g.t.Helper()
	if g.inPass {
		g.loaded += knnGraphLoads(g.t, g.url)
	}
	limit := []string{"49%", "50%"}[g.evictions%2]
	testsupport.Send(g.t, http.MethodPut, g.url+"/_cluster/settings", `{"transient":{"knn.memory.circuit_breaker.limit":"`+limit+`"}}`)
	g.evictions++
	g.inPass = true
}

// expectLoads ends a pass: a native engine's queries must each have loaded a graph again.
func (g *graphEvictor) expectLoads(engine string, queries int) {
	g.t.Helper()
	g.loaded += knnGraphLoads(g.t, g.url)
	if engine != "lucene" && g.loaded < int64(queries) {
		g.t.Errorf("%d k-NN graph loads in %d queries after evicting the graphs; want each query to load them again", g.loaded, queries)
	}
	g.inPass, g.loaded = false, 0
}

// knnGraphLoads is how many graphs the k-NN plugin has loaded into native memory on the one
// node since its cache was last rebuilt.
func knnGraphLoads(t *testing.T, url string) int64 {
	t.Helper()
	return oneNodeStats[struct {
		Loads int64 `json:"load_success_count"`
	}](t, url+"/_plugins/_knn/stats/load_success_count").Loads
}

// indexDiskBytes is the size of the files under the index's folders on the local node (its
// shard folders, and for a searchable snapshot also its file cache folder).
func indexDiskBytes(t *testing.T, node, uuid string) int64 {
	t.Helper()
	var total int64
	root := filepath.Join(testsupport.Root(t), "bin", "run", "opensearch-"+node, "data")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, string(filepath.Separator)+uuid+string(filepath.Separator)) {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// topTenDiffers says how got differs from want beyond swaps between hits whose scores are
// within tolerance of each other, or "" when it does not.
func topTenDiffers(want, got []opensearch.Hit, tolerance float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d hits, want %d", len(got), len(want))
	}
	for i, h := range got {
		if h.ID == want[i].ID {
			continue
		}
		// Another hit at rank i: it must score as the one it replaced, by either answer.
		j := slices.IndexFunc(want, func(w opensearch.Hit) bool { return w.ID == h.ID })
		if j >= 0 && math.Abs(want[j].Score-want[i].Score) <= tolerance {
			continue
		}
		if j < 0 && math.Abs(h.Score-want[i].Score) <= tolerance {
			continue
		}
		return fmt.Sprintf("rank %d is %s (score %v), want %s (score %v)", i+1, h.ID, h.Score, want[i].ID, want[i].Score)
	}
	return ""
}

// searchHits are each query's top-10 hits with their scores.
func searchHits(t *testing.T, c *opensearch.Client, index string, queries dataset.Vectors) [][]opensearch.Hit {
	t.Helper()
	out := make([][]opensearch.Hit, queries.Len())
	for q := range out {
		res, err := c.Search(t.Context(), index, opensearch.KNNQuery("embedding", queries.At(q), 10))
		if err != nil {
			t.Fatal(err)
		}
		out[q] = res.Hits
	}
	return out
}

func TestTopTenDiffers(t *testing.T) {
	want := []opensearch.Hit{{ID: "a", Score: 0.99}, {ID: "b", Score: 0.9862828}, {ID: "c", Score: 0.9862828}, {ID: "d", Score: 0.97}}
	for _, tc := range []struct {
		name string
		got  []opensearch.Hit
		want bool
	}{
		{"the same", want, false},
		{"a tie swapped, its score a bit off", []opensearch.Hit{{ID: "a", Score: 0.99}, {ID: "c", Score: 0.9862828}, {ID: "b", Score: 0.98628277}, {ID: "d", Score: 0.97}}, false},
		{"the last replaced by one as close", []opensearch.Hit{want[0], want[1], want[2], {ID: "e", Score: 0.9700001}}, false},
		{"the last replaced by a farther one", []opensearch.Hit{want[0], want[1], want[2], {ID: "e", Score: 0.96}}, true},
		{"two distinct scores swapped", []opensearch.Hit{want[1], want[0], want[2], want[3]}, true},
		{"a hit missing", want[:3], true},
	} {
		if got := topTenDiffers(want, tc.got, 1e-6); (got != "") != tc.want {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}
