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
// query latency after a file cache clear and warm next to the local index's, the file cache
// in use and the local disk each index takes.
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
	e.create(served)
	e.waitIndexReady(served)
	live := liveIndex(t, osClient, served.Spec.IndexName)
	if live.Settings["index.store.type"] != "remote_snapshot" || served.Status.Storage != v1alpha1.StorageRemoteSnapshot {
		t.Fatalf("index.store.type %q, status.storage %q; want remote_snapshot, %s", live.Settings["index.store.type"], served.Status.Storage, v1alpha1.StorageRemoteSnapshot)
	}
	if served.Status.DocsCount != int64(base.Len()) {
		t.Errorf("status.docsCount %d, want %d", served.Status.DocsCount, base.Len())
	}

	restoredDisk, restoredCache := indexDiskBytes(t, node, live.UUID), fileCacheUsed(t, osClient)
	restoredCounts := readFileCacheCounts(t, url)
	first := latencies(t, osClient, served.Spec.IndexName, queries, nil)
	firstCounts := readFileCacheCounts(t, url)
	cold := latencies(t, osClient, served.Spec.IndexName, queries, func() { clearFileCache(t, url) })
	clearedCache := fileCacheUsed(t, osClient)
	warm := latencies(t, osClient, served.Spec.IndexName, queries, nil)
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
	for _, l := range []struct {
		name string
		h    *hdrhistogram.Histogram
	}{{"local index", local}, {"remote snapshot, first pass after the restore", first},
		{"remote snapshot, each query after a file cache clear", cold}, {"remote snapshot, warm", warm}} {
		t.Logf("%-54s p50 %5.1f ms  p90 %5.1f ms", l.name, float64(l.h.ValueAtQuantile(50))/1000, float64(l.h.ValueAtQuantile(90))/1000)
	}
	if servedCache == 0 {
		t.Error("the node's file cache is empty after queries on the searchable snapshot")
	}
	// Opening the shards fetched their files whole at this size, and a clear evicts only
	// what no open file pins: the "after a clear" figures are not reads from S3.
	t.Logf("file cache used: %d bytes after the restore, %d after a clear, %d after the queries (of %d MB)", restoredCache, clearedCache, servedCache, cacheMB)
	t.Logf("file cache during the first pass after the restore: %d hits, %d misses, %d bytes evicted",
		firstCounts.Hits-restoredCounts.Hits, firstCounts.Misses-restoredCounts.Misses, firstCounts.EvictedBytes-restoredCounts.EvictedBytes)
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

// readFileCacheCounts reads the one node's file cache counters (_nodes/stats/file_cache,
// which OpenSearch 3.x answers as aggregate_file_cache).
func readFileCacheCounts(t *testing.T, url string) fileCacheCounts {
	t.Helper()
	resp, err := http.Get(url + "/_nodes/stats/file_cache")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct {
		Nodes map[string]struct {
			FileCache fileCacheCounts `json:"aggregate_file_cache"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil || len(stats.Nodes) != 1 {
		t.Fatalf("file cache stats: %d nodes, %v", len(stats.Nodes), err)
	}
	for _, n := range stats.Nodes {
		return n.FileCache
	}
	return fileCacheCounts{}
}

// clearFileCache empties the node's file cache, so the next query reads from S3.
func clearFileCache(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url+"/_cache/clear?file=true", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("clearing the file cache: %s", resp.Status)
	}
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
