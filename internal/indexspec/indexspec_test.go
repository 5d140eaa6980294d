package indexspec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

func spec() *v1alpha1.VectorIndexSpec {
	return &v1alpha1.VectorIndexSpec{
		Shards: 3, Replicas: 1, RefreshInterval: "1s",
		Fields: []v1alpha1.VectorField{{
			Name: "embedding", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "faiss", Mode: "in_memory", CompressionLevel: "1x",
			Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16), EfSearch: ptr.To[int32](80)}},
		}},
		Search: v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto", MaxSliceCount: 4}},
	}
}

func TestDynamicSettings(t *testing.T) {
	got := DynamicSettings(spec(), nil)
	want := map[string]string{
		"index.number_of_replicas": "1", "index.refresh_interval": "1s", "index.knn.algo_param.ef_search": "80",
		"index.search.concurrent_segment_search.mode": "auto", "index.search.concurrent.max_slice_count": "4",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DynamicSettings = %v, want %v", got, want)
	}
	s := spec()
	s.Fields[0].Method.Parameters = nil
	if _, ok := DynamicSettings(s, nil)["index.knn.algo_param.ef_search"]; ok {
		t.Error("ef_search managed although no field sets it")
	}
	for slices, want := range map[Slices][2]string{1: {"none", "0"}, 0: {"all", "0"}, 6: {"all", "6"}} {
		got := DynamicSettings(spec(), &slices)
		if got[SettingConcurrentMode] != want[0] || got[SettingMaxSliceCount] != want[1] {
			t.Errorf("tuned %d: mode %s slices %s, want %v", slices, got[SettingConcurrentMode], got[SettingMaxSliceCount], want)
		}
	}
}

func TestCreateSettingsIncludeStaticAndAdditional(t *testing.T) {
	s := spec()
	s.AdditionalSettings = map[string]string{"index.codec": "best_compression"}
	got := CreateSettings(s)
	if got["index.knn"] != true || got["index.number_of_shards"] != int32(3) || got["index.codec"] != "best_compression" || got["index.number_of_replicas"] != "1" {
		t.Errorf("CreateSettings = %v", got)
	}
}

func TestSettingsDiff(t *testing.T) {
	desired := map[string]string{"a": "1", "b": "2"}
	cases := []struct {
		live map[string]string
		want map[string]any
	}{
		{map[string]string{"a": "1", "b": "2", "other": "x"}, nil},
		{map[string]string{"a": "1", "b": "3"}, map[string]any{"b": "2"}},
		{map[string]string{}, map[string]any{"a": "1", "b": "2"}},
	}
	for _, c := range cases {
		if got := SettingsDiff(desired, c.live); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SettingsDiff(%v) = %v, want %v", c.live, got, c.want)
		}
	}
}

func TestFieldMapping(t *testing.T) {
	cases := []struct {
		name  string
		field v1alpha1.VectorField
		want  string
	}{
		{"defaults left out, a faiss field's ef_search in its mapping", spec().Fields[0],
			`{"dimension":8,"method":{"engine":"faiss","name":"hnsw","parameters":{"ef_search":80,"m":16},"space_type":"l2"},"type":"knn_vector"}`},
		{"a lucene field's ef_search is the index setting's", v1alpha1.VectorField{Name: "l", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "lucene", Mode: "in_memory", CompressionLevel: "1x",
			Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16), EfSearch: ptr.To[int32](80)}}},
			`{"dimension":8,"method":{"engine":"lucene","name":"hnsw","parameters":{"m":16},"space_type":"l2"},"type":"knn_vector"}`},
		{"binary", v1alpha1.VectorField{Name: "b", Dimension: 64, DataType: "binary", SpaceType: "hamming", Engine: "faiss", Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}},
			`{"data_type":"binary","dimension":64,"method":{"engine":"faiss","name":"hnsw","space_type":"hamming"},"type":"knn_vector"}`},
		{"on disk compressed ivf", v1alpha1.VectorField{Name: "d", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "faiss", Mode: "on_disk", CompressionLevel: "32x",
			Method: v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](128), Nprobes: ptr.To[int32](8)}}},
			`{"compression_level":"32x","dimension":16,"method":{"engine":"faiss","name":"ivf","parameters":{"nlist":128,"nprobes":8},"space_type":"l2"},"mode":"on_disk","type":"knn_vector"}`},
		{"ivf from its model", v1alpha1.VectorField{Name: "d", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "faiss", Mode: "in_memory", CompressionLevel: "1x",
			Method: v1alpha1.VectorMethod{Name: "ivf"}, Training: &v1alpha1.FieldTraining{ModelID: "docs-ivf", Index: "sample"}},
			`{"model_id":"docs-ivf","type":"knn_vector"}`},
		// OpenSearch reads on_disk without a level as 32x: 1x must be said.
		{"on disk at 1x", v1alpha1.VectorField{Name: "d", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "faiss", Mode: "on_disk", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}},
			`{"compression_level":"1x","dimension":16,"method":{"engine":"faiss","name":"hnsw","space_type":"l2"},"mode":"on_disk","type":"knn_vector"}`},
	}
	for _, c := range cases {
		got, _ := json.Marshal(FieldMapping(c.field))
		if string(got) != c.want {
			t.Errorf("%s: FieldMapping = %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestCompareMapping(t *testing.T) {
	s := spec()
	s.ExtraMappings = map[string]v1alpha1.MappingProperty{"title": {JSON: apiextensionsv1.JSON{Raw: []byte(`{"type":"text"}`)}}}
	declared, err := Properties(s)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		live          string
		missing       []string
		conflictsWith []string
	}{
		{"identical, with OpenSearch's defaults and extras",
			`{"embedding":{"type":"knn_vector","dimension":8,"method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"m":16,"ef_construction":100,"ef_search":80}}},"title":{"type":"text","analyzer":"standard"},"extra":{"type":"keyword"}}`,
			nil, nil},
		{"fields missing", `{}`, []string{"embedding", "title"}, nil},
		{"other dimension and engine",
			`{"embedding":{"type":"knn_vector","dimension":16,"method":{"engine":"lucene","space_type":"l2","name":"hnsw","parameters":{"m":16}}},"title":{"type":"text"}}`,
			nil, []string{"embedding.dimension: declared 8, index has 16", "embedding.method.engine: declared faiss, index has lucene", "embedding.method.parameters.ef_search: declared 80, index has nothing"}},
		{"a declared parameter the index lacks",
			`{"embedding":{"type":"knn_vector","dimension":8,"method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{}}},"title":{"type":"text"}}`,
			nil, []string{"embedding.method.parameters.m: declared 16, index has nothing"}},
		{"upper-case enum from OpenSearch",
			`{"embedding":{"type":"knn_vector","dimension":8,"data_type":"FLOAT","method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"m":16,"ef_search":80}}},"title":{"type":"text"}}`,
			nil, nil},
		{"title is a keyword", `{"embedding":{"type":"knn_vector","dimension":8,"method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"m":16,"ef_search":80}}},"title":{"type":"keyword"}}`,
			nil, []string{"title.type: declared text, index has keyword"}},
	}
	onDisk := spec()
	onDisk.Fields[0].Mode, onDisk.Fields[0].CompressionLevel = "on_disk", "1x"
	onDiskDeclared, err := Properties(onDisk)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, live, conflict string }{
		{"on_disk without a level is 32x", `{"embedding":{"type":"knn_vector","dimension":8,"mode":"on_disk","method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"m":16,"ef_search":80}}}}`,
			"embedding.compression_level: declared 1x, index has 32x"},
		{"on_disk at 1x", `{"embedding":{"type":"knn_vector","dimension":8,"mode":"on_disk","compression_level":"1x","method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"m":16,"ef_search":80}}}}`, ""},
	} {
		var live map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.live), &live); err != nil {
			t.Fatal(err)
		}
		d, err := CompareMapping(onDiskDeclared, live)
		if err != nil || strings.Join(d.Conflicts, "|") != c.conflict {
			t.Errorf("%s: conflicts %q, %v; want %q", c.name, d.Conflicts, err, c.conflict)
		}
	}
	for _, c := range cases {
		var live map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.live), &live); err != nil {
			t.Fatal(err)
		}
		d, err := CompareMapping(declared, live)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var missing []string
		for n := range d.Missing {
			missing = append(missing, n)
		}
		if len(missing) != len(c.missing) {
			t.Errorf("%s: missing = %v, want %v", c.name, missing, c.missing)
		}
		if strings.Join(d.Conflicts, "|") != strings.Join(c.conflictsWith, "|") {
			t.Errorf("%s: conflicts = %q, want %q", c.name, d.Conflicts, c.conflictsWith)
		}
	}
}

// TestFaissEfSearchDefault: a faiss field created without ef_search in its mapping (by
// OpenSearch's default, or by an operator that sent only the index setting) searches with
// 100: a spec asking 100, or nothing, matches it; another value is not applied (the index
// keeps serving, and says so) rather than a conflict. A mapping that has another ef_search
// conflicts, as any build parameter does.
func TestFaissEfSearchDefault(t *testing.T) {
	live := map[string]json.RawMessage{"embedding": json.RawMessage(`{"type":"knn_vector","dimension":8,"method":{"engine":"faiss","space_type":"l2","name":"hnsw"}}`)}
	other := map[string]json.RawMessage{"embedding": json.RawMessage(`{"type":"knn_vector","dimension":8,"method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"ef_search":64}}}`)}
	for _, c := range []struct {
		ef                  *int32
		live                map[string]json.RawMessage
		conflict, unapplied string
	}{
		{nil, live, "", ""},
		{ptr.To[int32](100), live, "", ""},
		{ptr.To[int32](256), live, "", "embedding.method.parameters.ef_search: declared 256, but the index was created without it and searches with 100 until rebuilt"},
		{ptr.To[int32](256), other, "embedding.method.parameters.ef_search: declared 256, index has 64", ""},
	} {
		s := spec()
		s.Fields[0].Method.Parameters = &v1alpha1.MethodParameters{EfSearch: c.ef}
		declared, err := Properties(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := CompareMapping(declared, c.live)
		if err != nil || strings.Join(d.Conflicts, "|") != c.conflict || strings.Join(d.Unapplied, "|") != c.unapplied {
			t.Errorf("efSearch %v: conflicts %q, unapplied %q, %v; want %q, %q", ptr.Deref(c.ef, 0), d.Conflicts, d.Unapplied, err, c.conflict, c.unapplied)
		}
		if got := LiveEfSearch(s.Fields[0], live, nil); got != "100" {
			t.Errorf("LiveEfSearch = %q, want 100", got)
		}
	}
	lucene := v1alpha1.VectorField{Name: "embedding", Engine: "lucene", Method: v1alpha1.VectorMethod{Name: "hnsw"}}
	if got := LiveEfSearch(lucene, live, map[string]string{"index.knn.algo_param.ef_search": "64"}); got != "64" {
		t.Errorf("LiveEfSearch of a lucene field = %q, want the index setting 64", got)
	}
}

// TestDottedExtraMappingsMatchTheObjectsOpenSearchStores: OpenSearch stores "author.name"
// as an object with a property; the declared mapping must compare equal to that, or every
// resync would PUT the mapping again and emit an Event.
func TestDottedExtraMappingsMatchTheObjectsOpenSearchStores(t *testing.T) {
	s := spec()
	raw := func(j string) v1alpha1.MappingProperty {
		return v1alpha1.MappingProperty{JSON: apiextensionsv1.JSON{Raw: []byte(j)}}
	}
	s.ExtraMappings = map[string]v1alpha1.MappingProperty{
		"author.name": raw(`{"type":"keyword"}`), "author.born": raw(`{"type":"date"}`),
		"meta": raw(`{"properties":{"lang":{"type":"keyword"}}}`), "meta.source.url": raw(`{"type":"keyword"}`),
	}
	declared, err := Properties(s)
	if err != nil {
		t.Fatal(err)
	}
	var live map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"embedding":{"type":"knn_vector","dimension":8,"method":{"engine":"faiss","space_type":"l2","name":"hnsw","parameters":{"m":16,"ef_search":80}}},
		"author":{"properties":{"born":{"type":"date"},"name":{"type":"keyword"}}},
		"meta":{"properties":{"lang":{"type":"keyword"},"source":{"properties":{"url":{"type":"keyword"}}}}}}`), &live); err != nil {
		t.Fatal(err)
	}
	d, err := CompareMapping(declared, live)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Missing) != 0 || len(d.Conflicts) != 0 {
		t.Errorf("dotted names against the stored objects: missing %v, conflicts %v", d.Missing, d.Conflicts)
	}
	d, err = CompareMapping(declared, map[string]json.RawMessage{"embedding": live["embedding"]})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"properties": map[string]any{"born": map[string]any{"type": "date"}, "name": map[string]any{"type": "keyword"}}}
	if !reflect.DeepEqual(d.Missing["author"], want) || d.Missing["author.name"] != nil {
		t.Errorf("missing author is %v, want the object %v", d.Missing["author"], want)
	}
}

func TestSplitRemoteSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		diff     map[string]any
		writable map[string]any
		fixed    []string
	}{
		{"nothing to do", nil, nil, nil},
		{"replicas are written", map[string]any{"index.number_of_replicas": "1"}, map[string]any{"index.number_of_replicas": "1"}, nil},
		{"the rest keeps the snapshot's value", map[string]any{"index.number_of_replicas": "2", "index.refresh_interval": "30s", "index.knn.algo_param.ef_search": "64"},
			map[string]any{"index.number_of_replicas": "2"}, []string{"index.knn.algo_param.ef_search=64", "index.refresh_interval=30s"}},
	} {
		writable, fixed := SplitRemoteSnapshot(tc.diff)
		if !reflect.DeepEqual(writable, tc.writable) || !slices.Equal(fixed, tc.fixed) {
			t.Errorf("%s: writable %v fixed %v, want %v %v", tc.name, writable, fixed, tc.writable, tc.fixed)
		}
	}
}

func TestStorage(t *testing.T) {
	for settings, want := range map[string]string{
		"":                                 v1alpha1.StorageLocal,
		"index.store.type=remote_snapshot": v1alpha1.StorageRemoteSnapshot,
		"index.remote_store.enabled=true":  v1alpha1.StorageRemoteStore,
		"index.remote_store.enabled=false": v1alpha1.StorageLocal,
	} {
		live := map[string]string{}
		if k, v, ok := strings.Cut(settings, "="); ok {
			live[k] = v
		}
		if got := Storage(live); got != want {
			t.Errorf("%q: %s, want %s", settings, got, want)
		}
	}
}

func TestRefusedOn(t *testing.T) {
	nmslib := v1alpha1.VectorIndexSpec{Fields: []v1alpha1.VectorField{{Name: "a", Engine: "faiss"}, {Name: "b", Engine: "nmslib"}}}
	faiss := v1alpha1.VectorIndexSpec{Fields: []v1alpha1.VectorField{{Name: "a", Engine: "faiss"}, {Name: "b", Engine: "lucene"}}}
	for _, tc := range []struct {
		version string
		spec    v1alpha1.VectorIndexSpec
		want    string
	}{
		{"3.6.0", nmslib, "spec.fields[1].engine: nmslib engine is deprecated in OpenSearch and cannot be used for new index creation (the cluster runs 3.6.0; retired in 3.0)"},
		{"3.0.0", nmslib, "spec.fields[1].engine: nmslib"},
		{"2.19.1", nmslib, ""},
		{"3.6.0", faiss, ""},
		{"", nmslib, ""},
	} {
		err := RefusedOn(tc.version, &tc.spec)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("RefusedOn(%q, %v) = %v, want %q", tc.version, tc.spec.Fields, err, tc.want)
		}
	}
	// Only a spec some version refuses needs the version read.
	if !VersionGated(&nmslib) || VersionGated(&faiss) {
		t.Errorf("VersionGated: nmslib %v, faiss and lucene %v; want true, false", VersionGated(&nmslib), VersionGated(&faiss))
	}
}

func TestTrainingRequest(t *testing.T) {
	owner := Owner{Namespace: "ns", Name: "docs", UID: "uid-1"}
	f := v1alpha1.VectorField{Name: "embedding", Dimension: 16, DataType: "float", SpaceType: "innerproduct", Engine: "faiss",
		Method:   v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](32), Nprobes: ptr.To[int32](4)}},
		Training: &v1alpha1.FieldTraining{ModelID: "m", Index: "sample", Field: "vec", MaxVectors: ptr.To[int32](1000)}}
	got, _ := json.Marshal(TrainingRequest(f, owner))
	want := `{"description":"trained by vectorpilot for VectorIndex ns/docs (uid uid-1)","dimension":16,"max_training_vector_count":1000,` +
		`"method":{"engine":"faiss","name":"ivf","parameters":{"nlist":32,"nprobes":4},"space_type":"innerproduct"},"training_field":"vec","training_index":"sample"}`
	if string(got) != want {
		t.Errorf("TrainingRequest = %s\nwant %s", got, want)
	}
	f.Training.Field, f.Training.MaxVectors, f.Method.Parameters = "", nil, nil
	if body := TrainingRequest(f, owner); body["training_field"] != "embedding" || body["max_training_vector_count"] != nil || Nlist(f) != 4 {
		t.Errorf("defaults: %v, nlist %d; want the field's own name, no cap, nlist 4", body, Nlist(f))
	}
	for _, tc := range []struct {
		description, uid string
		want             bool
	}{
		{ModelDescription(owner), "uid-1", true},
		{ModelDescription(owner), "uid-2", false},
		{"a model someone trained", "uid-1", false},
		{ModelDescription(Owner{}), "", false},
	} {
		if got := ModelTrainedBy(tc.description, tc.uid); got != tc.want {
			t.Errorf("ModelTrainedBy(%q, %q) = %v", tc.description, tc.uid, got)
		}
	}
}
