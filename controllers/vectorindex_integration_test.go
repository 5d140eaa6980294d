package controllers_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// luceneIndex is a VectorIndex with one lucene HNSW field; replicas 0 so a one-node
// cluster is green.
func luceneIndex(e *env, name string) *v1alpha1.VectorIndex {
	return &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.VectorIndexSpec{
			ClusterRef:      v1alpha1.LocalObjectReference{Name: "vectors"},
			IndexName:       e.ns + "-" + name,
			Shards:          2,
			Replicas:        0,
			RefreshInterval: "2s",
			Fields: []v1alpha1.VectorField{{
				Name: "embedding", Dimension: 32, DataType: "float", SpaceType: "cosinesimil", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x",
				Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](24), EfConstruction: ptr.To[int32](128), EfSearch: ptr.To[int32](64)}},
			}},
			ExtraMappings:  map[string]v1alpha1.MappingProperty{"title": {JSON: apiextensionsv1.JSON{Raw: []byte(`{"type":"text"}`)}}},
			Search:         v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto", MaxSliceCount: 2}},
			DeletionPolicy: v1alpha1.DeletionPolicyDelete,
		},
	}
}

// indexOf is a one-shard VectorIndex of the fields as written (the API's defaults fill the
// rest), deleted with its object.
func indexOf(e *env, name string, fields ...v1alpha1.VectorField) *v1alpha1.VectorIndex {
	return &v1alpha1.VectorIndex{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.VectorIndexSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, IndexName: e.ns + "-" + name, Shards: 1,
			Fields: fields, DeletionPolicy: v1alpha1.DeletionPolicyDelete},
	}
}

func liveIndex(t *testing.T, c *opensearch.Client, name string) *opensearch.Index {
	t.Helper()
	idx, err := c.GetIndex(t.Context(), name)
	if err != nil {
		t.Fatalf("index %s in OpenSearch: %v", name, err)
	}
	return idx
}

func property(t *testing.T, idx *opensearch.Index, field string) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(idx.Properties[field], &p); err != nil {
		t.Fatalf("field %s in mapping of %s: %v", field, idx.Name, err)
	}
	return p
}

func TestIndexCreatedWithExactMappingAndSettings(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	sc := e.cluster("vectors", url)
	vi := luceneIndex(e, "products")
	e.create(vi)
	e.waitIndexReady(vi)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 30*time.Second)
	if sc.Status.Version == "" || sc.Status.KNNPluginVersion == "" || sc.Status.Nodes != 1 {
		t.Errorf("SearchCluster status = %+v", sc.Status)
	}

	idx := liveIndex(t, osClient, vi.Spec.IndexName)
	for k, want := range map[string]string{
		"index.number_of_shards": "2", "index.number_of_replicas": "0", "index.refresh_interval": "2s", "index.knn": "true",
		"index.knn.algo_param.ef_search": "64", "index.search.concurrent_segment_search.mode": "auto", "index.search.concurrent.max_slice_count": "2",
	} {
		if got := idx.Settings[k]; got != want {
			t.Errorf("setting %s = %q, want %q", k, got, want)
		}
	}
	p := property(t, idx, "embedding")
	method, _ := p["method"].(map[string]any)
	params, _ := method["parameters"].(map[string]any)
	if p["type"] != "knn_vector" || p["dimension"] != float64(32) || method["engine"] != "lucene" || method["space_type"] != "cosinesimil" ||
		method["name"] != "hnsw" || params["m"] != float64(24) || params["ef_construction"] != float64(128) {
		t.Errorf("embedding mapping = %v", p)
	}
	if title := property(t, idx, "title"); title["type"] != "text" {
		t.Errorf("title mapping = %v", title)
	}
	if idx.Meta[indexspec.MetaUID] != string(vi.UID) {
		t.Errorf("_meta = %v, want owner uid %s", idx.Meta, vi.UID)
	}
	if vi.Status.IndexUUID != idx.UUID || vi.Status.Health != "green" || vi.Status.MaxSliceCount != 2 || vi.Status.IndexName != vi.Spec.IndexName {
		t.Errorf("VectorIndex status = %+v", vi.Status)
	}
	e.waitEvent(vi.Name, "Created")
}

func TestDynamicSettingsAndNewFieldsConverge(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "tuned")
	e.create(vi)
	e.waitIndexReady(vi)
	uuid := vi.Status.IndexUUID

	e.update(vi, func() {
		vi.Spec.Replicas = 1
		vi.Spec.Fields[0].Method.Parameters.EfSearch = ptr.To[int32](200)
		vi.Spec.Search.ConcurrentSegmentSearch = v1alpha1.ConcurrentSegmentSearch{Mode: "all", MaxSliceCount: 4}
		vi.Spec.RefreshInterval = "30s"
		vi.Spec.Fields = append(vi.Spec.Fields, v1alpha1.VectorField{
			Name: "image", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"},
		})
	})
	e.waitIndexReady(vi)
	idx := liveIndex(t, osClient, vi.Spec.IndexName)
	for k, want := range map[string]string{
		"index.number_of_replicas": "1", "index.knn.algo_param.ef_search": "200", "index.refresh_interval": "30s",
		"index.search.concurrent_segment_search.mode": "all", "index.search.concurrent.max_slice_count": "4",
	} {
		if got := idx.Settings[k]; got != want {
			t.Errorf("setting %s = %q, want %q", k, got, want)
		}
	}
	if p := property(t, idx, "image"); p["dimension"] != float64(16) {
		t.Errorf("added field image = %v", p)
	}
	if idx.UUID != uuid {
		t.Errorf("index was recreated (uuid %s → %s); dynamic changes must apply in place", uuid, idx.UUID)
	}
	if vi.Status.Health != "yellow" || vi.Status.MaxSliceCount != 4 || vi.Status.ConcurrentSearchMode != "all" {
		t.Errorf("status after update = %+v (one node: a replica stays unassigned, so yellow)", vi.Status)
	}
	note := e.waitEvent(vi.Name, "SettingsUpdated")
	if !strings.Contains(note, "index.search.concurrent.max_slice_count=4") {
		t.Errorf("SettingsUpdated event = %q", note)
	}
	e.waitEvent(vi.Name, "FieldsAdded")
}

func TestDeletionPolicies(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)

	deleted := luceneIndex(e, "deleted")
	retained := luceneIndex(e, "retained")
	retained.Spec.DeletionPolicy = v1alpha1.DeletionPolicyRetain
	e.create(deleted)
	e.create(retained)
	e.waitIndexReady(deleted)
	e.waitIndexReady(retained)

	for _, vi := range []*v1alpha1.VectorIndex{deleted, retained} {
		if err := e.k8s.Delete(e.ctx, vi); err != nil {
			t.Fatal(err)
		}
	}
	e.eventually(30*time.Second, func() (bool, string) {
		var list v1alpha1.VectorIndexList
		if err := e.k8s.List(e.ctx, &list); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, vi := range list.Items {
			if vi.Namespace == e.ns {
				n++
			}
		}
		return n == 0, fmt.Sprintf("%d VectorIndexes still present", n)
	})
	if _, err := osClient.GetIndex(t.Context(), deleted.Spec.IndexName); !opensearch.IsNotFound(err) {
		t.Errorf("index of a Delete-policy VectorIndex still exists (err %v)", err)
	}
	idx := liveIndex(t, osClient, retained.Spec.IndexName)
	if len(idx.Meta) != 0 {
		t.Errorf("retained index still carries ownership _meta %v", idx.Meta)
	}
	t.Cleanup(func() { _ = osClient.DeleteIndex(t.Context(), retained.Spec.IndexName) })
}

func TestAdoptionOnlyWhenTheMappingMatches(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)

	// An index made outside the operator with exactly the declared mapping is adopted.
	matching := luceneIndex(e, "matching")
	props, err := indexspec.Properties(&matching.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := osClient.CreateIndex(t.Context(), matching.Spec.IndexName, map[string]any{"index.knn": true, "index.number_of_shards": 2, "index.number_of_replicas": 0}, props, nil); err != nil {
		t.Fatal(err)
	}
	before := liveIndex(t, osClient, matching.Spec.IndexName).UUID
	e.create(matching)
	e.waitIndexReady(matching)
	e.waitEvent(matching.Name, "Adopted")
	if idx := liveIndex(t, osClient, matching.Spec.IndexName); idx.UUID != before || idx.Meta[indexspec.MetaUID] != string(matching.UID) {
		t.Errorf("adopted index uuid %s (was %s), _meta %v", idx.UUID, before, idx.Meta)
	}

	// One with another dimension is a conflict, and is never touched, not even on delete.
	conflicting := luceneIndex(e, "conflicting")
	other := map[string]any{"embedding": map[string]any{"type": "knn_vector", "dimension": 8, "method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2"}}}
	if err := osClient.CreateIndex(t.Context(), conflicting.Spec.IndexName, map[string]any{"index.knn": true, "index.number_of_shards": 1, "index.number_of_replicas": 0}, other, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = osClient.DeleteIndex(t.Context(), conflicting.Spec.IndexName) })
	beforeIdx := liveIndex(t, osClient, conflicting.Spec.IndexName)
	e.create(conflicting)
	e.waitCondition(conflicting, func() []metav1.Condition { return conflicting.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonConflict, 30*time.Second)
	msg := conditionMessage(conflicting, v1alpha1.ConditionDegraded)
	for _, want := range []string{"embedding.dimension: declared 32, index has 8", "shards: declared 2, index has 1", "title: declared, index lacks it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("conflict message %q does not say %q", msg, want)
		}
	}
	if err := e.k8s.Delete(e.ctx, conflicting); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(conflicting.Name, "IndexRetained")
	after := liveIndex(t, osClient, conflicting.Spec.IndexName)
	if after.UUID != beforeIdx.UUID || len(after.Meta) != 0 || after.Settings["index.refresh_interval"] != beforeIdx.Settings["index.refresh_interval"] || len(after.Properties) != 1 {
		t.Errorf("conflicting index was touched: before %+v after %+v", beforeIdx, after)
	}
}

func conditionMessage(vi *v1alpha1.VectorIndex, typ string) string {
	return conditionMessageOf(vi.Status.Conditions, typ)
}

func conditionMessageOf(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Message
	}
	return ""
}

func TestOutOfBandDriftIsRepaired(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "drifting")
	e.create(vi)
	e.waitIndexReady(vi)

	if err := osClient.PutSettings(t.Context(), vi.Spec.IndexName, map[string]any{"index.number_of_replicas": 3, "index.search.concurrent.max_slice_count": 9}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		s := liveIndex(t, osClient, vi.Spec.IndexName).Settings
		return s["index.number_of_replicas"] == "0" && s["index.search.concurrent.max_slice_count"] == "2", fmt.Sprintf("replicas %s slices %s", s["index.number_of_replicas"], s["index.search.concurrent.max_slice_count"])
	})

	first := vi.Status.IndexUUID
	if err := osClient.DeleteIndex(t.Context(), vi.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(vi.Name, "IndexRecreated")
	e.eventually(30*time.Second, func() (bool, string) {
		idx, err := osClient.GetIndex(t.Context(), vi.Spec.IndexName)
		if err != nil {
			return false, err.Error()
		}
		return idx.UUID != first && idx.Meta[indexspec.MetaUID] == string(vi.UID), "waiting for the recreated index"
	})
	e.waitIndexReady(vi)
}

// TestFaissDefaultPath: a VectorIndex of defaults only is faiss HNSW (l2), the default of
// the API and of OpenSearch 3.x; on the local node, whose k-NN native libraries are built
// from source (hack/install-knn-native.sh), it builds native graphs: 20,000 vectors found
// with recall@10 >= 0.95 against brute force, the graphs' native memory in the k-NN stats
// the metrics read; a binary field's Hamming graph finds each vector first; a new nmslib
// index, which OpenSearch 3.x refuses, is refused before anything is sent.
func TestFaissDefaultPath(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)

	vi := indexOf(e, "defaults", v1alpha1.VectorField{Name: "embedding", Dimension: 32}, v1alpha1.VectorField{Name: "bits", Dimension: 64, DataType: "binary", SpaceType: "hamming"})
	e.create(vi)
	e.waitIndexReady(vi)
	if f := vi.Spec.Fields[0]; f.Engine != "faiss" || f.Method.Name != "hnsw" || f.SpaceType != "l2" || f.Mode != "in_memory" {
		t.Fatalf("defaults applied: %+v, want faiss hnsw l2 in_memory", f)
	}
	if p := property(t, liveIndex(t, osClient, vi.Spec.IndexName), "embedding"); fmt.Sprint(p["method"].(map[string]any)["engine"]) != "faiss" {
		t.Fatalf("embedding mapping = %v, want engine faiss", p)
	}

	base, queries := dataset.Generate(dataset.Spec{Count: 20000, Queries: 100, Dim: 32, Seed: 11})
	ingest(t, osClient, vi.Spec.IndexName, base)
	got, err := bench.SearchIDs(t.Context(), osClient, vi.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	recall := dataset.Recall(dataset.ExactKNN(base, queries, 10), got)
	t.Logf("faiss HNSW defaults, 20,000 × 32: recall@10 %.4f over %d queries", recall, queries.Len())
	if recall < 0.95 {
		t.Errorf("recall@10 = %.4f, want >= 0.95", recall)
	}
	figures, err := osClient.Figures(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var graphBytes int64
	for _, n := range figures.Nodes {
		graphBytes += n.KNNGraphMemoryByte
	}
	if graphBytes == 0 {
		t.Errorf("k-NN graph memory is 0 after faiss searches: no native graph was loaded (%+v)", figures.Nodes)
	}
	t.Logf("k-NN graph memory: %d bytes", graphBytes)

	// Hamming on packed bits: each of 500 random vectors is its own nearest (distance 0).
	var bulk bytes.Buffer
	bits := make([][]int8, 500)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range bits {
		bits[i] = make([]int8, 8)
		for j := range bits[i] {
			bits[i][j] = int8(rng.IntN(256) - 128)
		}
		doc, _ := json.Marshal(map[string]any{"bits": bits[i]})
		fmt.Fprintf(&bulk, "{\"index\":{\"_index\":%q,\"_id\":\"b%d\"}}\n%s\n", vi.Spec.IndexName, i, doc)
	}
	if err := osClient.Bulk(t.Context(), bulk.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := osClient.Refresh(t.Context(), vi.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 123, 499} {
		res, err := osClient.Search(t.Context(), vi.Spec.IndexName, map[string]any{"size": 1, "_source": false,
			"query": map[string]any{"knn": map[string]any{"bits": map[string]any{"vector": bits[i], "k": 1}}}})
		if err != nil || len(res.Hits) == 0 || res.Hits[0].ID != fmt.Sprintf("b%d", i) {
			t.Errorf("Hamming query for b%d: %+v, %v", i, res.Hits, err)
		}
	}

	// OpenSearch 3.x refuses new nmslib indexes; only the live cluster can tell, so it is a
	// condition, and nothing is sent.
	nmslib := luceneIndex(e, "nmslib")
	nmslib.Spec.Fields[0] = v1alpha1.VectorField{Name: "embedding", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "nmslib", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}
	e.create(nmslib)
	e.waitCondition(nmslib, func() []metav1.Condition { return nmslib.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnsupportedByCluster, 30*time.Second)
	if msg := conditionMessage(nmslib, v1alpha1.ConditionDegraded); !strings.Contains(msg, "nmslib engine is deprecated") || !strings.Contains(msg, "spec.fields[0].engine") {
		t.Errorf("nmslib refusal message %q does not name the field and OpenSearch's reason", msg)
	}
	if _, err := osClient.GetIndex(t.Context(), nmslib.Spec.IndexName); !opensearch.IsNotFound(err) {
		t.Errorf("index %s: %v, want none created", nmslib.Spec.IndexName, err)
	}
}

// TestCompressedFaissAndLuceneFields: every compression level the engines take, in memory
// and on disk, holds the same 10,000 vectors and finds their neighbours: faiss fp16 (2x) and
// binary quantization (8x-32x), lucene scalar (4x) and one-bit (32x) quantization. The
// vectors are clusters of isotropic noise, the hard case for quantization (neighbours differ
// in the low bits), so the floors are what each level measures here less a margin (the table
// is logged), and what must hold is the order: less compression finds more, and on disk the
// full-precision vectors rescore what the compressed graph found (8x on disk far above 8x
// in memory).
func TestCompressedFaissAndLuceneFields(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	base, queries := dataset.Generate(dataset.Spec{Count: 10000, Queries: 100, Dim: 64, Seed: 23})
	exact := dataset.ExactKNN(base, queries, 10)
	recall := map[string]float64{}
	for _, tc := range []struct {
		engine, mode, compression string
		floor                     float64
	}{
		{"faiss", "on_disk", "1x", 0.75},
		{"faiss", "in_memory", "2x", 0.95},
		{"faiss", "in_memory", "8x", 0.05},
		{"faiss", "on_disk", "8x", 0.55},
		{"faiss", "on_disk", "16x", 0.4},
		{"faiss", "on_disk", "32x", 0.2},
		{"lucene", "in_memory", "4x", 0.6},
		{"lucene", "on_disk", "32x", 0.2},
	} {
		name := fmt.Sprintf("%s-%s-%s", tc.engine, strings.ReplaceAll(tc.mode, "_", ""), tc.compression)
		vi := indexOf(e, name, v1alpha1.VectorField{Name: "embedding", Dimension: 64, Engine: tc.engine, Mode: tc.mode, CompressionLevel: tc.compression})
		e.create(vi)
		e.waitIndexReady(vi)
		if p := property(t, liveIndex(t, osClient, vi.Spec.IndexName), "embedding"); fmt.Sprint(p["compression_level"]) != tc.compression {
			t.Errorf("%s: mapping %v, want compression_level %s", name, p, tc.compression)
		}
		ingest(t, osClient, vi.Spec.IndexName, base)
		// One segment: every level is measured on the same structure, however the load was
		// flushed. on_disk 1x depends on it most: 0.81-0.997 over 2-3 unmerged segments (each
		// adds its own candidates), 0.82-0.84 on one.
		stats, err := osClient.Stats(t.Context(), vi.Spec.IndexName)
		if err != nil {
			t.Fatal(err)
		}
		if err := osClient.ForceMerge(t.Context(), vi.Spec.IndexName, 1); err != nil {
			t.Fatal(err)
		}
		got, err := bench.SearchIDs(t.Context(), osClient, vi.Spec.IndexName, "embedding", queries, 10)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		recall[name] = dataset.Recall(exact, got)
		t.Logf("%s: %d segments after the load, merged to one", name, stats.Segments)
		t.Logf("%-7s %-9s %-4s recall@10 %.3f (floor %.2f)", tc.engine, tc.mode, tc.compression, recall[name], tc.floor)
		if recall[name] < tc.floor {
			t.Errorf("%s: recall@10 %.3f, want >= %.2f", name, recall[name], tc.floor)
		}
	}
	for _, order := range [][2]string{
		{"faiss-ondisk-8x", "faiss-ondisk-16x"}, {"faiss-ondisk-16x", "faiss-ondisk-32x"}, {"faiss-inmemory-2x", "faiss-ondisk-8x"},
	} {
		if recall[order[0]] <= recall[order[1]] {
			t.Errorf("recall %s %.3f <= %s %.3f: less compression should find more", order[0], recall[order[0]], order[1], recall[order[1]])
		}
	}
	if gain := recall["faiss-ondisk-8x"] - recall["faiss-inmemory-8x"]; gain < 0.3 {
		t.Errorf("on disk 8x finds %.3f more than in memory 8x, want >= 0.3: the full-precision rescoring did not happen", gain)
	}
}

// TestIVFTrainedFromASample: a method ivf field's model is trained by the operator from a
// sample index with the k-NN training API, natively: while the sample is smaller than
// nlist the object says so (TrainingSampleTooSmall) and trains nothing, and once it has
// grown it trains without help, creates the index with the model and finds neighbours;
// deleted with deletionPolicy Delete, the index and the model it trained go.
func TestIVFTrainedFromASample(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	base, queries := dataset.Generate(dataset.Spec{Count: 5000, Queries: 100, Dim: 32, Seed: 29})

	sample := indexOf(e, "sample", v1alpha1.VectorField{Name: "embedding", Dimension: 32})
	e.create(sample)
	e.waitIndexReady(sample)
	modelID := e.ns + "-ivf"
	ivf := indexOf(e, "ivf", v1alpha1.VectorField{Name: "embedding", Dimension: 32,
		Method:   v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](64), Nprobes: ptr.To[int32](16)}},
		Training: &v1alpha1.FieldTraining{ModelID: modelID, Index: sample.Spec.IndexName}})
	e.create(ivf)
	e.waitCondition(ivf, func() []metav1.Condition { return ivf.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonTrainingSampleTooSmall, 30*time.Second)
	t.Logf("empty sample: %s", conditionMessage(ivf, v1alpha1.ConditionDegraded))
	if _, err := osClient.GetModel(t.Context(), modelID); !opensearch.IsNotFound(err) {
		t.Fatalf("model %s: %v, want none trained from a sample below nlist", modelID, err)
	}

	ingest(t, osClient, sample.Spec.IndexName, base)
	started := time.Now()
	e.eventually(3*time.Minute, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, clientKey(ivf), ivf)
		c := meta.FindStatusCondition(ivf.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("conditions %v, models %+v", ivf.Status.Conditions, ivf.Status.Models)
	})
	t.Logf("trained and created %s after the sample grew", time.Since(started).Round(time.Second))
	if m := ivf.Status.Models; len(m) != 1 || m[0].ModelID != modelID || m[0].State != opensearch.ModelCreated || !m[0].TrainedByOperator {
		t.Errorf("status.models %+v, want %s created by the operator", m, modelID)
	}
	if p := property(t, liveIndex(t, osClient, ivf.Spec.IndexName), "embedding"); p["model_id"] != modelID {
		t.Errorf("mapping %v, want model_id %s", p, modelID)
	}
	e.waitEvent(ivf.Name, v1alpha1.ReasonTrainingStarted)

	ingest(t, osClient, ivf.Spec.IndexName, base)
	got, err := bench.SearchIDs(t.Context(), osClient, ivf.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	recall := dataset.Recall(dataset.ExactKNN(base, queries, 10), got)
	t.Logf("faiss IVF nlist 64 nprobes 16, 5,000 × 32: recall@10 %.3f", recall)
	if recall < 0.9 {
		t.Errorf("IVF recall@10 %.3f, want >= 0.9", recall)
	}

	if err := e.k8s.Delete(e.ctx, ivf); err != nil {
		t.Fatal(err)
	}
	e.eventually(time.Minute, func() (bool, string) {
		_, indexErr := osClient.GetIndex(t.Context(), ivf.Spec.IndexName)
		_, modelErr := osClient.GetModel(t.Context(), modelID)
		return opensearch.IsNotFound(indexErr) && opensearch.IsNotFound(modelErr), fmt.Sprintf("index: %v, model: %v", indexErr, modelErr)
	})
}

func TestUnreachableClusterConvergesAfterRestart(t *testing.T) {
	e := startOperator(t)
	node, err := devenv.StartNode(testsupport.Root(t), "ctl-fault", devenv.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	osClient := osClient(t, node.URL)
	sc := e.cluster("vectors", node.URL)
	vi := luceneIndex(e, "survivor")
	e.create(vi)
	e.waitIndexReady(vi)
	uuid := vi.Status.IndexUUID

	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	// A change made while the node is down cannot be applied yet.
	e.update(vi, func() { vi.Spec.Replicas = 1 })
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnreachable, 30*time.Second)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnreachable, 30*time.Second)

	if _, err := devenv.StartNode(testsupport.Root(t), "ctl-fault", devenv.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)
	e.waitIndexReady(vi)
	resp, err := osClient.GetIndex(t.Context(), vi.Spec.IndexName)
	if err != nil {
		t.Fatal(err)
	}
	if resp.UUID != uuid || resp.Settings["index.number_of_replicas"] != "1" {
		t.Errorf("after restart: uuid %s (was %s), replicas %s", resp.UUID, uuid, resp.Settings["index.number_of_replicas"])
	}
}

func TestCredentialsComeFromSecretsAndNeverShow(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	const password = "s3cr3t-never-shown"
	sc := &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: e.ns},
		Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{
			Endpoint: url, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "opensearch-credentials"},
		}},
	}
	e.create(sc)
	vi := luceneIndex(e, "guarded")
	e.create(vi)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSecretNotFound, 30*time.Second)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSecretNotFound, 30*time.Second)

	e.create(secret(e.ns, "opensearch-credentials", map[string]string{"username": "admin"}))
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonInvalidSecret, 30*time.Second)

	s := secret(e.ns, "opensearch-credentials", nil)
	e.update(s, func() { s.StringData = map[string]string{"username": "admin", "password": password} })
	// The local node runs without the security plugin, so any credentials are accepted.
	e.waitIndexReady(vi)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "", 30*time.Second)

	for _, o := range []any{sc.Status, vi.Status, e.events(vi.Name), e.events(sc.Name)} {
		if b, _ := json.Marshal(o); strings.Contains(string(b), password) {
			t.Errorf("password visible in %s", b)
		}
	}
}

func TestUnreachableEndpointIsReported(t *testing.T) {
	e := startOperator(t)
	sc := e.cluster("vectors", "http://127.0.0.1:1")
	vi := luceneIndex(e, "orphan")
	e.create(vi)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnreachable, 30*time.Second)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUnreachable, 30*time.Second)

	missing := luceneIndex(e, "lost")
	missing.Spec.ClusterRef.Name = "nowhere"
	e.create(missing)
	e.waitCondition(missing, func() []metav1.Condition { return missing.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonClusterNotFound, 30*time.Second)
	// Deleting an index whose cluster never existed must not hang on the finalizer.
	if err := e.k8s.Delete(e.ctx, missing); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, clientKey(missing), missing)
		return err != nil, "VectorIndex with a missing cluster still present"
	})
}

// TestCrashAfterCreateLeavesOneIndexWithOneOwner plays an operator that died between
// creating the index and recording it: the index exists with this object's ownership mark
// and status knows nothing. The next reconcile must take it as its own — no second index,
// no adoption check, no conflict.
func TestCrashAfterCreateLeavesOneIndexWithOneOwner(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	vi := luceneIndex(e, "interrupted")
	// Created while the SearchCluster does not exist yet, so the operator cannot act first.
	e.create(vi)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonClusterNotFound, 30*time.Second)
	props, err := indexspec.Properties(&vi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	owner := indexspec.Owner{Namespace: vi.Namespace, Name: vi.Name, UID: string(vi.UID)}
	if err := osClient.CreateIndex(t.Context(), vi.Spec.IndexName, indexspec.CreateSettings(&vi.Spec), props, indexspec.MetaOf(owner)); err != nil {
		t.Fatal(err)
	}
	uuid := liveIndex(t, osClient, vi.Spec.IndexName).UUID
	e.cluster("vectors", url)
	e.waitIndexReady(vi)
	if vi.Status.IndexUUID != uuid {
		t.Errorf("status uuid %s, the index created before the crash is %s", vi.Status.IndexUUID, uuid)
	}
	for _, ev := range e.events(vi.Name) {
		if ev.Reason == "Created" || ev.Reason == "Adopted" || ev.Reason == "Conflict" {
			t.Errorf("unexpected %s event: %s", ev.Reason, ev.Note)
		}
	}
}

// TestFaissEfSearchIsABuildParameter: faiss searches with the ef_search of its field's
// mapping and ignores the index setting, so a faiss field's efSearch goes into the mapping.
// Two indexes of the same 20,000 Gaussian vectors at efSearch 4 and 256, each measuring its
// own live recall: 4 must really search with 4 (recall below the 0.9 target, RecallBelowTarget True),
// 256 with 256 (at least 0.95). With efSearch only in the index setting both measured the
// faiss default (100).
func TestFaissEfSearchIsABuildParameter(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	base, _ := dataset.Generate(dataset.Spec{Count: 20000, Queries: 1, Dim: 32, Clusters: 1, Spread: 1, Seed: 29})
	for _, tc := range []struct {
		ef       int32
		below    metav1.ConditionStatus
		min, max float64
	}{
		{4, metav1.ConditionTrue, 0, 0.9},
		{256, metav1.ConditionFalse, 0.95, 1},
	} {
		vi := indexOf(e, fmt.Sprintf("ef%d", tc.ef), v1alpha1.VectorField{Name: "embedding", Dimension: 32,
			Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{EfSearch: ptr.To(tc.ef)}}})
		vi.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.9", K: 10, SampleSize: 50, Interval: &metav1.Duration{Duration: 2 * time.Second}, QueriesPerSecond: 500}
		e.create(vi)
		e.waitIndexReady(vi)
		p := property(t, liveIndex(t, osClient, vi.Spec.IndexName), "embedding")
		if got := fmt.Sprint(p["method"].(map[string]any)["parameters"]); got != fmt.Sprintf("map[ef_search:%d]", tc.ef) {
			t.Errorf("efSearch %d: mapping parameters %s, want ef_search %d", tc.ef, got, tc.ef)
		}
		ingest(t, osClient, vi.Spec.IndexName, base)
		if err := osClient.ForceMerge(t.Context(), vi.Spec.IndexName, 1); err != nil {
			t.Fatal(err)
		}
		merged := time.Now()
		e.eventually(90*time.Second, func() (bool, string) {
			if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
				return false, err.Error()
			}
			st, c := vi.Status.Recall, meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionRecallBelowTarget)
			return st != nil && st.MeasuredAt != nil && st.MeasuredAt.After(merged) && c != nil && c.Status == tc.below,
				fmt.Sprintf("status.recall %+v, condition %+v", st, c)
		})
		st := vi.Status.Recall
		value, _ := strconv.ParseFloat(st.Value, 64)
		t.Logf("faiss efSearch %d: live recall@10 %s over %d sampled documents (ef_search %s)", tc.ef, st.Value, st.Sample, st.EfSearch)
		if value < tc.min || value > tc.max || st.EfSearch != strconv.Itoa(int(tc.ef)) {
			t.Errorf("efSearch %d: recall %s at ef_search %q, want within [%g, %g] at %d", tc.ef, st.Value, st.EfSearch, tc.min, tc.max, tc.ef)
		}
	}

	// An index created without ef_search in its faiss mapping (as an operator before this
	// fix created it, or by hand) searches with 100: adopted and Ready, the spec's other
	// value listed as not applied rather than a conflict that would stop its reconciles.
	legacy := indexOf(e, "legacy", v1alpha1.VectorField{Name: "embedding", Dimension: 32,
		Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{EfSearch: ptr.To[int32](128)}}})
	err := osClient.CreateIndex(t.Context(), legacy.Spec.IndexName, map[string]any{"index.knn": true, "index.number_of_shards": 1, "index.knn.algo_param.ef_search": "128"},
		map[string]any{"embedding": map[string]any{"type": "knn_vector", "dimension": 32, "method": map[string]any{"name": "hnsw", "engine": "faiss", "space_type": "l2"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.create(legacy)
	e.waitIndexReady(legacy)
	if msg := conditionMessage(legacy, v1alpha1.ConditionReady); !strings.Contains(msg, "ef_search: declared 128, but the index was created without it and searches with 100 until rebuilt") ||
		len(legacy.Status.FixedSettings) != 1 {
		t.Errorf("legacy faiss index: Ready message %q, fixedSettings %q; want the unapplied efSearch named", msg, legacy.Status.FixedSettings)
	}
}

// TestLiveRecallOfEveryDataType: the live recall measurement's exact search (knn_score)
// takes each data type and space the engines index — float, byte and binary (hamming) —
// on 2,000 documents each, and reports a value.
func TestLiveRecallOfEveryDataType(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, f := range []v1alpha1.VectorField{
		{Name: "embedding", Dimension: 16, SpaceType: "cosinesimil", Engine: "faiss"},
		{Name: "embedding", Dimension: 16, DataType: "byte", SpaceType: "innerproduct", Engine: "lucene"},
		{Name: "embedding", Dimension: 64, DataType: "binary", SpaceType: "hamming", Engine: "faiss"},
	} {
		vi := indexOf(e, "recall-"+cmp.Or(f.DataType, "float"), f)
		vi.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.5", K: 10, SampleSize: 20, Interval: &metav1.Duration{Duration: 2 * time.Second}, QueriesPerSecond: 500}
		e.create(vi)
		e.waitIndexReady(vi)
		var bulk bytes.Buffer
		for i := range 2000 {
			components := int(f.Dimension)
			if f.DataType == "binary" {
				components /= 8
			}
			vector := make([]int, components)
			for j := range vector {
				vector[j] = rng.IntN(256) - 128
				if f.DataType == "" {
					vector[j] = rng.IntN(1000) + 1
				}
			}
			doc, _ := json.Marshal(map[string]any{"embedding": vector})
			fmt.Fprintf(&bulk, "{\"index\":{\"_index\":%q,\"_id\":\"%d\"}}\n%s\n", vi.Spec.IndexName, i, doc)
		}
		if err := osClient.Bulk(t.Context(), bulk.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := osClient.Refresh(t.Context(), vi.Spec.IndexName); err != nil {
			t.Fatal(err)
		}
		e.eventually(90*time.Second, func() (bool, string) {
			if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
				return false, err.Error()
			}
			st := vi.Status.Recall
			return st != nil && st.Value != "", fmt.Sprintf("status.recall %+v", st)
		})
		st := vi.Status.Recall
		t.Logf("%s %s %s: live recall@10 %s over %d sampled documents, %d searches", f.Engine, cmp.Or(f.DataType, "float"), f.SpaceType, st.Value, st.Sample, st.Cost.Searches)
		if value, _ := strconv.ParseFloat(st.Value, 64); value < 0.5 || st.Sample != 20 {
			t.Errorf("%s: recall %s over %d documents, want at least 0.5 over 20", vi.Name, st.Value, st.Sample)
		}
	}
}

// TestOperatorLeavesTheSpecAsWritten: adding its finalizer, the operator must not write the
// spec back in its own serialization (the schema's duration defaults "10m" and "24h" came
// back as "10m0s" and "24h0m0s" with a full Update): that is a new generation the user did
// not make, and a diff in every GitOps tool.
func TestOperatorLeavesTheSpecAsWritten(t *testing.T) {
	e := startOperator(t)
	e.cluster("vectors", testsupport.OpenSearchURL(t))
	vi := indexOf(e, "as-written", v1alpha1.VectorField{Name: "embedding", Dimension: 8})
	vi.Spec.Recall = &v1alpha1.RecallSpec{Target: "0.9"}
	vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen}
	e.create(vi)
	e.waitIndexReady(vi)
	var raw unstructured.Unstructured
	raw.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("VectorIndex"))
	if err := e.k8s.Get(e.ctx, clientKey(vi), &raw); err != nil {
		t.Fatal(err)
	}
	interval, _, _ := unstructured.NestedString(raw.Object, "spec", "recall", "interval")
	retain, _, _ := unstructured.NestedString(raw.Object, "spec", "rebuild", "retainPrevious")
	if raw.GetGeneration() != 1 || interval != "10m" || retain != "24h" || !slices.Contains(raw.GetFinalizers(), controllers.IndexFinalizer) {
		t.Errorf("after the operator took the object: generation %d, spec.recall.interval %q, spec.rebuild.retainPrevious %q, finalizers %v; want 1, the defaults as the API server wrote them, and the finalizer",
			raw.GetGeneration(), interval, retain, raw.GetFinalizers())
	}
}
