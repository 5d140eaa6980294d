package controllers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// fakeIndexes is an OpenSearch holding indexes in memory, recording every write. Calls a
// VectorIndex step makes that these tests do not exercise fail loudly.
type fakeIndexes struct {
	// rebuildAPI is not faked: the decisions tests run no rebuild (a call panics).
	rebuildAPI
	indexes  map[string]*opensearch.Index
	created  []string
	metas    int
	settings []map[string]any
	mappings []map[string]any
	// stats answers Stats when set.
	stats *opensearch.IndexStats
	// snapshotShards answers SnapshotIndexShards when set; nodes answers FileCacheNodes.
	snapshotShards int
	nodes          []opensearch.FileCacheNode
	restores       int
	// version is the cluster's OpenSearch version (3.6.0 when empty).
	version string
	// models are the k-NN models by ID; counts the sample indexes' vectors by index
	// (missing: no such index); trained and deletedModels record the writes.
	models        map[string]opensearch.Model
	counts        map[string]int64
	trained       []map[string]any
	deletedModels []string
	// shards answers Shards when set; unplaceable answers UnplaceableShard for primaries
	// by shard number (an error when the number maps to "error"), explained records them.
	shards      []opensearch.ShardCopy
	unplaceable map[int]string
	explained   []int
	// catalogue answers Catalogue when set; catalogues counts the calls.
	catalogue  *opensearch.Catalogue
	catalogues int
	// reads counts GetIndex calls, statsReads Stats calls, infos Info calls.
	reads, statsReads, infos int
}

var errNotFaked = errors.New("not faked")

func (f *fakeIndexes) GetIndex(_ context.Context, name string) (*opensearch.Index, error) {
	f.reads++
	if idx, ok := f.indexes[name]; ok {
		return idx, nil
	}
	return nil, &opensearch.APIError{Status: 404, Type: "index_not_found_exception"}
}
func (f *fakeIndexes) Catalogue(context.Context, time.Time, time.Duration) (*opensearch.Catalogue, error) {
	f.catalogues++
	if f.catalogue != nil {
		return f.catalogue, nil
	}
	return nil, errNotFaked
}
func (f *fakeIndexes) CreateIndex(_ context.Context, name string, settings, properties, indexMeta map[string]any) error {
	f.created = append(f.created, name)
	flat := map[string]string{}
	for k, v := range settings {
		b, _ := json.Marshal(v)
		flat[k] = strings.Trim(string(b), `"`)
	}
	f.indexes[name] = &opensearch.Index{Name: name, UUID: "uuid-new", Settings: flat, Properties: raw(properties), Meta: indexMeta}
	return nil
}
func (f *fakeIndexes) PutMeta(context.Context, string, map[string]any) error { f.metas++; return nil }
func (f *fakeIndexes) PutSettings(_ context.Context, _ string, s map[string]any) error {
	f.settings = append(f.settings, s)
	return nil
}
func (f *fakeIndexes) SetWriteBlock(ctx context.Context, name string, blocked bool) error {
	return f.PutSettings(ctx, name, opensearch.WriteBlock(blocked))
}
func (f *fakeIndexes) PutMapping(_ context.Context, _ string, p map[string]any) error {
	f.mappings = append(f.mappings, p)
	return nil
}
func (f *fakeIndexes) DeleteIndex(context.Context, string) error { return errNotFaked }
func (f *fakeIndexes) Stats(context.Context, string) (opensearch.IndexStats, error) {
	f.statsReads++
	if f.stats != nil {
		return *f.stats, nil
	}
	return opensearch.IndexStats{}, errNotFaked
}
func (f *fakeIndexes) CreateSnapshot(context.Context, string, string, []string, map[string]any) error {
	return errNotFaked
}
func (f *fakeIndexes) GetSnapshot(context.Context, string, string) (opensearch.SnapshotInfo, error) {
	return opensearch.SnapshotInfo{}, errNotFaked
}
func (f *fakeIndexes) DeleteSnapshot(context.Context, string, string) error { return errNotFaked }
func (f *fakeIndexes) Restore(context.Context, string, string, string, string, bool, map[string]any) error {
	f.restores++
	return errNotFaked
}
func (f *fakeIndexes) SnapshotIndexShards(context.Context, string, string, string) (int, error) {
	if f.snapshotShards > 0 {
		return f.snapshotShards, nil
	}
	return 0, errNotFaked
}
func (f *fakeIndexes) FileCacheNodes(context.Context) ([]opensearch.FileCacheNode, error) {
	return f.nodes, nil
}
func (f *fakeIndexes) RemoteStoreStats(context.Context, string) (opensearch.RemoteStoreStats, error) {
	return opensearch.RemoteStoreStats{}, errNotFaked
}
func (f *fakeIndexes) RestoreFromRemoteStore(context.Context, string) error { return errNotFaked }
func (f *fakeIndexes) Shards(context.Context) ([]opensearch.ShardCopy, error) {
	if f.shards == nil {
		return nil, errNotFaked
	}
	return f.shards, nil
}
func (f *fakeIndexes) UnplaceableShard(_ context.Context, _ string, shard int, primary bool) (string, error) {
	if !primary {
		return "", errNotFaked
	}
	f.explained = append(f.explained, shard)
	if f.unplaceable[shard] == "error" {
		return "", &opensearch.APIError{Status: 403, Reason: "no permission for cluster:monitor/allocation/explain"}
	}
	return f.unplaceable[shard], nil
}
func (f *fakeIndexes) RestoredFrom(context.Context, string) (string, string, error) {
	return "", "", errNotFaked
}
func (f *fakeIndexes) NodeStats(context.Context, string) (opensearch.NodeStats, error) {
	return opensearch.NodeStats{}, errNotFaked
}
func (f *fakeIndexes) GetModel(_ context.Context, id string) (opensearch.Model, error) {
	if m, ok := f.models[id]; ok {
		return m, nil
	}
	return opensearch.Model{}, &opensearch.APIError{Status: 404, Type: "resource_not_found_exception"}
}
func (f *fakeIndexes) TrainModel(_ context.Context, id string, body map[string]any) error {
	f.trained = append(f.trained, body)
	if f.models == nil {
		f.models = map[string]opensearch.Model{}
	}
	f.models[id] = opensearch.Model{ID: id, State: opensearch.ModelTraining, Description: body["description"].(string)}
	return nil
}
func (f *fakeIndexes) DeleteModel(_ context.Context, id string) error {
	f.deletedModels = append(f.deletedModels, id)
	delete(f.models, id)
	return nil
}
func (f *fakeIndexes) Count(_ context.Context, index, _ string) (int64, error) {
	if n, ok := f.counts[index]; ok {
		return n, nil
	}
	return 0, &opensearch.APIError{Status: 404, Type: "index_not_found_exception"}
}
func (f *fakeIndexes) SearchPreferring(context.Context, string, any, string) (opensearch.SearchResult, error) {
	return opensearch.SearchResult{}, errNotFaked
}
func (f *fakeIndexes) Info(context.Context) (opensearch.ClusterInfo, error) {
	f.infos++
	return opensearch.ClusterInfo{Version: cmp.Or(f.version, "3.6.0")}, nil
}

func raw(properties map[string]any) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range properties {
		out[k], _ = json.Marshal(v)
	}
	return out
}

func testIndexSpec() *v1alpha1.VectorIndex {
	vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns", UID: types.UID("uid-docs"), Generation: 1}}
	vi.Spec = v1alpha1.VectorIndexSpec{IndexName: "docs-v1", Shards: 2, Replicas: 1, RefreshInterval: "1s",
		Fields: []v1alpha1.VectorField{{Name: "embedding", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "lucene",
			Method: v1alpha1.VectorMethod{Name: "hnsw"}}}}
	vi.Spec.ClusterRef.Name = "vectors"
	vi.Spec.Search.ConcurrentSegmentSearch.Mode = "auto"
	return vi
}

// liveIndexOf is an index as OpenSearch would hold it for spec, owned by owner ("" for none).
func liveIndexOf(t *testing.T, vi *v1alpha1.VectorIndex, owner string) *opensearch.Index {
	t.Helper()
	props, err := indexspec.Properties(&vi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	settings := indexspec.DynamicSettings(&vi.Spec, nil)
	settings["index.number_of_shards"] = "2"
	indexMeta := map[string]any{}
	if owner != "" {
		indexMeta[indexspec.MetaUID] = owner
	}
	return &opensearch.Index{Name: vi.OpenSearchIndexName(), UUID: "uuid-live", Settings: settings, Properties: raw(props), Meta: indexMeta}
}

func indexRunFor(vi *v1alpha1.VectorIndex, f *fakeIndexes) *indexRun {
	run := newIndexRun(vi)
	run.osClient = f
	return run
}

// TestEnsureIndex: create when missing, adopt an unowned index that matches, refuse (and
// write nothing to) one that does not match or that another object owns. The cluster's
// version is read only for a create it decides (an engine some version retired).
func TestEnsureIndex(t *testing.T) {
	nmslib := func(vi *v1alpha1.VectorIndex) { vi.Spec.Fields[0].Engine = "nmslib" }
	for _, tc := range []struct {
		name                     string
		live                     func(*testing.T, *v1alpha1.VectorIndex) *opensearch.Index
		conflict                 string
		wantCreated, wantAdopted bool
		// spec changes the spec; version is the cluster's; refused the reason nothing is sent;
		// versionRead: the version decides, so it is read.
		spec        func(*v1alpha1.VectorIndex)
		version     string
		refused     string
		versionRead bool
	}{
		{name: "missing: created", wantCreated: true},
		{name: "nmslib on 3.x: refused, nothing sent", spec: nmslib, refused: v1alpha1.ReasonUnsupportedByCluster, versionRead: true},
		{name: "nmslib on 2.x: created", spec: nmslib, version: "2.19.1", wantCreated: true, versionRead: true},
		{name: "nmslib carried over to 3.x: adopted", spec: nmslib, live: func(t *testing.T, vi *v1alpha1.VectorIndex) *opensearch.Index { return liveIndexOf(t, vi, "") }, wantAdopted: true},
		{name: "unowned and matching: adopted", live: func(t *testing.T, vi *v1alpha1.VectorIndex) *opensearch.Index { return liveIndexOf(t, vi, "") }, wantAdopted: true},
		{name: "unowned with other shards: conflict", live: func(t *testing.T, vi *v1alpha1.VectorIndex) *opensearch.Index {
			idx := liveIndexOf(t, vi, "")
			idx.Settings["index.number_of_shards"] = "5"
			return idx
		}, conflict: "shards: declared 2, index has 5"},
		{name: "owned by another object: conflict", live: func(t *testing.T, vi *v1alpha1.VectorIndex) *opensearch.Index {
			return liveIndexOf(t, vi, "someone-else")
		}, conflict: "managed by VectorIndex"},
		{name: "ours: nothing written", live: func(t *testing.T, vi *v1alpha1.VectorIndex) *opensearch.Index { return liveIndexOf(t, vi, "uid-docs") }},
	} {
		vi := testIndexSpec()
		if tc.spec != nil {
			tc.spec(vi)
		}
		f := &fakeIndexes{indexes: map[string]*opensearch.Index{}, version: tc.version}
		if tc.live != nil {
			f.indexes[vi.OpenSearchIndexName()] = tc.live(t, vi)
		}
		r := &VectorIndexReconciler{Recorder: events.NewFakeRecorder(10)}
		run := indexRunFor(vi, f)
		err := r.ensureIndex(context.Background(), run)
		if want := map[bool]int{true: 1}[tc.versionRead]; f.infos != want {
			t.Errorf("%s: the cluster's version read %d times, want %d", tc.name, f.infos, want)
		}
		var conflict *conflictError
		var refusal *reasonError
		switch {
		case tc.refused != "":
			if !errors.As(err, &refusal) || refusal.reason != tc.refused || len(f.created) != 0 {
				t.Errorf("%s: %v, created %v; want refused with %s and nothing created", tc.name, err, f.created, tc.refused)
			}
			continue
		case tc.conflict != "":
			if !errors.As(err, &conflict) || !strings.Contains(conflict.Error(), tc.conflict) {
				t.Errorf("%s: %v, want a conflict naming %q", tc.name, err, tc.conflict)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
		if (len(f.created) == 1) != tc.wantCreated || (f.metas == 1) != tc.wantAdopted || len(f.settings)+len(f.mappings) != 0 {
			t.Errorf("%s: created %v, meta writes %d, settings %v, mappings %v", tc.name, f.created, f.metas, f.settings, f.mappings)
		}
		if tc.conflict == "" && (run.live == nil || vi.Status.IndexUUID == "") {
			t.Errorf("%s: live index %v, status uuid %q; want both set", tc.name, run.live, vi.Status.IndexUUID)
		}
		if tc.wantCreated && run.progressing == "" {
			t.Errorf("%s: a new index reports no progress while its shards start", tc.name)
		}
	}
}

// TestConvergeSettings: one PUT of exactly the differing dynamic settings; while a
// BenchmarkRun holds the index, the settings it holds are left alone.
func TestConvergeSettings(t *testing.T) {
	for _, tc := range []struct {
		name         string
		benchmarking bool
		want         map[string]any
	}{
		{"drift repaired", false, map[string]any{"index.refresh_interval": "1s", "index.number_of_replicas": "1"}},
		{"a benchmark holds refresh", true, map[string]any{"index.number_of_replicas": "1"}},
	} {
		vi := testIndexSpec()
		f := &fakeIndexes{indexes: map[string]*opensearch.Index{}}
		run := indexRunFor(vi, f)
		run.live = liveIndexOf(t, vi, "uid-docs")
		run.live.Settings["index.refresh_interval"] = "-1"
		run.live.Settings["index.number_of_replicas"] = "0"
		run.benchmarking = tc.benchmarking
		if err := (&VectorIndexReconciler{Recorder: events.NewFakeRecorder(10)}).convergeSettings(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		if len(f.settings) != 1 || len(f.settings[0]) != len(tc.want) {
			t.Fatalf("%s: settings writes %v, want one of %v", tc.name, f.settings, tc.want)
		}
		for k, v := range tc.want {
			if f.settings[0][k] != v {
				t.Errorf("%s: %s=%v, want %v", tc.name, k, f.settings[0][k], v)
			}
		}
	}
}

// TestAddFields: a field added to the spec is added to the mapping; a field whose mapping
// differs is a conflict, written to nothing.
func TestAddFields(t *testing.T) {
	vi := testIndexSpec()
	f := &fakeIndexes{indexes: map[string]*opensearch.Index{}}
	run := indexRunFor(vi, f)
	run.live = liveIndexOf(t, vi, "uid-docs")
	vi.Spec.Fields = append(vi.Spec.Fields, v1alpha1.VectorField{Name: "title_vec", Dimension: 4, DataType: "float", SpaceType: "l2", Engine: "lucene",
		Method: v1alpha1.VectorMethod{Name: "hnsw"}})
	r := &VectorIndexReconciler{Recorder: events.NewFakeRecorder(10)}
	if err := r.addFields(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if len(f.mappings) != 1 || f.mappings[0]["title_vec"] == nil || len(f.mappings[0]) != 1 {
		t.Errorf("mapping writes %v, want one adding title_vec", f.mappings)
	}
	vi.Spec.Fields[0].Dimension = 16
	f.mappings = nil
	var conflict *conflictError
	if err := r.addFields(context.Background(), run); !errors.As(err, &conflict) || len(f.mappings) != 0 {
		t.Errorf("a changed dimension: %v, %d mapping writes; want a conflict and none", err, len(f.mappings))
	}
}

// remoteSnapshotSpec is testIndexSpec restored as a searchable snapshot of backups/nightly.
func remoteSnapshotSpec() *v1alpha1.VectorIndex {
	vi := testIndexSpec()
	vi.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: "backups", Snapshot: "nightly", Storage: v1alpha1.StorageRemoteSnapshot}
	return vi
}

// remoteSnapshotOf is the live searchable snapshot OpenSearch makes of vi's index from
// backups/nightly: the original's _meta owner, store type remote_snapshot.
func remoteSnapshotOf(t *testing.T, vi *v1alpha1.VectorIndex) *opensearch.Index {
	idx := liveIndexOf(t, vi, "uid-original")
	idx.Settings["index.store.type"] = "remote_snapshot"
	idx.Settings["index.searchable_snapshot.repository"] = "backups"
	idx.Settings["index.searchable_snapshot.snapshot_id.name"] = "nightly"
	return idx
}

// TestRemoteSnapshotIndex: a searchable snapshot is restored only when a node can serve
// it; it is this object's by the restore status records (its _meta, the original's, cannot
// be written), never when it is another index of the same name; of its settings only
// replicas are written and the rest are reported as kept from the snapshot.
func TestRemoteSnapshotIndex(t *testing.T) {
	ctx := context.Background()
	r := &VectorIndexReconciler{Recorder: events.NewFakeRecorder(10)}

	t.Run("no warm node: nothing restored", func(t *testing.T) {
		vi := remoteSnapshotSpec()
		f := &fakeIndexes{indexes: map[string]*opensearch.Index{}, snapshotShards: 2,
			nodes: []opensearch.FileCacheNode{{Name: "n0", Roles: []string{"cluster_manager", "data"}}}}
		err := r.ensureIndex(ctx, indexRunFor(vi, f))
		if f := classify(err); f.reason != v1alpha1.ReasonNoWarmNodes || !f.transient {
			t.Errorf("%v: reason %s transient %v, want %s and retried", err, f.reason, f.transient, v1alpha1.ReasonNoWarmNodes)
		}
		if f.restores != 0 || vi.Status.Restore != nil {
			t.Errorf("%d restores, status.restore %+v; want none", f.restores, vi.Status.Restore)
		}
	})

	for _, tc := range []struct {
		name       string
		statusUUID string
		conflict   bool
	}{
		{"restore interrupted before its UUID was recorded: taken without a _meta write", "", false},
		{"the index status records: ours", "uuid-live", false},
		{"another index of that name restored from the same snapshot: not ours", "uuid-earlier", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vi := remoteSnapshotSpec()
			vi.Status.Restore = &v1alpha1.RestoreStatus{Repository: "backups", Snapshot: "nightly", Index: "docs-v1"}
			vi.Status.IndexUUID = tc.statusUUID
			f := &fakeIndexes{indexes: map[string]*opensearch.Index{"docs-v1": remoteSnapshotOf(t, vi)}}
			run := indexRunFor(vi, f)
			err := r.ensureIndex(ctx, run)
			var conflict *conflictError
			if errors.As(err, &conflict) != tc.conflict || (!tc.conflict && err != nil) {
				t.Fatalf("%v, want conflict %v", err, tc.conflict)
			}
			if f.metas != 0 {
				t.Errorf("%d _meta writes to a read-only index", f.metas)
			}
			if !tc.conflict && vi.Status.IndexUUID != "uuid-live" {
				t.Errorf("status.indexUUID %q, want uuid-live", vi.Status.IndexUUID)
			}
		})
	}

	t.Run("a local restore of the same index is not taken for one", func(t *testing.T) {
		vi := remoteSnapshotSpec()
		vi.Status.Restore = &v1alpha1.RestoreStatus{Repository: "backups", Snapshot: "nightly", Index: "docs-v1"}
		live := remoteSnapshotOf(t, vi)
		delete(live.Settings, "index.store.type")
		f := &fakeIndexes{indexes: map[string]*opensearch.Index{"docs-v1": live}}
		var conflict *conflictError
		if err := r.ensureIndex(ctx, indexRunFor(vi, f)); !errors.As(err, &conflict) {
			t.Errorf("%v, want a conflict", err)
		}
	})

	t.Run("only replicas are written; the rest is reported", func(t *testing.T) {
		vi := remoteSnapshotSpec()
		f := &fakeIndexes{indexes: map[string]*opensearch.Index{}}
		run := indexRunFor(vi, f)
		run.live = remoteSnapshotOf(t, vi)
		run.live.Settings["index.number_of_replicas"] = "0"
		delete(run.live.Settings, "index.refresh_interval")
		if err := r.convergeSettings(ctx, run); err != nil {
			t.Fatal(err)
		}
		if len(f.settings) != 1 || len(f.settings[0]) != 1 || f.settings[0]["index.number_of_replicas"] != "1" {
			t.Errorf("settings writes %v, want one of index.number_of_replicas=1 only", f.settings)
		}
		if want := []string{"index.refresh_interval=1s"}; !slices.Equal(vi.Status.FixedSettings, want) {
			t.Errorf("status.fixedSettings %v, want %v", vi.Status.FixedSettings, want)
		}
	})
}

// TestLiveLoadIsWhatWasMeasured: a tuner decision's Event names the load it was made at as
// far as it was measured; before two samples of the search counter there is none, not 0.
func TestLiveLoadIsWhatWasMeasured(t *testing.T) {
	for _, tc := range []struct {
		st   v1alpha1.TuningStatus
		want string
	}{
		{v1alpha1.TuningStatus{}, "before any live load was measured"},
		{v1alpha1.TuningStatus{LiveQueriesPerSecond: "12.50", LiveInFlight: "1.95"}, "at 12.50 qps, 1.95 searches in flight (the benchmark did not measure the applied setting)"},
		{v1alpha1.TuningStatus{LiveQueriesPerSecond: "12.50", LiveInFlight: "1.95", LoadClients: "2.10", LoadReadBy: "searches in flight"},
			"at 2.10 clients by searches in flight (1.95 searches in flight, 12.50 qps)"},
	} {
		if got := liveLoad(&tc.st); got != tc.want {
			t.Errorf("liveLoad(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

func TestSliceColumn(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		count int32
		want  string
	}{
		{"none", 0, "off"},
		{"all", 0, "lucene"},
		{"all", 1, "1"},
		{"all", 4, "4"},
		{"auto", 0, "lucene (auto)"},
		{"", 2, "2 (auto)"}, // unset: OpenSearch 3.x's default mode is auto
	} {
		if got := sliceColumn(tc.mode, tc.count); got != tc.want {
			t.Errorf("sliceColumn(%q, %d) = %q, want %q", tc.mode, tc.count, got, tc.want)
		}
	}
}

// TestModelsBeforeTheIndex: a method ivf field's model is trained from its sample before the
// index is created (the sample missing or smaller than nlist says so, and nothing is
// trained); the index waits while it trains and is created with the model once OpenSearch
// reports it created; a failed model of ours is deleted to be trained again; a model of the
// name the object did not train is used only when it matches the field.
func TestModelsBeforeTheIndex(t *testing.T) {
	ivf := func(vi *v1alpha1.VectorIndex) {
		vi.Spec.Fields[0] = v1alpha1.VectorField{Name: "embedding", Dimension: 8, DataType: "float", SpaceType: "l2", Engine: "faiss", Mode: "in_memory", CompressionLevel: "1x",
			Method:   v1alpha1.VectorMethod{Name: "ivf", Parameters: &v1alpha1.MethodParameters{Nlist: ptr.To[int32](16)}},
			Training: &v1alpha1.FieldTraining{ModelID: "docs-ivf", Index: "sample"}}
	}
	mine := indexspec.ModelDescription(indexspec.Owner{Namespace: "ns", Name: "docs", UID: "uid-docs"})
	for _, tc := range []struct {
		name    string
		counts  map[string]int64
		models  map[string]opensearch.Model
		reason  string // the step's refusal; "" for none
		waiting bool   // the step waits for training
		trained bool
		created bool
		deleted bool
		state   string
	}{
		{name: "no sample index", counts: map[string]int64{}, reason: v1alpha1.ReasonTrainingSampleMissing},
		{name: "sample below nlist", counts: map[string]int64{"sample": 15}, reason: v1alpha1.ReasonTrainingSampleTooSmall},
		{name: "trained, the index waits", counts: map[string]int64{"sample": 16}, waiting: true, trained: true, state: opensearch.ModelTraining},
		{name: "still training", models: map[string]opensearch.Model{"docs-ivf": {State: opensearch.ModelTraining, Description: mine}}, waiting: true, state: opensearch.ModelTraining},
		{name: "created: the index follows", models: map[string]opensearch.Model{"docs-ivf": {State: opensearch.ModelCreated, Description: mine, Dimension: 8, SpaceType: "l2"}}, created: true, state: opensearch.ModelCreated},
		{name: "failed: deleted to train again", models: map[string]opensearch.Model{"docs-ivf": {State: opensearch.ModelFailed, Error: "oom", Description: mine}}, reason: v1alpha1.ReasonTrainingFailed, deleted: true, state: opensearch.ModelFailed},
		{name: "someone else's matching model is used", models: map[string]opensearch.Model{"docs-ivf": {State: opensearch.ModelCreated, Dimension: 8, SpaceType: "l2"}}, created: true, state: opensearch.ModelCreated},
		{name: "someone else's other model is a conflict", models: map[string]opensearch.Model{"docs-ivf": {State: opensearch.ModelCreated, Dimension: 16, SpaceType: "l2"}}, reason: "conflict", state: opensearch.ModelCreated},
	} {
		vi := testIndexSpec()
		ivf(vi)
		f := &fakeIndexes{indexes: map[string]*opensearch.Index{}, counts: tc.counts, models: tc.models}
		r := &VectorIndexReconciler{Recorder: events.NewFakeRecorder(10)}
		run := indexRunFor(vi, f)
		err := r.ensureIndex(context.Background(), run)
		var refusal *reasonError
		var conflict *conflictError
		switch {
		case tc.reason == "conflict":
			if !errors.As(err, &conflict) {
				t.Errorf("%s: %v, want a conflict", tc.name, err)
			}
		case tc.reason != "":
			if !errors.As(err, &refusal) || refusal.reason != tc.reason {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.reason)
			}
		case tc.waiting:
			if !errors.Is(err, errModelsTraining) || !strings.Contains(run.progressing, "docs-ivf") {
				t.Errorf("%s: %v (progressing %q), want the index waiting on docs-ivf", tc.name, err, run.progressing)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
		if (len(f.trained) == 1) != tc.trained || (len(f.created) == 1) != tc.created || (len(f.deletedModels) == 1) != tc.deleted {
			t.Errorf("%s: trained %v, created %v, deleted models %v", tc.name, f.trained, f.created, f.deletedModels)
		}
		if tc.trained {
			body := f.trained[0]
			method := body["method"].(map[string]any)
			if body["training_index"] != "sample" || body["training_field"] != "embedding" || body["dimension"] != int32(8) || method["name"] != "ivf" || method["parameters"].(map[string]any)["nlist"] != int32(16) {
				t.Errorf("%s: training request %v", tc.name, body)
			}
		}
		if tc.created {
			if m := string(f.indexes["docs-v1"].Properties["embedding"]); m != `{"model_id":"docs-ivf","type":"knn_vector"}` {
				t.Errorf("%s: created mapping %s, want the model's", tc.name, m)
			}
		}
		if got := vi.Status.Models; tc.state != "" && (len(got) != 1 || got[0].State != tc.state || got[0].ModelID != "docs-ivf") {
			t.Errorf("%s: status.models %+v, want docs-ivf %s", tc.name, got, tc.state)
		}
	}
}

// TestVectorIndexReconcile drives whole reconciles of a VectorIndex, as the manager
// would, against controller-runtime's fake client and a fake OpenSearch: the index created
// once (its finalizer first), Progressing while its primaries start and looked at again
// soon, then Ready at the resync; nothing sent while paused; deleted under the default
// Retain policy with its index left in place.
func TestVectorIndexReconcile(t *testing.T) {
	vi := testIndexSpec()
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(vi).WithStatusSubresource(vi).Build()
	f := &fakeIndexes{indexes: map[string]*opensearch.Index{}, stats: &opensearch.IndexStats{Health: "yellow"}}
	r := &VectorIndexReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(50),
		Options:    Options{IndexResyncInterval: 10 * time.Minute, IndexRedGrace: time.Minute},
		openSearch: func(context.Context, string, string) (indexAPI, error) { return f, nil }}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vi)}
	reconcile := func(step string) (*v1alpha1.VectorIndex, ctrl.Result) {
		t.Helper()
		return reconcileOnce[v1alpha1.VectorIndex](t, r, c, req.NamespacedName, step)
	}
	reason := func(got *v1alpha1.VectorIndex, typ string) string {
		if c := meta.FindStatusCondition(got.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
		return ""
	}

	got, answer := reconcile("create")
	if !controllerutil.ContainsFinalizer(got, IndexFinalizer) || !slices.Equal(f.created, []string{"docs-v1"}) || got.Status.ObservedGeneration != 1 ||
		reason(got, v1alpha1.ConditionProgressing) != v1alpha1.ReasonReconciling || answer.RequeueAfter != progressPollInterval {
		t.Fatalf("created: finalizer %v, created %v, observed %d, Progressing %q, answer %+v",
			got.Finalizers, f.created, got.Status.ObservedGeneration, reason(got, v1alpha1.ConditionProgressing), answer)
	}
	f.stats = &opensearch.IndexStats{Health: "green", ActivePrimaries: 2, DocsCount: 7}
	if got, answer = reconcile("started"); reason(got, v1alpha1.ConditionReady) != v1alpha1.ReasonReconciled || got.Status.DocsCount != 7 ||
		answer.RequeueAfter != 10*time.Minute || len(f.created) != 1 {
		t.Fatalf("started: Ready %q, docs %d, answer %+v, created %v", reason(got, v1alpha1.ConditionReady), got.Status.DocsCount, answer, f.created)
	}

	got.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	got.Spec.Replicas = 2
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	writes := len(f.settings)
	if got, _ = reconcile("paused"); len(f.settings) != writes || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionPaused) {
		t.Errorf("paused: %d setting writes, Paused %v; want none and Paused", len(f.settings)-writes, got.Status.Conditions)
	}
	delete(got.Annotations, v1alpha1.PausedAnnotation)
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, _ = reconcile("resumed"); len(f.settings) != writes+1 || f.settings[writes]["index.number_of_replicas"] != "2" || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("resumed: setting writes %v, observed %d of %d; want the replicas written", f.settings[writes:], got.Status.ObservedGeneration, got.Generation)
	}

	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, _ = reconcile("deleted"); got != nil || f.indexes["docs-v1"] == nil {
		t.Errorf("deleted: object kept %v, index %v; want the object gone and the index retained", got != nil, f.indexes["docs-v1"] != nil)
	}
}

// TestAnIdleIndexIsReadFromTheCatalogue: once an index has settled, a resync whose cluster
// catalogue shows it unchanged since its last read sends no request of its own and takes
// its figures from the catalogue (as a resync that must read the index does); a version
// that moved (a change made outside), a new generation or a catalogue that cannot be read
// each bring a full read back, and the change made outside is repaired.
func TestAnIdleIndexIsReadFromTheCatalogue(t *testing.T) {
	vi := testIndexSpec()
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(vi).WithStatusSubresource(vi).Build()
	f := &fakeIndexes{indexes: map[string]*opensearch.Index{}, stats: &opensearch.IndexStats{Health: "green", ActivePrimaries: 2, DocsCount: 7}}
	r := &VectorIndexReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(50),
		Options:    Options{IndexResyncInterval: 10 * time.Minute, IndexRedGrace: time.Minute},
		openSearch: func(context.Context, string, string) (indexAPI, error) { return f, nil }}
	key := client.ObjectKeyFromObject(vi)
	catalogued := func(version int64, docs int64) *opensearch.Catalogue {
		return opensearch.NewCatalogue(time.Now(), opensearch.CatalogueEntry{Name: "docs-v1", UUID: "uuid-new", Version: version,
			Stats: &opensearch.IndexStats{Health: "green", ActivePrimaries: 2, DocsCount: docs}})
	}
	// resync reconciles once and says what it asked of OpenSearch.
	resync := func(step string) (got *v1alpha1.VectorIndex, reads, statsReads, catalogues int) {
		t.Helper()
		r0, s0, c0 := f.reads, f.statsReads, f.catalogues
		got, _ = reconcileOnce[v1alpha1.VectorIndex](t, r, c, key, step)
		if !conditions.IsReady(got.Status.Conditions) {
			t.Fatalf("%s: not Ready: %+v", step, got.Status.Conditions)
		}
		return got, f.reads - r0, f.statsReads - s0, f.catalogues - c0
	}
	reconcileOnce[v1alpha1.VectorIndex](t, r, c, key, "create")
	resync("started")

	f.catalogue = catalogued(5, 9)
	if got, reads, statsReads, catalogues := resync("first resync"); reads != 1 || statsReads != 0 || catalogues != 1 || got.Status.DocsCount != 9 {
		t.Errorf("first resync: %d index reads, %d stats reads, %d catalogues, docs %d; want the index read (no version known yet) with the catalogue's figures",
			reads, statsReads, catalogues, got.Status.DocsCount)
	}
	f.catalogue = catalogued(5, 9)
	if got, reads, statsReads, _ := resync("idle resync"); reads != 0 || statsReads != 0 || got.Status.DocsCount != 9 {
		t.Errorf("idle resync: %d index reads, %d stats reads, docs %d; want none and the catalogue's 9", reads, statsReads, got.Status.DocsCount)
	}

	f.indexes["docs-v1"].Settings["index.refresh_interval"] = "30s"
	f.catalogue = catalogued(6, 9)
	writes := len(f.settings)
	if _, reads, _, _ := resync("changed outside"); reads != 1 || len(f.settings) != writes+1 || f.settings[writes]["index.refresh_interval"] != "1s" {
		t.Errorf("changed outside: %d index reads, setting writes %v; want the index read and its refresh interval put back", reads, f.settings[writes:])
	}

	got := &v1alpha1.VectorIndex{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	// The fake client leaves metadata.generation to its caller.
	got.Spec.RefreshInterval, got.Generation = "2s", got.Generation+1
	if err := c.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	f.catalogue = catalogued(6, 9)
	if _, reads, _, catalogues := resync("spec changed"); reads != 1 || catalogues != 0 {
		t.Errorf("spec changed: %d index reads, %d catalogues; want a full read without one", reads, catalogues)
	}

	f.catalogue = nil
	if _, reads, _, catalogues := resync("no catalogue"); reads != 1 || catalogues != 1 {
		t.Errorf("no catalogue: %d index reads, %d catalogues asked; want a full read after the failed one", reads, catalogues)
	}
}

// TestExplainRed: an index red past the grace says why its first unplaceable primary cannot
// be assigned, asking allocation explain only then and only for unassigned primaries; the
// reason reaches the Degraded message.
func TestExplainRed(t *testing.T) {
	old := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	young := strconv.FormatInt(time.Now().UnixMilli(), 10)
	filter := `cannot allocate because allocation is not permitted to any of the nodes; node-1: [filter] node does not match index setting [index.routing.allocation.require] filters [_name:"gone"]`
	copies := []opensearch.ShardCopy{
		{Index: "docs", Shard: "0", PriRep: "p", State: "STARTED", Node: "node-1"},
		{Index: "other", Shard: "1", PriRep: "p", State: "UNASSIGNED"},
		{Index: "docs", Shard: "1", PriRep: "r", State: "UNASSIGNED"},
		{Index: "docs", Shard: "1", PriRep: "p", State: "UNASSIGNED"},
		{Index: "docs", Shard: "2", PriRep: "p", State: "UNASSIGNED"},
	}
	r := &VectorIndexReconciler{Options: Options{IndexRedGrace: time.Minute}}
	for _, tc := range []struct {
		name, health, created string
		shards                []opensearch.ShardCopy
		unplaceable           map[int]string
		explained             []int
		message               string // in the Degraded message; "" when not Degraded/IndexRed
		err                   bool
	}{
		{name: "green: nothing asked", health: "green", created: old, shards: copies},
		{name: "red but young: nothing asked", health: "red", created: young, shards: copies},
		{name: "red and old: the first unplaceable primary", health: "red", created: old, shards: copies,
			unplaceable: map[int]string{2: filter}, explained: []int{1, 2},
			message: "index health is red: some primary shards are unassigned; primary shard 2 cannot be assigned: " + filter},
		{name: "red and old, still being placed", health: "red", created: old, shards: copies,
			explained: []int{1, 2}, message: "index health is red: some primary shards are unassigned"},
		{name: "explain refused: red stays the finding", health: "red", created: old, shards: copies,
			unplaceable: map[int]string{1: "error"}, explained: []int{1},
			message: "why primary shard 1 is unassigned could not be read: opensearch answered 403"},
		{name: "shards unreadable", health: "red", created: old, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeOS := &fakeIndexes{shards: tc.shards, unplaceable: tc.unplaceable}
			vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
			vi.Status.Health = tc.health
			run := &indexRun{vi: vi, name: "docs", osClient: fakeOS,
				live: &opensearch.Index{Name: "docs", Settings: map[string]string{"index.creation_date": tc.created}}}
			err := r.explainRed(t.Context(), run)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if !slices.Equal(fakeOS.explained, tc.explained) {
				t.Errorf("explained primaries %v, want %v", fakeOS.explained, tc.explained)
			}
			if err != nil {
				return
			}
			_, _ = r.recordOutcome(run, nil)
			c := meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionDegraded)
			red := c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonIndexHealthRed
			if red != (tc.message != "") || (red && !strings.Contains(c.Message, tc.message)) {
				t.Errorf("Degraded %+v, want IndexRed %v with %q", c, tc.message != "", tc.message)
			}
		})
	}
}
