package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deletion policies: what happens to the OpenSearch index when its VectorIndex is deleted.
const (
	DeletionPolicyRetain = "Retain"
	DeletionPolicyDelete = "Delete"
	// DeletionPolicySnapshot takes a final snapshot and deletes the index only once it
	// succeeded.
	DeletionPolicySnapshot = "Snapshot"
)

// VectorIndexSpec declares one k-NN index. Index-time properties (name, shards, each field's
// dimension, data type, space, engine, method and its build parameters) are immutable and
// guarded here, at admission; the rest converges on the live index. With
// spec.rebuild.strategy BlueGreen, shards and the fields' build parameters (engine, space,
// mode, compression, m, efConstruction, a faiss efSearch) may change: the operator builds a
// new index and moves the index's alias to it once it passes spec.rebuild.gate.
// +kubebuilder:validation:XValidation:rule="has(self.indexName) == has(oldSelf.indexName) && (!has(self.indexName) || self.indexName == oldSelf.indexName)",message="spec.indexName is immutable",fieldPath=".indexName"
// +kubebuilder:validation:XValidation:rule="self.fields.all(f, !has(f.method.parameters) || !has(f.method.parameters.efSearch) || self.fields.all(g, !has(g.method.parameters) || !has(g.method.parameters.efSearch) || g.method.parameters.efSearch == f.method.parameters.efSearch))",message="spec.fields[*].method.parameters.efSearch must be equal on every field: OpenSearch applies ef_search to the whole index",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="!has(self.extraMappings) || self.fields.all(f, !(f.name in self.extraMappings))",message="spec.extraMappings must not define a field that spec.fields declares",fieldPath=".extraMappings"
// +kubebuilder:validation:XValidation:rule="!has(self.deletionPolicy) || self.deletionPolicy != 'Snapshot' || has(self.snapshotRepository)",message="spec.snapshotRepository is required when spec.deletionPolicy is Snapshot",fieldPath=".snapshotRepository"
// +kubebuilder:validation:XValidation:rule="(has(self.restoreFrom) && has(self.restoreFrom.storage) && self.restoreFrom.storage == 'RemoteSnapshot') == (has(oldSelf.restoreFrom) && has(oldSelf.restoreFrom.storage) && oldSelf.restoreFrom.storage == 'RemoteSnapshot')",message="spec.restoreFrom.storage is immutable: a RemoteSnapshot index is served from its snapshot and never becomes a local index, nor a local one a RemoteSnapshot (restore with a new VectorIndex)",fieldPath=".restoreFrom"
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.restoreFrom) && has(oldSelf.restoreFrom.storage) && oldSelf.restoreFrom.storage == 'RemoteSnapshot') || (has(self.restoreFrom) && self.restoreFrom == oldSelf.restoreFrom)",message="spec.restoreFrom of a RemoteSnapshot index is immutable: the index is that snapshot",fieldPath=".restoreFrom"
// +kubebuilder:validation:XValidation:rule="!(has(self.restoreFrom) && has(self.restoreFrom.storage) && self.restoreFrom.storage == 'RemoteSnapshot') || (self.fields == oldSelf.fields && has(self.extraMappings) == has(oldSelf.extraMappings) && (!has(self.extraMappings) || self.extraMappings == oldSelf.extraMappings))",message="spec.fields and spec.extraMappings of a RemoteSnapshot index are immutable: a searchable snapshot is read-only",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="!(has(self.restoreFrom) && has(self.restoreFrom.storage) && self.restoreFrom.storage == 'RemoteSnapshot') || !has(self.tuning) || self.tuning.mode != 'Auto'",message="spec.tuning.mode Auto needs a writable index; a RemoteSnapshot index refuses slice settings",fieldPath=".tuning"
// +kubebuilder:validation:XValidation:rule="!(has(self.restoreFrom) && has(self.restoreFrom.storage) && self.restoreFrom.storage == 'RemoteSnapshot') || !has(self.deletionPolicy) || self.deletionPolicy != 'Snapshot'",message="spec.deletionPolicy Snapshot is refused for a RemoteSnapshot index: its data already is a snapshot (use Delete or Retain)",fieldPath=".deletionPolicy"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || f.engine == o.engine))",message="spec.fields[*].engine is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || f.spaceType == o.spaceType))",message="spec.fields[*].spaceType is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || f.mode == o.mode))",message="spec.fields[*].mode is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || f.compressionLevel == o.compressionLevel))",message="spec.fields[*].compressionLevel is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || (has(f.method.parameters) && has(f.method.parameters.m) ? f.method.parameters.m : 0) == (has(o.method.parameters) && has(o.method.parameters.m) ? o.method.parameters.m : 0)))",message="spec.fields[*].method.parameters.m is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || (has(f.method.parameters) && has(f.method.parameters.efConstruction) ? f.method.parameters.efConstruction : 0) == (has(o.method.parameters) && has(o.method.parameters.efConstruction) ? o.method.parameters.efConstruction : 0)))",message="spec.fields[*].method.parameters.efConstruction is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.fields.all(f, oldSelf.fields.all(o, o.name != f.name || f.engine != 'faiss' || (has(f.method.parameters) && has(f.method.parameters.efSearch) ? f.method.parameters.efSearch : 0) == (has(o.method.parameters) && has(o.method.parameters.efSearch) ? o.method.parameters.efSearch : 0)))",message="spec.fields[*].method.parameters.efSearch of a faiss field is immutable (faiss searches with the ef_search of the mapping its index was created with and OpenSearch refuses a mapping change) unless spec.rebuild.strategy is BlueGreen",fieldPath=".fields"
// +kubebuilder:validation:XValidation:rule="(has(self.rebuild) && self.rebuild.strategy == 'BlueGreen') || self.shards == oldSelf.shards",message="spec.shards is immutable unless spec.rebuild.strategy is BlueGreen (a change is then a gated rebuild into a new index)",fieldPath=".shards"
// +kubebuilder:validation:XValidation:rule="!has(self.recall) || !has(self.recall.field) || self.fields.exists(f, f.name == self.recall.field)",message="spec.recall.field must name one of spec.fields",fieldPath=".recall.field"
type VectorIndexSpec struct {
	// clusterRef names the SearchCluster, in the same namespace, that holds the index.
	// Immutable: moving an index between clusters is a snapshot and a restore.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterRef is immutable: an index lives in one cluster; restore it into another with a new VectorIndex"
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// indexName is the OpenSearch index name; metadata.name when empty. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9._-]*$`
	IndexName string `json:"indexName,omitempty"`

	// shards is the number of primary shards. Immutable unless spec.rebuild.strategy is
	// BlueGreen.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Shards int32 `json:"shards,omitempty"`

	// replicas is the number of replicas of each shard.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	Replicas int32 `json:"replicas"`

	// refreshInterval is index.refresh_interval: a duration such as 1s or 500ms, or -1 to
	// turn periodic refresh off.
	// +optional
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Pattern=`^(-1|[0-9]+(ms|s|m|h))$`
	// +kubebuilder:validation:MaxLength=16
	RefreshInterval string `json:"refreshInterval,omitempty"`

	// fields are the knn_vector fields of the index. Fields can be added, never removed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="oldSelf.all(o, self.exists(n, n.name == o.name))",message="spec.fields: vector fields cannot be removed"
	Fields []VectorField `json:"fields"`

	// extraMappings are the index's other (non-vector) fields, as OpenSearch mapping
	// properties, e.g. {"title": {"type": "text"}}.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	ExtraMappings map[string]MappingProperty `json:"extraMappings,omitempty"`

	// additionalSettings are further index settings (flat keys such as index.codec) applied
	// when the index is created. Immutable; settings with a field of their own are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.startsWith('index.') && size(k) <= 256)",message="spec.additionalSettings keys must be flat index settings starting with index."
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['index.number_of_shards', 'index.number_of_replicas', 'index.refresh_interval', 'index.knn', 'index.knn.algo_param.ef_search', 'index.search.concurrent_segment_search.mode', 'index.search.concurrent.max_slice_count']))",message="spec.additionalSettings must not set a setting that has its own field (shards, replicas, refreshInterval, efSearch, search)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('index.blocks.') && !k.startsWith('index.routing.allocation.') && !k.startsWith('index.routing.rebalance.') && !(k in ['index.read_only', 'index.read_only_allow_delete', 'index.frozen', 'index.store.type', 'index.auto_expand_replicas']))",message="spec.additionalSettings must not block the index (index.blocks.*, read_only) or pin or stop its shard allocation (index.routing.allocation.*, index.routing.rebalance.*, auto_expand_replicas) or change its store type"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.additionalSettings is immutable"
	AdditionalSettings map[string]string `json:"additionalSettings,omitempty"`

	// search holds query-time settings.
	// +optional
	// +kubebuilder:default={}
	Search SearchSettings `json:"search,omitempty"`

	// restoreFrom creates the index by restoring it from a snapshot instead of empty; it is
	// managed as usual afterwards. Used only when the index does not exist yet.
	// +optional
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`

	// tuning lets the operator choose the slice count from benchmark results and the live
	// load; in Auto it overrides search.concurrentSegmentSearch.
	// +optional
	Tuning *TuningSpec `json:"tuning,omitempty"`

	// recall is a live recall objective: the operator measures the index's recall@k on a
	// schedule and reports it against a target (status.recall, the RecallBelowTarget
	// condition, the vectorpilot_index_recall metric).
	// +optional
	Recall *RecallSpec `json:"recall,omitempty"`

	// rebuild decides what a change to a build parameter does: refused at admission
	// (strategy Refuse, the default) or carried out as a gated blue/green rebuild.
	// +optional
	Rebuild *RebuildSpec `json:"rebuild,omitempty"`

	// deletionPolicy decides what happens to the OpenSearch index when this object is
	// deleted: Retain leaves it, Delete removes it, Snapshot takes a final snapshot to
	// snapshotRepository and removes the index only once that snapshot succeeded.
	// +optional
	// +kubebuilder:default=Retain
	// +kubebuilder:validation:Enum=Retain;Delete;Snapshot
	DeletionPolicy string `json:"deletionPolicy,omitempty"`

	// snapshotRepository is the registered repository that deletionPolicy Snapshot writes
	// the final snapshot to.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SnapshotRepository string `json:"snapshotRepository,omitempty"`
}

// Rebuild strategies (spec.rebuild.strategy).
const (
	RebuildRefuse    = "Refuse"
	RebuildBlueGreen = "BlueGreen"
)

// What happens to a rebuilt index that failed its gate (spec.rebuild.onGateFailure).
const (
	GateFailureKeep   = "Keep"
	GateFailureDelete = "Delete"
)

// RebuildSpec is how a change to a build parameter is carried out. Under BlueGreen the
// operator creates a new index with the new mapping, copies the documents into it with
// OpenSearch's _reindex task (then the writes made meanwhile, by sequence number), measures
// it against the serving index on the same sampled queries, and only if it passes the gate
// moves the alias clients query (the index's name) to it in one _aliases request, under a
// write block of the serving index that lasts the final catch-up (status.rebuild says how
// long). The index it replaced is kept, write-blocked, for retainPrevious: reverting the spec
// within that time swaps back to it after copying the writes made since.
type RebuildSpec struct {
	// strategy: Refuse refuses a change to a build parameter at admission; BlueGreen
	// rebuilds the index behind its alias.
	// +optional
	// +kubebuilder:default=Refuse
	// +kubebuilder:validation:Enum=Refuse;BlueGreen
	Strategy string `json:"strategy,omitempty"`
	// gate the new index must pass before clients are moved to it.
	// +optional
	// +kubebuilder:default={}
	Gate RebuildGate `json:"gate,omitempty"`
	// maxDocsPerSecond throttles the copy (the _reindex task's requests_per_second), so live
	// queries and writes keep the nodes; unthrottled when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxDocsPerSecond *int32 `json:"maxDocsPerSecond,omitempty"`
	// retainPrevious is how long the replaced index is kept for a rollback after a swap;
	// then spec.deletionPolicy applies to it (Delete and Snapshot delete it, Snapshot after
	// a snapshot; Retain leaves it in OpenSearch, no longer managed).
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.rebuild.retainPrevious must not be negative"
	RetainPrevious *metav1.Duration `json:"retainPrevious,omitempty"`
	// onGateFailure: Keep leaves a new index that failed its gate in place for inspection
	// (until the next change of the spec); Delete drops it at once.
	// +optional
	// +kubebuilder:default=Keep
	// +kubebuilder:validation:Enum=Keep;Delete
	OnGateFailure string `json:"onGateFailure,omitempty"`
}

// RebuildGate is what a rebuilt index must show, on the same sampled queries, before
// clients are moved to it: every vector field's recall@k at least minRecall, and its p90
// search latency at most maxLatencyRegressionPercent above the serving index's.
type RebuildGate struct {
	// minRecall is the least recall@k of the new index, a decimal from 0 to 1.
	// +optional
	// +kubebuilder:default="0.9"
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	// +kubebuilder:validation:MaxLength=6
	MinRecall string `json:"minRecall,omitempty"`
	// maxLatencyRegressionPercent bounds the new index's p90 against the serving index's.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MaxLatencyRegressionPercent int32 `json:"maxLatencyRegressionPercent,omitempty"`
	// k neighbours compared per query.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	K int32 `json:"k,omitempty"`
	// sampleSize is the number of queries per field.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=1000
	SampleSize int32 `json:"sampleSize,omitempty"`
}

// Rebuild phases (status.rebuild.phase).
const (
	RebuildCopying    = "Copying"
	RebuildGating     = "Gating"
	RebuildSwapping   = "Swapping"
	RebuildSucceeded  = "Succeeded"
	RebuildGateFailed = "GateFailed"
	RebuildFailed     = "Failed"
)

// RebuildStatus is the last (or current) blue/green rebuild.
type RebuildStatus struct {
	// phase: Copying (documents, then the writes made meanwhile), Gating, Swapping (the
	// serving index is write-blocked for the final catch-up and the alias swap), Succeeded,
	// GateFailed or Failed.
	Phase string `json:"phase"`
	// source is the index being replaced, target the one being built.
	Source string `json:"source"`
	Target string `json:"target"`
	// observedGeneration is the spec generation the target was built for.
	ObservedGeneration int64 `json:"observedGeneration"`
	// reusedPrevious: the target is the index a former rebuild replaced (a rollback), so only
	// the writes made since are copied.
	// +optional
	ReusedPrevious bool        `json:"reusedPrevious,omitempty"`
	StartedAt      metav1.Time `json:"startedAt"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// copiedUpTo is, per shard of the source, the sequence number up to which every write
	// of the shard is in the target; absent before the first pass completed.
	// +optional
	CopiedUpTo []int64 `json:"copiedUpTo,omitempty"`
	// passUpTo is what the running pass copies up to, per shard, and tasks its _reindex
	// tasks, one per shard.
	// +optional
	PassUpTo []int64 `json:"passUpTo,omitempty"`
	// +optional
	Tasks []string `json:"tasks,omitempty"`
	// passes run so far (the first copies everything, the next the writes made meanwhile).
	// +optional
	Passes int32 `json:"passes,omitempty"`
	// documentsCopied of documentsTotal in the running (or last) pass, its rate and the
	// time it is expected to end.
	// +optional
	DocumentsCopied int64 `json:"documentsCopied,omitempty"`
	// +optional
	DocumentsTotal int64 `json:"documentsTotal,omitempty"`
	// +optional
	DocumentsPerSecond string `json:"documentsPerSecond,omitempty"`
	// +optional
	ETA *metav1.Time `json:"eta,omitempty"`
	// gate is what the target measured against the source, per field.
	// +optional
	Gate []RebuildGateResult `json:"gate,omitempty"`
	// writeBlockedMillis is how long the source refused writes (the final catch-up, the
	// count check and the swap); swapMillis the _aliases request alone.
	// +optional
	WriteBlockedMillis *int64 `json:"writeBlockedMillis,omitempty"`
	// +optional
	SwapMillis *int64 `json:"swapMillis,omitempty"`
	// +optional
	BlockedAt *metav1.Time `json:"blockedAt,omitempty"`
	// message says what the rebuild waits for or why it ended as it did.
	// +optional
	Message string `json:"message,omitempty"`
}

// RebuildGateResult is one field's gate measurement: the same sampled queries on the
// serving index (source) and the rebuilt one (target).
type RebuildGateResult struct {
	Field string `json:"field"`
	// sample and k of the measurement.
	Sample int32 `json:"sample"`
	K      int32 `json:"k"`
	// recall@k of each index against its own exact neighbours, four decimals.
	SourceRecall string `json:"sourceRecall"`
	TargetRecall string `json:"targetRecall"`
	// p90 of each index's search latency, in milliseconds (as the client sees it).
	SourceP90Ms string `json:"sourceP90Ms"`
	TargetP90Ms string `json:"targetP90Ms"`
	// passed says the field met the gate; failures say how it did not.
	Passed bool `json:"passed"`
	// +optional
	Failures []string `json:"failures,omitempty"`
}

// PreviousIndexStatus is the index a rebuild replaced, kept for a rollback.
type PreviousIndexStatus struct {
	// name of the index, write-blocked since the swap.
	Name string `json:"name"`
	// swappedAt is when clients moved off it; retainUntil when spec.deletionPolicy applies.
	SwappedAt   metav1.Time `json:"swappedAt"`
	RetainUntil metav1.Time `json:"retainUntil"`
	// servingIndex is the index that replaced it, and servingSeqNos that index's sequence
	// numbers at the swap, per shard: the previous index holds every write up to them, so a
	// rollback copies only the writes after.
	ServingIndex  string  `json:"servingIndex"`
	ServingSeqNos []int64 `json:"servingSeqNos"`
}

// RecallSpec is a live recall objective. Every interval the operator draws sampleSize
// documents of the index at random and searches with each one's vector twice: as clients
// search the index (a knn query, the index's current settings) and exactly (the k-NN
// plugin's exact scoring of every document); recall@k is the share of the exact top k
// the approximate search found, the query's own document left out of both. Its searches
// are paced, carry the stats group "vectorpilot-recall" (so the tuner never counts them
// as load), and are skipped while the index is red or the nodes' CPU is above the tuning
// headroom.
type RecallSpec struct {
	// target is the least acceptable recall@k, a decimal from 0 to 1, e.g. "0.95".
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	// +kubebuilder:validation:MaxLength=6
	Target string `json:"target"`
	// k is the number of neighbours compared per query.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	K int32 `json:"k,omitempty"`
	// field is the vector field measured; the first of spec.fields when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Field string `json:"field,omitempty"`
	// sampleSize is the number of queries one measurement runs; each costs one approximate
	// and one exact search.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	SampleSize int32 `json:"sampleSize,omitempty"`
	// interval between two measurements; a spec change (e.g. efSearch) is measured at once.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="spec.recall.interval must be at least 1s"
	Interval *metav1.Duration `json:"interval,omitempty"`
	// queriesPerSecond caps the measurement's search rate, so live queries keep the nodes.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	QueriesPerSecond int32 `json:"queriesPerSecond,omitempty"`
}

// RecallStatus is the last live recall measurement.
type RecallStatus struct {
	// value is recall@k as last measured, four decimals; absent until a measurement ran.
	// +optional
	Value string `json:"value,omitempty"`
	// target and k as the measurement used them.
	Target string `json:"target"`
	K      int32  `json:"k"`
	// field measured.
	Field string `json:"field"`
	// sample is the number of queries the value is over.
	// +optional
	Sample int32 `json:"sample,omitempty"`
	// efSearch the approximate searches ran with: a faiss field's mapping ef_search, or
	// the index setting a lucene field reads, when set.
	// +optional
	EfSearch string `json:"efSearch,omitempty"`
	// measuredAt is when the value was measured; observedGeneration the spec it measured.
	// +optional
	MeasuredAt *metav1.Time `json:"measuredAt,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// cost of the last measurement.
	// +optional
	Cost *RecallCost `json:"cost,omitempty"`
	// skipped says why the last due measurement did not run, and when; empty when it ran.
	// +optional
	Skipped string `json:"skipped,omitempty"`
	// +optional
	SkippedAt *metav1.Time `json:"skippedAt,omitempty"`
}

// RecallCost is what one recall measurement cost the cluster.
type RecallCost struct {
	// searches sent (the sample draw, and per query one approximate and one exact search).
	Searches int32 `json:"searches"`
	// serverMillis is the searches' time in OpenSearch (their took, summed).
	ServerMillis int64 `json:"serverMillis"`
	// durationMillis is the measurement's wall time, pacing included.
	DurationMillis int64 `json:"durationMillis"`
	// cpuMillis is the nodes' OpenSearch CPU time from the end of the CPU probe before the
	// measurement to at least a second later or its end (OpenSearch refreshes the figure
	// each second), clients' searches included; absent when the stats could not be read.
	// +optional
	CPUMillis *int64 `json:"cpuMillis,omitempty"`
}

// ModelStatus is one field's trained model.
type ModelStatus struct {
	// field whose index refers to the model.
	Field string `json:"field"`
	// modelId of the model in OpenSearch.
	ModelID string `json:"modelId"`
	// state OpenSearch reports: training, created or failed.
	State string `json:"state"`
	// trainedByOperator says the operator trained it (and, with deletionPolicy Delete,
	// deletes it with the index); false for a model it found and uses.
	TrainedByOperator bool `json:"trainedByOperator"`
}

// MappingProperty is one OpenSearch mapping property (e.g. {"type": "keyword"}), kept as
// raw JSON. Typed as an object so admission rules can see which names are declared.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type MappingProperty struct {
	apiextensionsv1.JSON `json:",inline"`
}

// VectorField is one knn_vector field. The rules are the k-NN plugin's own, checked at
// admission so a bad combination never reaches OpenSearch; api/v1alpha1's
// TestAdmissionAgreesWithThePlugin holds them against a real node over every combination.
// +kubebuilder:validation:XValidation:rule="self.dataType != 'binary' || (self.spaceType == 'hamming' && self.engine in ['faiss', 'lucene'] && self.dimension % 8 == 0 && self.mode == 'in_memory' && self.compressionLevel == '1x')",message="dataType binary requires spaceType hamming, engine faiss or lucene, a dimension that is a multiple of 8, mode in_memory and compressionLevel 1x"
// +kubebuilder:validation:XValidation:rule="self.spaceType != 'hamming' || self.dataType == 'binary'",message="spaceType hamming requires dataType binary",fieldPath=".spaceType"
// +kubebuilder:validation:XValidation:rule="!(self.spaceType in ['l1', 'linf']) || self.engine == 'nmslib'",message="spaceType l1 and linf are engine nmslib's only: faiss and lucene refuse them (and OpenSearch 3.x creates no new nmslib index)",fieldPath=".spaceType"
// +kubebuilder:validation:XValidation:rule="self.method.name != 'ivf' || (has(self.training) && self.engine == 'faiss' && self.dataType == 'float' && self.mode == 'in_memory' && self.compressionLevel == '1x')",message="method ivf needs training (the sample its model is trained on), engine faiss, dataType float, mode in_memory and compressionLevel 1x",fieldPath=".method.name"
// +kubebuilder:validation:XValidation:rule="!has(self.training) || self.method.name == 'ivf'",message="training is for method ivf: HNSW needs no model",fieldPath=".training"
// +kubebuilder:validation:XValidation:rule="has(self.training) == has(oldSelf.training) && (!has(self.training) || self.training == oldSelf.training)",message="training is immutable: the index was created from its model",fieldPath=".training"
// +kubebuilder:validation:XValidation:rule="self.engine != 'nmslib' || (self.dataType == 'float' && self.method.name == 'hnsw')",message="engine nmslib requires dataType float and method hnsw",fieldPath=".engine"
// +kubebuilder:validation:XValidation:rule="!(self.engine == 'faiss' && self.dataType == 'byte' && self.spaceType == 'cosinesimil')",message="engine faiss does not support spaceType cosinesimil with dataType byte (cosine normalizes vectors, which only float allows): use l2 or innerproduct, or engine lucene",fieldPath=".spaceType"
// +kubebuilder:validation:XValidation:rule="self.mode != 'on_disk' || (self.dataType == 'float' && (self.engine == 'faiss' || (self.engine == 'lucene' && self.compressionLevel != '1x')))",message="mode on_disk requires dataType float and engine faiss, or engine lucene with compressionLevel 4x or 32x",fieldPath=".mode"
// +kubebuilder:validation:XValidation:rule="self.compressionLevel == '1x' || (self.dataType == 'float' && ((self.engine == 'faiss' && self.compressionLevel in ['2x', '8x', '16x', '32x']) || (self.engine == 'lucene' && self.compressionLevel in ['4x', '32x'])))",message="compressionLevel above 1x requires dataType float and is 2x, 8x, 16x or 32x on engine faiss, 4x or 32x on engine lucene",fieldPath=".compressionLevel"
type VectorField struct {
	// name of the field in the index mapping.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	Name string `json:"name"`

	// dimension is the number of components of each vector (bits, for binary). Immutable:
	// a new dimension needs new embeddings, not a rebuild.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16000
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="dimension is immutable"
	Dimension int32 `json:"dimension"`

	// dataType of each vector component. Immutable: the stored vectors are of this type.
	// +optional
	// +kubebuilder:default=float
	// +kubebuilder:validation:Enum=float;byte;binary
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="dataType is immutable"
	DataType string `json:"dataType,omitempty"`

	// spaceType is the distance function. Immutable unless spec.rebuild.strategy is BlueGreen.
	// +optional
	// +kubebuilder:default=l2
	// +kubebuilder:validation:Enum=l1;l2;linf;cosinesimil;innerproduct;hamming
	SpaceType string `json:"spaceType,omitempty"`

	// engine is the k-NN library that builds and searches the graph. Immutable unless
	// spec.rebuild.strategy is BlueGreen.
	// +optional
	// +kubebuilder:default=faiss
	// +kubebuilder:validation:Enum=faiss;lucene;nmslib
	Engine string `json:"engine,omitempty"`

	// method is the approximate nearest-neighbour algorithm and its parameters.
	// +optional
	// +kubebuilder:default={name: hnsw}
	Method VectorMethod `json:"method,omitempty"`

	// mode: in_memory keeps full-precision graphs in memory; on_disk keeps compressed ones
	// in memory and rescores from disk. Immutable unless spec.rebuild.strategy is BlueGreen.
	// +optional
	// +kubebuilder:default=in_memory
	// +kubebuilder:validation:Enum=in_memory;on_disk
	Mode string `json:"mode,omitempty"`

	// compressionLevel of the vectors held in memory. Immutable unless spec.rebuild.strategy
	// is BlueGreen.
	// +optional
	// +kubebuilder:default="1x"
	// +kubebuilder:validation:Enum="1x";"2x";"4x";"8x";"16x";"32x"
	CompressionLevel string `json:"compressionLevel,omitempty"`

	// training is where the model of a method ivf field is trained from: the operator trains
	// it with the k-NN training API on sample vectors before it creates the index, whose
	// field then refers to the model. Required with method ivf. Immutable.
	// +optional
	Training *FieldTraining `json:"training,omitempty"`
}

// FieldTraining is the model a field's IVF index is built with, and its sample.
type FieldTraining struct {
	// modelId names the model in OpenSearch. A model of that name the operator did not
	// train is used as it is when its dimension and space type match the field.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9_.-]*$`
	ModelID string `json:"modelId"`
	// index of the same cluster holding the sample vectors, at least as many as the
	// method's nlist (OpenSearch's default 4).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Index string `json:"index"`
	// field of that index holding them: a knn_vector field of the same dimension. The
	// field's own name when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Field string `json:"field,omitempty"`
	// maxVectors is the most sample vectors read; all of them when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxVectors *int32 `json:"maxVectors,omitempty"`
}

// SampleField is the sample index's field the model is trained on.
func (t FieldTraining) SampleField(field string) string {
	if t.Field != "" {
		return t.Field
	}
	return field
}

// VectorMethod is the ANN algorithm of a field. Build parameters (m, efConstruction, a
// faiss field's efSearch) change only under spec.rebuild.strategy BlueGreen, the method and
// an IVF field's nlist and nprobes (its model's) never; a lucene field's efSearch is a
// query-time setting and changes live.
// +kubebuilder:validation:XValidation:rule="self.name == oldSelf.name",message="method.name is immutable",fieldPath=".name"
// +kubebuilder:validation:XValidation:rule="(has(self.parameters) && has(self.parameters.nlist) ? self.parameters.nlist : 0) == (has(oldSelf.parameters) && has(oldSelf.parameters.nlist) ? oldSelf.parameters.nlist : 0)",message="method.parameters.nlist is immutable",fieldPath=".parameters"
// +kubebuilder:validation:XValidation:rule="(has(self.parameters) && has(self.parameters.nprobes) ? self.parameters.nprobes : 0) == (has(oldSelf.parameters) && has(oldSelf.parameters.nprobes) ? oldSelf.parameters.nprobes : 0)",message="method.parameters.nprobes is immutable",fieldPath=".parameters"
// +kubebuilder:validation:XValidation:rule="self.name != 'hnsw' || !has(self.parameters) || (!has(self.parameters.nlist) && !has(self.parameters.nprobes))",message="method hnsw takes parameters m, efConstruction and efSearch, not nlist or nprobes",fieldPath=".parameters"
// +kubebuilder:validation:XValidation:rule="self.name != 'ivf' || !has(self.parameters) || (!has(self.parameters.m) && !has(self.parameters.efConstruction) && !has(self.parameters.efSearch))",message="method ivf takes parameters nlist and nprobes, not m, efConstruction or efSearch",fieldPath=".parameters"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || !has(self.parameters.nlist) || !has(self.parameters.nprobes) || self.parameters.nprobes <= self.parameters.nlist",message="method.parameters.nprobes must not exceed nlist",fieldPath=".parameters.nprobes"
type VectorMethod struct {
	// name of the method.
	// +optional
	// +kubebuilder:default=hnsw
	// +kubebuilder:validation:Enum=hnsw;ivf
	Name string `json:"name,omitempty"`

	// parameters of the method; OpenSearch's defaults apply to those left out.
	// +optional
	Parameters *MethodParameters `json:"parameters,omitempty"`
}

// MethodParameters are the tuning knobs of HNSW (m, efConstruction, efSearch) or IVF
// (nlist, nprobes).
type MethodParameters struct {
	// m is the number of bidirectional links per HNSW node.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	M *int32 `json:"m,omitempty"`
	// efConstruction is the HNSW candidate list size while building.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=4096
	EfConstruction *int32 `json:"efConstruction,omitempty"`
	// efSearch is the HNSW candidate list size while searching. On lucene it is the index
	// setting index.knn.algo_param.ef_search and changes live; on faiss it is the field's
	// mapping parameter ef_search (faiss ignores the index setting), set at creation and
	// immutable.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10000
	EfSearch *int32 `json:"efSearch,omitempty"`
	// nlist is the number of IVF buckets.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	Nlist *int32 `json:"nlist,omitempty"`
	// nprobes is the number of IVF buckets searched per query.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	Nprobes *int32 `json:"nprobes,omitempty"`
}

// SearchSettings are the index's query-time settings.
type SearchSettings struct {
	// concurrentSegmentSearch splits each shard's segments into slices searched in parallel.
	// +optional
	// +kubebuilder:default={}
	ConcurrentSegmentSearch ConcurrentSegmentSearch `json:"concurrentSegmentSearch,omitempty"`
}

// ConcurrentSegmentSearch maps to index.search.concurrent_segment_search.mode and
// index.search.concurrent.max_slice_count.
type ConcurrentSegmentSearch struct {
	// mode: auto (OpenSearch decides; k-NN queries go concurrent), all, or none.
	// +optional
	// +kubebuilder:default=auto
	// +kubebuilder:validation:Enum=auto;all;none
	Mode string `json:"mode,omitempty"`
	// maxSliceCount is the most slices a shard's search is split into; 0 leaves it to
	// Lucene's own slicing.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	MaxSliceCount int32 `json:"maxSliceCount"`
}

// RestoreSource names a snapshot holding the index's data.
// +kubebuilder:validation:XValidation:rule="has(self.snapshotRef) != (has(self.repository) && has(self.snapshot))",message="restoreFrom takes either snapshotRef or repository with snapshot"
type RestoreSource struct {
	// snapshotRef names a VectorSnapshot in this namespace.
	// +optional
	SnapshotRef *LocalObjectReference `json:"snapshotRef,omitempty"`
	// repository and snapshot name a snapshot directly: one concrete name each, no
	// wildcards or lists.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9._-]*$`
	Repository string `json:"repository,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9._+-]*$`
	Snapshot string `json:"snapshot,omitempty"`
	// index is the one index to restore from the snapshot, by its concrete name (no
	// wildcards, lists or _all); this index's own name when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9._-]*$`
	Index string `json:"index,omitempty"`
	// storage: Local copies the snapshot's files onto the data nodes' disks, and the index
	// is managed as usual afterwards; RemoteSnapshot serves the index straight from the
	// repository (a searchable snapshot): its shards live on nodes with the warm role
	// (search in OpenSearch 2.x), which fetch what queries read into their file cache. A
	// RemoteSnapshot index is read-only: no documents, no mapping change, and of its
	// settings only replicas can change. Immutable.
	// +optional
	// +kubebuilder:default=Local
	// +kubebuilder:validation:Enum=Local;RemoteSnapshot
	Storage string `json:"storage,omitempty"`
}

// Where an index's data lives (spec.restoreFrom.storage, status.storage).
const (
	StorageLocal          = "Local"
	StorageRemoteSnapshot = "RemoteSnapshot"
	// StorageRemoteStore: a local index whose segments and translog are also written to
	// the cluster's remote store.
	StorageRemoteStore = "RemoteStore"
)

// IsRemoteSnapshot says the spec restores the index as a searchable snapshot.
func (s *VectorIndexSpec) IsRemoteSnapshot() bool {
	return s.RestoreFrom != nil && s.RestoreFrom.Storage == StorageRemoteSnapshot
}

// IndexRemoteStoreStatus is the remote store lag of an index, over its shard copies.
type IndexRemoteStoreStatus struct {
	// refreshLagMillis is the age of the oldest local refresh not uploaded yet.
	RefreshLagMillis int64 `json:"refreshLagMillis"`
	// bytesLag is the segment bytes refreshed locally and not uploaded yet.
	BytesLag int64 `json:"bytesLag"`
	// failedUploads counts failed segment and translog uploads since the shards started.
	FailedUploads int64 `json:"failedUploads"`
	// lastRestore is when the operator last restored lost primaries from the remote store.
	// +optional
	LastRestore *metav1.Time `json:"lastRestore,omitempty"`
}

// RestoreStatus is a restore the operator started.
type RestoreStatus struct {
	Repository string `json:"repository"`
	Snapshot   string `json:"snapshot"`
	// index is the index's name inside the snapshot.
	Index     string      `json:"index"`
	StartedAt metav1.Time `json:"startedAt"`
}

// Tuning modes.
const (
	TuningAuto = "Auto"
	TuningOff  = "Off"
)

// TuningSpec configures the slice-count autotuner.
type TuningSpec struct {
	// mode: Auto applies the tuner's choice; Off leaves the spec's settings.
	// +optional
	// +kubebuilder:default=Off
	// +kubebuilder:validation:Enum=Auto;Off
	Mode string `json:"mode,omitempty"`
	// cpuHeadroomPercent of node CPU to keep free: the tuner never picks a setting whose
	// predicted CPU exceeds 100 minus this.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=90
	CPUHeadroomPercent int32 `json:"cpuHeadroomPercent,omitempty"`
	// minGainPerCpuPercent is the least p90 cut, in percent, that one extra CPU point must
	// buy before a costlier setting is chosen (diminishing returns), e.g. "0.5".
	// +optional
	// +kubebuilder:default="1"
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=10
	MinGainPerCPUPercent string `json:"minGainPerCpuPercent,omitempty"`
	// hysteresisPercent: the applied setting is kept while a new choice predicts a p90 at
	// most this much lower.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	HysteresisPercent int32 `json:"hysteresisPercent,omitempty"`
	// sliceCandidates limits the settings the tuner may choose (1 = concurrent search off,
	// 0 = Lucene's default slicing, N = N slices); all measured ones when empty.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=1024
	SliceCandidates []int32 `json:"sliceCandidates,omitempty"`
	// benchmarkRef names benchmark results to tune from; without it the tuner reads the
	// index's latest succeeded BenchmarkRun.
	// +optional
	BenchmarkRef *BenchmarkReference `json:"benchmarkRef,omitempty"`
	// minDwell is the least time between two changes of the slice setting: the tuner
	// changes the index at most once per minDwell, whatever the load does.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.tuning.minDwell must not be negative"
	MinDwell *metav1.Duration `json:"minDwell,omitempty"`
	// cpuWindow is how long the nodes' live CPU must disagree with what the benchmark
	// table predicts for the applied setting (beyond cpuTolerancePercent) before the
	// table's CPU is corrected by the observed ratio and the setting chosen again.
	// +optional
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="spec.tuning.cpuWindow must be at least 1s"
	CPUWindow *metav1.Duration `json:"cpuWindow,omitempty"`
	// cpuTolerancePercent: live CPU within this much of the (corrected) prediction agrees
	// with the table.
	// +optional
	// +kubebuilder:default=25
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	CPUTolerancePercent int32 `json:"cpuTolerancePercent,omitempty"`
}

// BenchmarkReference names benchmark results: a ConfigMap key holding the JSON written by
// vectorpilot bench sweep (results.json).
type BenchmarkReference struct {
	// configMap holding the results.
	ConfigMap ConfigMapKeyReference `json:"configMap"`
}

// ConfigMapKeyReference names one key of a ConfigMap in the same namespace.
type ConfigMapKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +optional
	// +kubebuilder:default="results.json"
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// TuningStatus records the tuner's last decision and what it was based on.
type TuningStatus struct {
	// sliceCount chosen (1 off, 0 Lucene's default slicing, N slices).
	SliceCount int32 `json:"sliceCount"`
	// reason the tuner gave.
	Reason string `json:"reason,omitempty"`
	// predictedP90Ms and predictedCpuPercent at the load tuned for, as decimal strings.
	PredictedP90Ms      string `json:"predictedP90Ms,omitempty"`
	PredictedCPUPercent string `json:"predictedCpuPercent,omitempty"`
	// loadClients is the live load in benchmark clients, by Little's law over a client's
	// loop: liveInFlight plus liveQueriesPerSecond × the time a search spent outside the
	// query phase in the benchmark's cells; for a table without in-flight figures,
	// liveQueriesPerSecond mapped onto its throughput.
	LoadClients string `json:"loadClients,omitempty"`
	// loadReadBy says which: "searches in flight" or "throughput".
	// +optional
	LoadReadBy string `json:"loadReadBy,omitempty"`
	// liveInFlight is the mean number of the index's searches in flight between the last
	// two samples: the query time its shards spent per second (Little's law), per shard.
	// +optional
	LiveInFlight string `json:"liveInFlight,omitempty"`
	// liveQueriesPerSecond is the index's search rate between the last two samples.
	LiveQueriesPerSecond string `json:"liveQueriesPerSecond,omitempty"`
	// segments when the decision was made.
	Segments int64 `json:"segments,omitempty"`
	// queryTotal, queryMillis and sampledAt are the last sample of the index's search
	// counter and query time (per shard, the operator's own searches left out).
	QueryTotal int64 `json:"queryTotal,omitempty"`
	// +optional
	QueryMillis int64        `json:"queryMillis,omitempty"`
	SampledAt   *metav1.Time `json:"sampledAt,omitempty"`
	// decidedAt is when the applied choice was made.
	DecidedAt *metav1.Time `json:"decidedAt,omitempty"`
	// cpu is the closed loop: the nodes' live CPU against the table's prediction.
	// +optional
	CPU *TuningCPU `json:"cpu,omitempty"`
}

// TuningCPU compares the CPU the nodes burn under the applied setting with what the
// benchmark table predicts, and corrects the table when they disagree for spec.tuning.cpuWindow.
type TuningCPU struct {
	// observedPercent is the nodes' OpenSearch process CPU, in percent of their cores,
	// between the last two samples (measured as the benchmark measures it);
	// predictedPercent what the table as measured predicts for the applied setting at the
	// same load; empty when not measured.
	// +optional
	ObservedPercent string `json:"observedPercent,omitempty"`
	// +optional
	PredictedPercent string `json:"predictedPercent,omitempty"`
	// correction multiplies the table's CPU before the setting is chosen ("1.00": the
	// table as measured); correctedAt and reason say when and why it last changed.
	Correction string `json:"correction"`
	// +optional
	CorrectedAt *metav1.Time `json:"correctedAt,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// disagreeingSince starts the current run of samples outside the tolerance band
	// (above: over the prediction), with their observed and predicted CPU percent·seconds
	// summed; absent while the samples agree.
	// +optional
	DisagreeingSince *metav1.Time `json:"disagreeingSince,omitempty"`
	// +optional
	Above bool `json:"above,omitempty"`
	// +optional
	WindowObserved string `json:"windowObserved,omitempty"`
	// +optional
	WindowPredicted string `json:"windowPredicted,omitempty"`
	// processCpuMillis and processors are the nodes' counters at the last sample.
	// +optional
	ProcessCPUMillis int64 `json:"processCpuMillis,omitempty"`
	// +optional
	Processors int32 `json:"processors,omitempty"`
}

// VectorIndexStatus is what the operator last observed of the index in OpenSearch.
type VectorIndexStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// indexName is the OpenSearch index this object manages.
	// +optional
	IndexName string `json:"indexName,omitempty"`
	// indexUUID is the OpenSearch UUID of the index, to tell a recreated index from the
	// original.
	// +optional
	IndexUUID string `json:"indexUUID,omitempty"`
	// health of the index: green, yellow or red.
	// +optional
	Health string `json:"health,omitempty"`
	// docsCount is the number of documents in the index (primaries).
	// +optional
	DocsCount int64 `json:"docsCount,omitempty"`
	// segments is the number of Lucene segments (primaries).
	// +optional
	Segments int64 `json:"segments,omitempty"`
	// storeSizeBytes is the on-disk size of the index, replicas included.
	// +optional
	StoreSizeBytes int64 `json:"storeSizeBytes,omitempty"`
	// concurrentSearchMode is index.search.concurrent_segment_search.mode as applied.
	// +optional
	ConcurrentSearchMode string `json:"concurrentSearchMode,omitempty"`
	// maxSliceCount is index.search.concurrent.max_slice_count as applied.
	// +optional
	MaxSliceCount int32 `json:"maxSliceCount,omitempty"`
	// slices is the slice setting as applied, in the benchmark's terms: off (concurrent
	// segment search none), lucene (Lucene's default slicing) or the most slices, with
	// "(auto)" when OpenSearch decides per request (mode auto).
	// +optional
	Slices string `json:"slices,omitempty"`
	// storage is where the index's data lives, as OpenSearch reports it: Local,
	// RemoteSnapshot (index.store.type remote_snapshot, read-only) or RemoteStore
	// (index.remote_store.enabled).
	// +optional
	Storage string `json:"storage,omitempty"`
	// remoteStore is how far the index's remote store is behind, when status.storage is
	// RemoteStore (from OpenSearch's _remotestore/stats).
	// +optional
	RemoteStore *IndexRemoteStoreStatus `json:"remoteStore,omitempty"`
	// fixedSettings are settings the spec declares that the index cannot take: a read-only
	// searchable snapshot keeps the snapshot's values; a faiss field created without
	// ef_search in its mapping (by an operator before 0.1.0's fix, or by hand) searches
	// with 100 until rebuilt. The Ready condition's message lists them.
	// +optional
	FixedSettings []string `json:"fixedSettings,omitempty"`
	// restore is the restore the operator started, recorded before it asked OpenSearch,
	// so that a restore interrupted before the index was marked as this object's is
	// resumed rather than taken for someone else's index.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`
	// tuning is the autotuner's state, when spec.tuning.mode is Auto.
	// +optional
	Tuning *TuningStatus `json:"tuning,omitempty"`
	// models are the trained models of the index's method ivf fields, as OpenSearch reports
	// them.
	// +optional
	// +listType=map
	// +listMapKey=field
	Models []ModelStatus `json:"models,omitempty"`
	// recall is the live recall measurement, when spec.recall is set.
	// +optional
	Recall *RecallStatus `json:"recall,omitempty"`
	// alias is the name clients query, once a rebuild put the index behind an alias of the
	// index's name; status.indexName is then the index it points to.
	// +optional
	Alias string `json:"alias,omitempty"`
	// rebuild is the current or last blue/green rebuild.
	// +optional
	Rebuild *RebuildStatus `json:"rebuild,omitempty"`
	// previousIndex is the index the last rebuild replaced, kept for a rollback.
	// +optional
	PreviousIndex *PreviousIndexStatus `json:"previousIndex,omitempty"`
	// conditions: Ready, Progressing, Degraded, Tuned when tuning is Auto, RecallBelowTarget
	// when spec.recall is set, RebuildGateFailed once a rebuild was gated.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VectorIndex is one k-NN index in an OpenSearch cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vi,categories=vectorpilot
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.status.indexName`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Docs",type=integer,JSONPath=`.status.docsCount`
// +kubebuilder:printcolumn:name="Slices",type=string,JSONPath=`.status.slices`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.status.storage`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VectorIndex struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VectorIndexSpec `json:"spec,omitempty"`
	// The default makes a new object's status say generation 0 is observed, so kstatus
	// (Flux) reads it as InProgress until the operator has looked at it, never Current.
	// +kubebuilder:default={observedGeneration: 0}
	Status VectorIndexStatus `json:"status,omitempty"`
}

// OpenSearchIndexName is the name of the index in OpenSearch: spec.indexName, or the
// object's own name when that is empty.
func (v *VectorIndex) OpenSearchIndexName() string {
	if v.Spec.IndexName != "" {
		return v.Spec.IndexName
	}
	return v.Name
}

// VectorIndexList is a list of VectorIndex.
// +kubebuilder:object:root=true
type VectorIndexList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VectorIndex `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VectorIndex{}, &VectorIndexList{})
}
