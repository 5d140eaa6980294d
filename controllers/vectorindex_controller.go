package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/lastread"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rebuild"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// +kubebuilder:rbac:groups=vectorpilot.io,resources=vectorindices,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=vectorpilot.io,resources=vectorindices/status,verbs=get;update
// +kubebuilder:rbac:groups=vectorpilot.io,resources=vectorindices/finalizers,verbs=update

// IndexFinalizer holds a VectorIndex until its deletion policy has been applied.
const IndexFinalizer = "vectorpilot.io/index-deletion-policy"

// progressPollInterval is how often an index whose shards are starting is looked at.
const progressPollInterval = 2 * time.Second

// clusterRefField indexes VectorIndexes by the SearchCluster they name.
const clusterRefField = ".spec.clusterRef.name"

// indexRefField indexes BenchmarkRuns by the VectorIndex they measure.
const indexRefField = ".spec.indexRef.name"

// VectorIndexReconciler makes one k-NN index in OpenSearch match its VectorIndex.
type VectorIndexReconciler struct {
	client.Client
	// APIReader reads objects the operator does not cache (benchmark ConfigMaps).
	APIReader client.Reader
	Resolver  *connect.Resolver
	Recorder  recorder.EventRecorder
	Options   Options

	// openSearch, when set, replaces the Resolver (decision tests give a fake).
	openSearch fakeClients[indexAPI]
	// lastReads are the settled reads a resync may take again (readIndex).
	lastReads lastread.Store
}

// indexAPI is what a VectorIndex reconcile asks of OpenSearch; *opensearch.Client answers
// it, and the unit tests' fake does.
type indexAPI interface {
	rebuildAPI
	GetIndex(ctx context.Context, name string) (*opensearch.Index, error)
	Catalogue(ctx context.Context, after time.Time, maxAge time.Duration) (*opensearch.Catalogue, error)
	CreateIndex(ctx context.Context, name string, settings, properties, meta map[string]any) error
	PutMeta(ctx context.Context, name string, meta map[string]any) error
	PutSettings(ctx context.Context, name string, settings map[string]any) error
	SetWriteBlock(ctx context.Context, name string, blocked bool) error
	PutMapping(ctx context.Context, name string, properties map[string]any) error
	DeleteIndex(ctx context.Context, name string) error
	Stats(ctx context.Context, name string) (opensearch.IndexStats, error)
	CreateSnapshot(ctx context.Context, repo, snap string, indices []string, metadata map[string]any) error
	GetSnapshot(ctx context.Context, repo, snap string) (opensearch.SnapshotInfo, error)
	DeleteSnapshot(ctx context.Context, repo, snap string) error
	Restore(ctx context.Context, repo, snap, source, target string, remoteSnapshot bool, indexSettings map[string]any) error
	FileCacheNodes(ctx context.Context) ([]opensearch.FileCacheNode, error)
	RemoteStoreStats(ctx context.Context, index string) (opensearch.RemoteStoreStats, error)
	RestoreFromRemoteStore(ctx context.Context, index string) error
	Shards(ctx context.Context) ([]opensearch.ShardCopy, error)
	UnplaceableShard(ctx context.Context, index string, shard int, primary bool) (string, error)
	SnapshotIndexShards(ctx context.Context, repo, snap, index string) (int, error)
	RestoredFrom(ctx context.Context, index string) (repo, snap string, err error)
	NodeStats(ctx context.Context, nodes string) (opensearch.NodeStats, error)
	Info(ctx context.Context) (opensearch.ClusterInfo, error)
	GetModel(ctx context.Context, id string) (opensearch.Model, error)
	TrainModel(ctx context.Context, id string, body map[string]any) error
	DeleteModel(ctx context.Context, id string) error
	Count(ctx context.Context, index, field string) (int64, error)
	SearchPreferring(ctx context.Context, index string, body any, preference string) (opensearch.SearchResult, error)
}

// indexRun is one reconcile's working state, shared by its steps.
type indexRun struct {
	vi       *v1alpha1.VectorIndex
	osClient indexAPI
	name     string
	owner    indexspec.Owner
	live     *opensearch.Index
	// quiet: live is the last settled read taken again, the catalogue showing the index
	// unchanged since. Otherwise readVersion is the index's version in a catalogue read
	// before live was (0: none) and readEnd when live was read.
	quiet       bool
	readVersion int64
	readEnd     time.Time
	// progressing is set by a step that changed OpenSearch and expects more to settle.
	progressing string
	// tunedSlices is the autotuner's slice setting, nil when tuning is off or undecided.
	tunedSlices *indexspec.Slices
	// stats are the index figures read once per reconcile, by the first step that needs them.
	stats *opensearch.IndexStats
	// benchmarking: a BenchmarkRun is measuring the index; it owns the slice settings.
	benchmarking bool
	// rebuilding: a blue/green rebuild is under way or ended without a swap; the serving
	// index's mapping is the rebuild's business, not a conflict. rebuildProgress is the
	// Progressing message while it runs.
	rebuilding      bool
	rebuildProgress string
	// lostPrimaries are the index's unassigned primary shards, read once per reconcile by
	// the first step that needs them; redCause says why the first of them cannot be placed.
	lostPrimaries *[]string
	redCause      string
}

// Reconcile makes one VectorIndex true in OpenSearch. Each step is idempotent and stops
// the list with an error when the next cannot run yet; the error decides the conditions.
func (r *VectorIndexReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return steps.Kind[*v1alpha1.VectorIndex, *indexRun]{
		Client:    r.Client,
		New:       func() *v1alpha1.VectorIndex { return &v1alpha1.VectorIndex{} },
		Finalizer: IndexFinalizer,
		Finalize:  r.finalize,
		Scope: func(ctx context.Context, vi *v1alpha1.VectorIndex) *indexRun {
			run := newIndexRun(vi)
			run.benchmarking = r.benchmarking(ctx, vi)
			return run
		},
		Steps: func(*indexRun) []steps.Step[*indexRun] {
			return []steps.Step[*indexRun]{
				steps.Fallible("resolve cluster", r.resolveCluster),                   // SearchCluster → client
				waitingOnModels("ensure index", r.ensureIndex),                        // (train models,) create, adopt, or Degraded/Conflict
				{Name: "rebuild", Run: r.rebuild},                                     // BlueGreen: copy, gate, swap the alias; retire the previous index
				steps.Fallible("tune", r.tune),                                        // Auto: benchmark + live load → slice count
				steps.Fallible("converge settings", r.convergeSettings),               // dynamic settings only; diff → one PUT
				waitingOnModels("add fields", r.addFields),                            // (train models,) new vector and extra fields
				steps.Fallible("observe", r.observe),                                  // health, docs, segments → status
				steps.Fallible("explain red", r.explainRed),                           // red past the grace: why, from allocation explain
				steps.Fallible("recover from remote store", r.recoverFromRemoteStore), // red remote-backed: lost primaries back
				{Name: "measure recall", Run: r.measureRecall},                        // spec.recall: live recall@k when due
			}
		},
		Status: r.indexStatus,
		Resync: r.Options.IndexResyncInterval,
	}.Reconcile(ctx, req)
}

// newIndexRun is the scope of one reconcile of vi.
func newIndexRun(vi *v1alpha1.VectorIndex) *indexRun {
	return &indexRun{vi: vi, name: vi.OpenSearchIndexName(), owner: indexspec.Owner{Namespace: vi.Namespace, Name: vi.Name, UID: string(vi.UID)}}
}

// young says the index was created less than grace ago, so red is its primaries starting
// (by its creation date, which a restored index carries over from the original, so a red
// restore is never young).
func (run *indexRun) young(grace time.Duration) bool {
	if run.live == nil {
		return false
	}
	ms, err := strconv.ParseInt(run.live.Settings["index.creation_date"], 10, 64)
	return err == nil && time.Since(time.UnixMilli(ms)) < grace
}

// readIndex reads the live index — or, on a resync of an index whose last reconcile
// settled, takes that reconcile's read again when the cluster's catalogue shows the index
// unchanged since: an idle index costs no request of its own. Either way a resync takes
// the index's figures from the catalogue when it has them.
// The catalogue is at most half a resync old, so a change made outside the operator is
// repaired within one and a half resyncs. An index the autotuner drives reads its own
// figures: its load estimate wants them as of now.
func (r *VectorIndexReconciler) readIndex(ctx context.Context, run *indexRun) (*opensearch.Index, error) {
	var entry opensearch.CatalogueEntry
	found := false
	if last, ok := r.lastReads.Get(run.vi.UID); ok && last.Generation == run.vi.Generation {
		cat, err := run.osClient.Catalogue(ctx, last.ReadEnd, r.Options.IndexResyncInterval/2)
		if err != nil {
			logf.FromContext(ctx).V(1).Info("no catalogue of the cluster; reading the index", "error", err.Error())
		} else if entry, found = cat.Lookup(run.name); lastread.Unchanged(last, run.vi.Generation, cat, entry, found) {
			run.quiet = true
			run.takeFigures(entry)
			return last.Index.Clone(), nil
		}
	}
	live, err := run.osClient.GetIndex(ctx, run.name)
	run.readEnd = time.Now()
	if err == nil && found && entry.UUID == live.UUID {
		// The catalogue, read before, saw the index read: its version is at most the
		// read's, and its figures are the index's.
		run.readVersion = entry.Version
		run.takeFigures(entry)
	}
	return live, err
}

// takeFigures takes an index's figures from the catalogue, unless the autotuner drives it.
func (run *indexRun) takeFigures(entry opensearch.CatalogueEntry) {
	if entry.Stats != nil && !autoTuned(run.vi) {
		figures := *entry.Stats
		run.stats = &figures
	}
}

// rememberRead keeps a settled reconcile's read for the next resync to take again (a
// quiet reconcile's record stands as it was); any other outcome forgets it.
func (r *VectorIndexReconciler) rememberRead(run *indexRun, settled bool) {
	switch {
	case !settled || run.live == nil:
		r.lastReads.Forget(run.vi.UID)
	case !run.quiet:
		r.lastReads.Put(run.vi.UID, lastread.Record{Generation: run.vi.Generation, Index: run.live.Clone(), Version: run.readVersion, ReadEnd: run.readEnd})
	}
}

// autoTuned says the autotuner sets the index's slices.
func autoTuned(vi *v1alpha1.VectorIndex) bool {
	return vi.Spec.Tuning != nil && vi.Spec.Tuning.Mode == v1alpha1.TuningAuto
}

// conflictError is an index that exists but cannot be made to match: it is left untouched.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

func (r *VectorIndexReconciler) resolveCluster(ctx context.Context, run *indexRun) error {
	var err error
	run.osClient, err = openSearchFor(ctx, r.openSearch, r.Client, r.Resolver, run.vi.Namespace, run.vi.Spec.ClusterRef.Name)
	return err
}

func (r *VectorIndexReconciler) ensureIndex(ctx context.Context, run *indexRun) error {
	st := &run.vi.Status
	st.IndexName = run.name
	live, err := r.readIndex(ctx, run)
	switch {
	case opensearch.IsNotFound(err) && run.vi.Spec.RestoreFrom != nil && st.IndexUUID == "":
		return r.restoreIndex(ctx, run)
	case opensearch.IsNotFound(err):
		return r.createIndex(ctx, run)
	case err != nil:
		return err
	}
	switch owner, _ := live.Meta[indexspec.MetaUID].(string); {
	case owner == run.owner.UID:
		// A restore interrupted after its _meta was written left its marker behind.
		if err := removeRestoreMarker(ctx, run, live); err != nil {
			return err
		}
	case run.restoredRemoteSnapshot(live):
		// A searchable snapshot cannot take our _meta (read-only); it is ours by the restore
		// status records. Recorded before its UUID: the restore was interrupted, finish it.
		if st.IndexUUID == "" {
			return r.takeRestored(ctx, run, *st.Restore)
		}
	case owner == "":
		if err := r.adopt(ctx, run, live); err != nil {
			return err
		}
	case r.restoreInterrupted(ctx, run, live):
		// This object restored the index and stopped before marking it as its own (the
		// restored index carries the snapshot's owner): finish the restore.
		return r.takeRestored(ctx, run, *st.Restore)
	default:
		return &conflictError{msg: fmt.Sprintf("index %s is managed by VectorIndex %v; left untouched", run.name, live.Meta[indexspec.MetaOwner])}
	}
	if swapped := st.Rebuild != nil && st.Rebuild.Target == live.Name; st.IndexUUID != "" && st.IndexUUID != live.UUID && !swapped {
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonIndexReplaced, "Observe", "index %s was recreated outside the operator (uuid %s → %s)", run.name, st.IndexUUID, live.UUID)
	}
	st.IndexUUID, st.IndexName, st.Alias = live.UUID, live.Name, ""
	if live.Name != run.name {
		st.Alias = run.name
	}
	run.live = live
	return nil
}

func (r *VectorIndexReconciler) createIndex(ctx context.Context, run *indexRun) error {
	props, err := indexspec.Properties(&run.vi.Spec)
	if err != nil {
		return err
	}
	// The version is read only when it decides: a fleet's creates cost no request for it.
	if indexspec.VersionGated(&run.vi.Spec) {
		info, err := run.osClient.Info(ctx)
		if err != nil {
			return err
		}
		if err := indexspec.RefusedOn(info.Version, &run.vi.Spec); err != nil {
			return &reasonError{reason: v1alpha1.ReasonUnsupportedByCluster, message: err.Error()}
		}
	}
	if err := r.modelsReady(ctx, run, run.vi.Spec.Fields); err != nil {
		return err
	}
	create := func() error {
		return run.osClient.CreateIndex(ctx, run.name, indexspec.CreateSettings(&run.vi.Spec), props, indexspec.MetaOf(run.owner))
	}
	if blueGreen(run.vi) {
		// Behind an alias from the start, so a rebuild only ever moves the alias.
		create = func() error {
			return run.osClient.CreateAliasedIndex(ctx, rebuild.TargetName(run.name, run.vi.Generation), run.name, indexspec.CreateSettings(&run.vi.Spec), props, indexspec.MetaOf(run.owner))
		}
	}
	if err := create(); err != nil {
		if opensearch.ErrorType(err) == "resource_already_exists_exception" {
			return fmt.Errorf("index %s appeared while being created; retrying: %w", run.name, err)
		}
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonCreateFailed, "Create", "creating index %s: %v", run.name, err)
		return err
	}
	if run.vi.Status.IndexUUID != "" {
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonIndexRecreated, "Create", "index %s was deleted outside the operator and has been recreated empty", run.name)
	} else {
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonCreated, "Create", "created index %s", run.name)
	}
	live, err := run.osClient.GetIndex(ctx, run.name)
	if err != nil {
		return err
	}
	run.vi.Status.IndexUUID = live.UUID
	run.live = live
	run.progressing = "index " + run.name + " created; waiting for its shards"
	return nil
}

// restoreIndex creates the index by restoring it from the snapshot spec.restoreFrom names,
// then takes ownership once the restored mapping is known to match the spec. A snapshot
// whose index has another shard count is refused before anything is restored; the
// restore is recorded in status before OpenSearch is asked, so an interruption between
// the restore and the ownership mark is resumed (restoreInterrupted).
func (r *VectorIndexReconciler) restoreIndex(ctx context.Context, run *indexRun) error {
	src, err := r.restoreSource(ctx, run)
	if err != nil {
		return err
	}
	shards, err := run.osClient.SnapshotIndexShards(ctx, src.Repository, src.Snapshot, src.Index)
	if opensearch.IsNotFound(err) {
		return &reasonError{reason: v1alpha1.ReasonSnapshotIndexNotFound, message: fmt.Sprintf("snapshot %s/%s does not hold index %s: %v", src.Repository, src.Snapshot, src.Index, err)}
	}
	if err != nil {
		return err
	}
	if shards != int(run.vi.Spec.Shards) {
		return &conflictError{msg: fmt.Sprintf("index %s in snapshot %s/%s has %d shards, spec.shards is %d: nothing was restored", src.Index, src.Repository, src.Snapshot, shards, run.vi.Spec.Shards)}
	}
	if run.vi.Spec.IsRemoteSnapshot() {
		if err := requireWarmNodes(ctx, run.osClient); err != nil {
			return err
		}
	}
	run.vi.Status.Restore = &src
	if err := steps.RecordIntent(ctx, r.Client, run.vi, "the restore"); err != nil {
		return err
	}
	// A searchable snapshot is recognised by the snapshot its settings name; any other
	// restored index carries this object's marker.
	var marker map[string]any
	if !run.vi.Spec.IsRemoteSnapshot() {
		marker = map[string]any{indexspec.RestoreMarkerSetting: run.owner.UID}
	}
	if err := run.osClient.Restore(ctx, src.Repository, src.Snapshot, src.Index, run.name, run.vi.Spec.IsRemoteSnapshot(), marker); err != nil {
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonRestoreFailed, "Restore", "restoring %s from %s/%s: %v", src.Index, src.Repository, src.Snapshot, err)
		return err
	}
	return r.takeRestored(ctx, run, src)
}

// restoreSource resolves spec.restoreFrom to one repository, snapshot and index.
func (r *VectorIndexReconciler) restoreSource(ctx context.Context, run *indexRun) (v1alpha1.RestoreStatus, error) {
	spec := run.vi.Spec.RestoreFrom
	src := v1alpha1.RestoreStatus{Repository: spec.Repository, Snapshot: spec.Snapshot, Index: spec.Index, StartedAt: metav1.Now()}
	if ref := spec.SnapshotRef; ref != nil {
		var vs v1alpha1.VectorSnapshot
		if err := r.Get(ctx, types.NamespacedName{Namespace: run.vi.Namespace, Name: ref.Name}, &vs); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return src, &reasonError{reason: v1alpha1.ReasonSnapshotNotFound, message: "VectorSnapshot " + ref.Name + " not found", transient: true}
			}
			return src, err
		}
		if vs.Status.Phase != v1alpha1.SnapshotSucceeded {
			return src, &reasonError{reason: v1alpha1.ReasonSnapshotNotReady, message: fmt.Sprintf("VectorSnapshot %s is %s, not Succeeded", ref.Name, orPending(vs.Status.Phase)), transient: vs.Status.Phase != v1alpha1.SnapshotFailed}
		}
		src.Repository, src.Snapshot = vs.Spec.Repository, vs.Status.SnapshotName
		if src.Index == "" && len(vs.Status.Indices) == 1 {
			src.Index = vs.Status.Indices[0]
		}
	}
	if src.Index == "" {
		src.Index = run.name
	}
	return src, nil
}

// requireWarmNodes refuses a searchable-snapshot restore while no node can hold its shards:
// OpenSearch would accept it and leave the index red.
func requireWarmNodes(ctx context.Context, osClient indexAPI) error {
	nodes, err := osClient.FileCacheNodes(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(nodes, opensearch.FileCacheNode.ServesRemoteSnapshots) {
		return &reasonError{reason: v1alpha1.ReasonNoWarmNodes, transient: true,
			message: "no node has the warm role (search in OpenSearch 2.x) with a file cache to serve a RemoteSnapshot index; nothing was restored (add a node pool with role warm)"}
	}
	return nil
}

// restoredRemoteSnapshot says the live index is the searchable snapshot this object's
// recorded restore created: OpenSearch names the same repository and snapshot, and it is
// the index status records (or none is recorded yet).
func (run *indexRun) restoredRemoteSnapshot(live *opensearch.Index) bool {
	rec, st := run.vi.Status.Restore, run.vi.Status
	return rec != nil && run.vi.Spec.IsRemoteSnapshot() && indexspec.Storage(live.Settings) == v1alpha1.StorageRemoteSnapshot &&
		live.Settings["index.searchable_snapshot.repository"] == rec.Repository &&
		live.Settings["index.searchable_snapshot.snapshot_id.name"] == rec.Snapshot &&
		(st.IndexUUID == "" || st.IndexUUID == live.UUID)
}

// owns says the live index is this object's.
func (run *indexRun) owns(live *opensearch.Index) bool {
	owner, _ := live.Meta[indexspec.MetaUID].(string)
	return owner == run.owner.UID || run.restoredRemoteSnapshot(live)
}

// restoreInterrupted says the live index is the one this object's recorded restore
// created: status records the restore, no index was taken yet, and the index carries this
// object's restore marker — or, for a restore that set none (started by an earlier
// operator version), OpenSearch still says its shards came from that snapshot.
func (r *VectorIndexReconciler) restoreInterrupted(ctx context.Context, run *indexRun, live *opensearch.Index) bool {
	rec := run.vi.Status.Restore
	if rec == nil || run.vi.Status.IndexUUID != "" || run.vi.Spec.RestoreFrom == nil {
		return false
	}
	if marker, ok := live.Settings[indexspec.RestoreMarkerSetting]; ok {
		return marker == run.owner.UID
	}
	repo, snap, err := run.osClient.RestoredFrom(ctx, run.name)
	return err == nil && repo == rec.Repository && snap == rec.Snapshot
}

// takeRestored checks the restored mapping against the spec and marks the index as this
// object's.
func (r *VectorIndexReconciler) takeRestored(ctx context.Context, run *indexRun, src v1alpha1.RestoreStatus) error {
	live, err := run.osClient.GetIndex(ctx, run.name)
	if err != nil {
		return err
	}
	diff, err := mappingDiff(run, live)
	if err != nil {
		return err
	}
	problems := diff.Conflicts
	remote := run.vi.Spec.IsRemoteSnapshot()
	if remote {
		// A searchable snapshot takes no new field.
		for name := range diff.Missing {
			problems = append(problems, name+": declared, the snapshot's index lacks it and a RemoteSnapshot index is read-only")
		}
		sort.Strings(problems)
	}
	if len(problems) > 0 {
		return &conflictError{msg: fmt.Sprintf("index %s restored from %s/%s does not match the spec: %s", run.name, src.Repository, src.Snapshot, strings.Join(problems, "; "))}
	}
	if !remote {
		if err := run.osClient.PutMeta(ctx, run.name, indexspec.MetaOf(run.owner)); err != nil {
			return err
		}
		if err := removeRestoreMarker(ctx, run, live); err != nil {
			return err
		}
	}
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonRestored, "Restore", "restoring index %s from snapshot %s/%s (index %s)", run.name, src.Repository, src.Snapshot, src.Index)
	run.vi.Status.IndexUUID = live.UUID
	run.live = live
	run.progressing = "index " + run.name + " restoring from " + src.Repository + "/" + src.Snapshot
	return nil
}

// removeRestoreMarker removes the restore marker once the index carries this object's
// _meta, which recognises it from then on.
func removeRestoreMarker(ctx context.Context, run *indexRun, live *opensearch.Index) error {
	if _, ok := live.Settings[indexspec.RestoreMarkerSetting]; !ok {
		return nil
	}
	return run.osClient.PutSettings(ctx, run.name, map[string]any{indexspec.RestoreMarkerSetting: nil})
}

func orPending(phase string) string {
	if phase == "" {
		return v1alpha1.SnapshotPending
	}
	return phase
}

// mappingDiff compares the mapping the spec declares with a live index's.
func mappingDiff(run *indexRun, live *opensearch.Index) (indexspec.MappingDiff, error) {
	props, err := indexspec.Properties(&run.vi.Spec)
	if err != nil {
		return indexspec.MappingDiff{}, err
	}
	return indexspec.CompareMapping(props, live.Properties)
}

// adopt takes over an index created outside the operator, only when it already has every
// declared field with the declared mapping and the declared shard count.
func (r *VectorIndexReconciler) adopt(ctx context.Context, run *indexRun, live *opensearch.Index) error {
	diff, err := mappingDiff(run, live)
	if err != nil {
		return err
	}
	problems := diff.Conflicts
	for name := range diff.Missing {
		problems = append(problems, name+": declared, index lacks it")
	}
	if want := fmt.Sprint(run.vi.Spec.Shards); live.Settings["index.number_of_shards"] != want {
		problems = append(problems, fmt.Sprintf("shards: declared %s, index has %s", want, live.Settings["index.number_of_shards"]))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		msg := fmt.Sprintf("existing index %s does not match the spec and was left untouched: %s", run.name, strings.Join(problems, "; "))
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonConflict, "Adopt", "%s", msg)
		return &conflictError{msg: msg}
	}
	if err := run.osClient.PutMeta(ctx, run.name, indexspec.MetaOf(run.owner)); err != nil {
		return err
	}
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonAdopted, "Adopt", "adopted existing index %s", run.name)
	return nil
}

func (r *VectorIndexReconciler) convergeSettings(ctx context.Context, run *indexRun) error {
	diff := indexspec.SettingsDiff(indexspec.DynamicSettings(&run.vi.Spec, run.tunedSlices), run.live.Settings)
	if run.benchmarking {
		// A BenchmarkRun holds the settings it changes (slices cell by cell, refresh while it
		// loads); it puts them back when it ends.
		for _, k := range benchrun.HeldSettings {
			delete(diff, k)
		}
	}
	run.vi.Status.FixedSettings = nil
	if indexspec.Storage(run.live.Settings) == v1alpha1.StorageRemoteSnapshot {
		diff, run.vi.Status.FixedSettings = indexspec.SplitRemoteSnapshot(diff)
	}
	if len(diff) == 0 {
		return nil
	}
	if err := run.osClient.PutSettings(ctx, run.name, diff); err != nil {
		return err
	}
	keys := make([]string, 0, len(diff))
	for k, v := range diff {
		keys = append(keys, fmt.Sprintf("%s=%v", k, v))
		run.live.Settings[k] = fmt.Sprint(v)
	}
	sort.Strings(keys)
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonSettingsUpdated, "Update", "index %s: %s", run.name, strings.Join(keys, ", "))
	return nil
}

func (r *VectorIndexReconciler) addFields(ctx context.Context, run *indexRun) error {
	if run.vi.Spec.IsRemoteSnapshot() {
		return nil // read-only; admission keeps its fields as restored (takeRestored checked them)
	}
	diff, err := mappingDiff(run, run.live)
	if err != nil {
		return err
	}
	if len(diff.Conflicts) > 0 && !run.rebuilding {
		return &conflictError{msg: fmt.Sprintf("index %s mapping differs from the spec: %s", run.name, strings.Join(diff.Conflicts, "; "))}
	}
	run.vi.Status.FixedSettings = append(run.vi.Status.FixedSettings, diff.Unapplied...)
	if len(diff.Missing) == 0 {
		return nil
	}
	var added []v1alpha1.VectorField
	for _, f := range run.vi.Spec.Fields {
		if _, missing := diff.Missing[f.Name]; missing {
			added = append(added, f)
		}
	}
	if err := r.modelsReady(ctx, run, added); err != nil {
		return err
	}
	if err := run.osClient.PutMapping(ctx, run.name, diff.Missing); err != nil {
		return err
	}
	names := make([]string, 0, len(diff.Missing))
	for name := range diff.Missing {
		names = append(names, name)
	}
	sort.Strings(names)
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonFieldsAdded, "Update", "index %s: added fields %s", run.name, strings.Join(names, ", "))
	return nil
}

// sliceColumn is status.slices: the applied concurrent search mode and slice count in the
// benchmark's terms, so the Slices column is never empty while a setting applies (mode
// none and Lucene's default slicing both have no max_slice_count).
func sliceColumn(mode string, maxSliceCount int32) string {
	if mode == "none" {
		return indexspec.SlicesOff.Short()
	}
	label := indexspec.Slices(maxSliceCount).Short()
	if maxSliceCount == 1 {
		label = "1"
	}
	if mode == "auto" || mode == "" {
		return label + " (auto)"
	}
	return label
}

func (r *VectorIndexReconciler) observe(ctx context.Context, run *indexRun) error {
	stats, err := run.indexStats(ctx)
	if err != nil {
		return err
	}
	st := &run.vi.Status
	st.Health, st.DocsCount, st.Segments, st.StoreSizeBytes = stats.Health, stats.DocsCount, stats.Segments, stats.StoreSizeBytes
	st.ConcurrentSearchMode = run.live.Settings[indexspec.SettingConcurrentMode]
	st.Storage = indexspec.Storage(run.live.Settings)
	if err := observeRemoteStore(ctx, run); err != nil {
		return err
	}
	// Unset reads as 0, OpenSearch's default.
	st.MaxSliceCount = 0
	if v, err := strconv.ParseInt(run.live.Settings[indexspec.SettingMaxSliceCount], 10, 32); err == nil {
		st.MaxSliceCount = int32(v)
	}
	st.Slices = sliceColumn(st.ConcurrentSearchMode, st.MaxSliceCount)
	source := "spec"
	if run.tunedSlices != nil {
		source = "autotune"
	}
	metrics.SetSliceCount(run.vi.Namespace, run.vi.Name, source, float64(indexspec.SlicesOf(run.live.Settings)))
	// An index is settled once every primary shard is started (a restoring index reports
	// yellow before any is).
	if active, want := stats.ActivePrimaries, int64(run.vi.Spec.Shards); active < want {
		run.progressing = fmt.Sprintf("index %s: %d of %d primary shards started", run.name, active, want)
	} else {
		run.progressing = ""
	}
	return nil
}

// observeRemoteStore reads a remote-backed index's upload lag into status; other indexes
// have none.
func observeRemoteStore(ctx context.Context, run *indexRun) error {
	st := &run.vi.Status
	if st.Storage != v1alpha1.StorageRemoteStore {
		st.RemoteStore = nil
		return nil
	}
	stats, err := run.osClient.RemoteStoreStats(ctx, run.live.Name)
	if err != nil {
		return err
	}
	var last *metav1.Time
	if st.RemoteStore != nil {
		last = st.RemoteStore.LastRestore
	}
	st.RemoteStore = &v1alpha1.IndexRemoteStoreStatus{RefreshLagMillis: stats.RefreshLagMillis, BytesLag: stats.BytesLag, FailedUploads: stats.FailedUploads, LastRestore: last}
	return nil
}

// recoverFromRemoteStore gives a remote-backed index its lost primaries back: once it has
// been red past the grace (a node that left may come back with its copies), the unassigned
// primaries are restored from the remote store, which holds every acknowledged write. Only
// unassigned primaries are restored; nothing is deleted.
func (r *VectorIndexReconciler) recoverFromRemoteStore(ctx context.Context, run *indexRun) error {
	st := &run.vi.Status
	red := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	if st.Storage != v1alpha1.StorageRemoteStore || st.Health != "red" || red == nil || red.Status != metav1.ConditionTrue ||
		red.Reason != v1alpha1.ReasonIndexHealthRed || time.Since(red.LastTransitionTime.Time) < r.Options.IndexRedGrace {
		return nil
	}
	lost, err := run.unassignedPrimaries(ctx)
	if err != nil {
		return err
	}
	if len(lost) == 0 {
		return nil // recovering already
	}
	if err := run.osClient.RestoreFromRemoteStore(ctx, run.live.Name); err != nil {
		return err
	}
	st.RemoteStore.LastRestore = ptr.To(metav1.Now())
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonRestoredFromRemoteStore, "Recover",
		"index %s: restoring lost primaries of shards %s from the remote store", run.name, strings.Join(lost, ", "))
	return nil
}

// explainRed says why a red index's primaries are not assigned once it is red past the
// grace: a node gone, a full disk, an allocation filter and a restore that failed for good
// (a searchable snapshot whose files do not fit the file cache) each need someone else,
// and "red" alone names none of them. The allocation explain API answers for the first
// unassigned primary that cannot be placed; one that allocation may still place (a restore
// or recovery in flight) leaves the message as it is.
func (r *VectorIndexReconciler) explainRed(ctx context.Context, run *indexRun) error {
	if !run.redPastGrace(r.Options.IndexRedGrace) {
		return nil
	}
	lost, err := run.unassignedPrimaries(ctx)
	if err != nil {
		return err
	}
	for _, shard := range lost {
		number, err := strconv.Atoi(shard)
		if err != nil {
			return fmt.Errorf("shard %q of index %s: %w", shard, run.live.Name, err)
		}
		why, err := run.osClient.UnplaceableShard(ctx, run.live.Name, number, true)
		if err != nil {
			// Red is the finding; an explanation that failed stays beside it, not over it.
			run.redCause = fmt.Sprintf("why primary shard %s is unassigned could not be read: %v", shard, err)
			return nil
		}
		if why != "" {
			run.redCause = fmt.Sprintf("primary shard %s cannot be assigned: %s", shard, why)
			return nil
		}
	}
	return nil
}

// redPastGrace says the index is red for longer than a new index's primaries take to
// start: Degraded IndexRed, and worth explaining.
func (run *indexRun) redPastGrace(grace time.Duration) bool {
	return run.vi.Status.Health == "red" && !run.young(grace)
}

// unassignedPrimaries are the index's primary shards no node holds, read once per reconcile.
func (run *indexRun) unassignedPrimaries(ctx context.Context) ([]string, error) {
	if run.lostPrimaries == nil {
		shards, err := run.osClient.Shards(ctx)
		if err != nil {
			return nil, err
		}
		lost := []string{}
		for _, sh := range shards {
			if sh.Index == run.live.Name && sh.PriRep == "p" && sh.State == "UNASSIGNED" {
				lost = append(lost, sh.Shard)
			}
		}
		run.lostPrimaries = &lost
	}
	return *run.lostPrimaries, nil
}

// indexStats reads the index's figures once per reconcile.
func (run *indexRun) indexStats(ctx context.Context) (opensearch.IndexStats, error) {
	if run.stats == nil {
		s, err := run.osClient.Stats(ctx, run.name)
		if err != nil {
			return s, err
		}
		run.stats = &s
	}
	return *run.stats, nil
}

// finalize applies the deletion policy, then lets the object go.
func (r *VectorIndexReconciler) finalize(ctx context.Context, vi *v1alpha1.VectorIndex) (ctrl.Result, error) {
	r.lastReads.Forget(vi.UID)
	run := newIndexRun(vi)
	if v1alpha1.IsPaused(vi.Annotations) {
		// The way out of a deletion that can never finish (cluster or repository gone for
		// good): a paused object goes without any call to OpenSearch, and its index stays.
		r.Recorder.Eventf(vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonIndexRetained, "Delete", "paused: index %s left in place untouched, deletionPolicy %s not applied", run.name, vi.Spec.DeletionPolicy)
	} else if err := r.applyDeletionPolicy(ctx, run); err != nil {
		f := classify(err)
		conditions.Set(&vi.Status.Conditions, vi.Generation, conditions.Degraded, f.reason, "deleting: "+f.message)
		if uerr := r.Status().Update(ctx, vi); uerr != nil {
			return ctrl.Result{}, uerr
		}
		return ctrl.Result{}, err
	}
	metrics.ForgetIndex(vi.Namespace, vi.Name)
	return ctrl.Result{}, nil
}

func (r *VectorIndexReconciler) applyDeletionPolicy(ctx context.Context, run *indexRun) error {
	err := r.resolveCluster(ctx, run)
	var ce *connect.Error
	if errors.As(err, &ce) && ce.Reason == v1alpha1.ReasonClusterNotFound {
		// The cluster object is gone (often: its namespace is being deleted); nothing can
		// reach the index, so it is left where it is rather than blocking deletion forever.
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonIndexRetained, "Delete", "SearchCluster %s is gone; index %s left in place", run.vi.Spec.ClusterRef.Name, run.name)
		return nil
	}
	if err != nil {
		return err
	}
	live, err := run.osClient.GetIndex(ctx, run.name)
	if opensearch.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !run.owns(live) {
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonIndexRetained, "Delete", "index %s is not managed by this object; left in place", run.name)
		return nil
	}
	// A rebuild under way stops first (its copy would otherwise recreate a deleted target,
	// and a Retained serving index must take writes again); then the indexes of rebuilds
	// (the one kept for a rollback, a target that never served) follow the policy: the
	// serving index goes last.
	if err := r.stopRebuild(ctx, run); err != nil {
		return err
	}
	for _, other := range rebuildIndexes(run.vi, live.Name) {
		if err := r.applyPolicyTo(ctx, run, other, "VectorIndex deleted"); err != nil {
			return err
		}
	}
	switch run.vi.Spec.DeletionPolicy {
	case v1alpha1.DeletionPolicySnapshot:
		if err := r.finalSnapshot(ctx, run); err != nil {
			return err
		}
		fallthrough
	case v1alpha1.DeletionPolicyDelete:
		if err := run.osClient.DeleteIndex(ctx, live.Name); err != nil {
			return err
		}
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonIndexDeleted, "Delete", "deleted index %s (deletionPolicy %s)", live.Name, run.vi.Spec.DeletionPolicy)
		// The snapshot of deletionPolicy Snapshot needs its models to be restored.
		if run.vi.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete {
			return r.deleteTrainedModels(ctx, run)
		}
		return nil
	}
	// Retain: release ownership so another VectorIndex can adopt the index later (a
	// searchable snapshot never carried it).
	if !run.vi.Spec.IsRemoteSnapshot() {
		if err := run.osClient.PutMeta(ctx, live.Name, map[string]any{}); err != nil {
			return err
		}
	}
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonIndexRetained, "Delete", "index %s retained (deletionPolicy Retain)", run.name)
	return nil
}

// finalSnapshot takes the snapshot deletionPolicy Snapshot asks for, and returns nil only
// once it succeeded; until then the index stays and the condition says why.
func (r *VectorIndexReconciler) finalSnapshot(ctx context.Context, run *indexRun) error {
	repo := run.vi.Spec.SnapshotRepository
	name := fmt.Sprintf("%s-final-%s", run.name, shortUID(run.vi.UID))
	info, err := run.osClient.GetSnapshot(ctx, repo, name)
	switch {
	case opensearch.IsNotFound(err):
		metadata := map[string]any{"vectorpilot.io/final-snapshot-of": run.owner.String()}
		if err := run.osClient.CreateSnapshot(ctx, repo, name, []string{run.name}, metadata); err != nil {
			return &reasonError{reason: v1alpha1.ReasonFinalSnapshotFailed, message: fmt.Sprintf("starting final snapshot %s/%s: %v; the index is kept", repo, name, err), transient: true}
		}
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonFinalSnapshotStarted, "Delete", "final snapshot %s/%s of index %s", repo, name, run.name)
		return &reasonError{reason: v1alpha1.ReasonFinalSnapshotInProgress, message: "final snapshot " + repo + "/" + name + " started; the index is deleted once it succeeds", transient: true}
	case err != nil:
		return err
	}
	switch info.State {
	case "SUCCESS":
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonFinalSnapshotSucceeded, "Delete", "final snapshot %s/%s holds index %s", repo, name, run.name)
		return nil
	case "FAILED", "PARTIAL":
		// Drop the failed attempt so the next try starts afresh; nothing is deleted.
		_ = run.osClient.DeleteSnapshot(ctx, repo, name)
		msg := fmt.Sprintf("final snapshot %s/%s ended %s (%s); the index is kept and the snapshot retried", repo, name, info.State, strings.Join(info.Failures, "; "))
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonFinalSnapshotFailed, "Delete", "%s", msg)
		return &reasonError{reason: v1alpha1.ReasonFinalSnapshotFailed, message: msg, transient: true}
	default:
		return &reasonError{reason: v1alpha1.ReasonFinalSnapshotInProgress, message: "final snapshot " + repo + "/" + name + " in progress", transient: true}
	}
}

// SetupWithManager registers the reconciler; a change to a SearchCluster (it became
// reachable, its endpoint moved) wakes the VectorIndexes that name it.
func (r *VectorIndexReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.VectorIndex{}, clusterRefField, func(o client.Object) []string {
		return []string{o.(*v1alpha1.VectorIndex).Spec.ClusterRef.Name}
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.BenchmarkRun{}, indexRefField, func(o client.Object) []string {
		return []string{o.(*v1alpha1.BenchmarkRun).Spec.IndexRef.Name}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		// The operator's own status writes must not wake the index again: only spec,
		// labels, annotations and deletion (which bumps the generation) do.
		For(&v1alpha1.VectorIndex{}, builder.WithPredicates(ownChanges)).
		Watches(&v1alpha1.SearchCluster{}, handler.EnqueueRequestsFromMapFunc(r.indexesOfCluster), builder.WithPredicates(clusterChanged)).
		// Runs starting and ending change who sets the slices and what the tuner reads.
		Watches(&v1alpha1.BenchmarkRun{}, handler.EnqueueRequestsFromMapFunc(indexOfRun), builder.WithPredicates(runPhaseChanged)).
		WithOptions(controller.Options{RateLimiter: rateLimiter(r.Options.MaxRetryDelay), MaxConcurrentReconciles: r.Options.IndexWorkers}).
		Named("vectorindex").
		Complete(r)
}

// ownChanges passes the changes of an object that are the user's — spec (generation),
// labels, annotations, deletion (which bumps the generation) — and not the operator's own
// status writes.
var ownChanges = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// clusterChanged passes SearchCluster updates that matter to its indexes: a new spec
// (endpoint, credentials) or a change of readiness — not every health poll.
var clusterChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, okBefore := e.ObjectOld.(*v1alpha1.SearchCluster)
		after, okAfter := e.ObjectNew.(*v1alpha1.SearchCluster)
		if !okBefore || !okAfter {
			return true
		}
		return before.Generation != after.Generation || conditions.IsReady(before.Status.Conditions) != conditions.IsReady(after.Status.Conditions)
	},
}

// runPhaseChanged passes BenchmarkRuns that start, finish or go away: a succeeded run
// brings the tuner a new table, and a run that ends hands the slice settings back.
var runPhaseChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, okBefore := e.ObjectOld.(*v1alpha1.BenchmarkRun)
		after, okAfter := e.ObjectNew.(*v1alpha1.BenchmarkRun)
		return okBefore && okAfter && before.Status.Phase != after.Status.Phase
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// benchmarking says a BenchmarkRun is measuring the index now.
func (r *VectorIndexReconciler) benchmarking(ctx context.Context, vi *v1alpha1.VectorIndex) bool {
	var runs v1alpha1.BenchmarkRunList
	if err := r.List(ctx, &runs, client.InNamespace(vi.Namespace), client.MatchingFields{indexRefField: vi.Name}); err != nil {
		return false
	}
	for _, run := range runs.Items {
		if run.Status.Phase == v1alpha1.BenchmarkRunning {
			return true
		}
	}
	return false
}

func indexOfRun(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.(*v1alpha1.BenchmarkRun).Spec.IndexRef.Name}}}
}

func (r *VectorIndexReconciler) indexesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.VectorIndexList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{clusterRefField: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing VectorIndexes of a SearchCluster")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, vi := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: vi.Namespace, Name: vi.Name}})
	}
	return reqs
}
