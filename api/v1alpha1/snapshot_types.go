package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotRepository is where snapshots are stored, registered with OpenSearch by the
// operator under its name.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.fs)",message="exactly one of repository.s3 and repository.fs must be set"
type SnapshotRepository struct {
	// name of the repository in OpenSearch.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9._-]*$`
	Name string `json:"name"`
	// s3 stores snapshots in an S3 bucket through the repository-s3 plugin. The S3 client
	// (endpoint, region, credentials) is node configuration: on external clusters configure
	// the named client on the nodes.
	// +optional
	S3 *S3Repository `json:"s3,omitempty"`
	// fs stores snapshots in a shared filesystem path listed in the nodes' path.repo.
	// +optional
	FS *FSRepository `json:"fs,omitempty"`
	// shallowCopy takes shallow snapshots of remote-backed indexes
	// (remote_store_index_shallow_copy): the snapshot references the segments already in
	// the remote store instead of copying them. Indexes that are not remote-backed are
	// copied in full either way; each VectorSnapshot's status.kind says which it got.
	// +optional
	ShallowCopy bool `json:"shallowCopy,omitempty"`
}

// S3Repository is an S3 bucket and prefix.
type S3Repository struct {
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`
	// basePath is the key prefix under which the repository lives.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	BasePath string `json:"basePath,omitempty"`
	// client is the name of the S3 client configured on the nodes (s3.client.NAME.*).
	// +optional
	// +kubebuilder:default=default
	// +kubebuilder:validation:Pattern=`^[a-z0-9_-]+$`
	// +kubebuilder:validation:MaxLength=64
	Client string `json:"client,omitempty"`
}

// FSRepository is a filesystem location.
type FSRepository struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Location string `json:"location"`
}

// Snapshot kinds (status.kind).
const (
	SnapshotFull    = "Full"
	SnapshotShallow = "Shallow"
)

// Snapshot phases.
const (
	SnapshotPending    = "Pending"
	SnapshotInProgress = "InProgress"
	SnapshotSucceeded  = "Succeeded"
	SnapshotFailed     = "Failed"
)

// Deletion policies of a VectorSnapshot: what happens to the snapshot in the repository
// when the object is deleted.
const (
	// SnapshotDeletionRetain keeps the snapshot in the repository: the default, so that
	// deleting objects (a policy, a namespace, a GitOps prune) never deletes backups.
	SnapshotDeletionRetain = "Retain"
	// SnapshotDeletionDelete deletes the snapshot from the repository with the object. The
	// user sets it, or the policy's retention sets it on the snapshots it prunes.
	SnapshotDeletionDelete = "Delete"
)

// VectorSnapshotSpec declares one snapshot of VectorIndexes, taken once when created.
// +kubebuilder:validation:XValidation:rule="self.clusterRef == oldSelf.clusterRef && self.repository == oldSelf.repository && self.indices == oldSelf.indices",message="spec is immutable but for deletionPolicy: a VectorSnapshot is one snapshot; create another"
type VectorSnapshotSpec struct {
	// clusterRef names the SearchCluster holding the indexes.
	ClusterRef LocalObjectReference `json:"clusterRef"`
	// repository is the name of a snapshot repository registered in OpenSearch (a
	// SnapshotPolicy registers its own).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Repository string `json:"repository"`
	// indices are the VectorIndex objects (in this namespace) to snapshot.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	Indices []string `json:"indices"`
	// deletionPolicy: Retain keeps the snapshot in the repository when this object is
	// deleted; Delete removes it with the object. Set Delete before deleting the object to
	// delete the backup; a SnapshotPolicy's retention sets it on what it prunes.
	// +optional
	// +kubebuilder:default=Retain
	// +kubebuilder:validation:Enum=Retain;Delete
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
}

// SnapshotProgress is how far a running snapshot has come, as OpenSearch reports it; a
// snapshot whose figures stop moving for the operator's stall timeout is aborted.
type SnapshotProgress struct {
	ShardsDone  int32 `json:"shardsDone"`
	ShardsTotal int32 `json:"shardsTotal"`
	// bytesDone and bytesTotal are the files' sizes processed so far and to process.
	BytesDone  int64 `json:"bytesDone"`
	BytesTotal int64 `json:"bytesTotal"`
	// lastProgressTime is when these figures last moved (or the snapshot started).
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`
}

// ShardCounts are a snapshot's shard outcome.
type ShardCounts struct {
	Total      int32 `json:"total"`
	Successful int32 `json:"successful"`
	Failed     int32 `json:"failed"`
}

// VectorSnapshotStatus is the snapshot as OpenSearch reports it.
type VectorSnapshotStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending, InProgress, Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// snapshotName is the snapshot's name in the repository.
	// +optional
	SnapshotName string `json:"snapshotName,omitempty"`
	// indices are the OpenSearch index names in the snapshot.
	// +optional
	Indices []string `json:"indices,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// durationMillis is how long OpenSearch took, start to end.
	// +optional
	DurationMillis int64 `json:"durationMillis,omitempty"`
	// sizeBytes is the data the snapshot added to the repository.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// kind is Shallow when OpenSearch took a shallow copy (remote-backed indexes in a
	// repository with shallowCopy), Full otherwise.
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Shards *ShardCounts `json:"shards,omitempty"`
	// progress of a running snapshot.
	// +optional
	Progress *SnapshotProgress `json:"progress,omitempty"`
	// failures OpenSearch reported.
	// +optional
	Failures []string `json:"failures,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VectorSnapshot is one snapshot of VectorIndexes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vsnap,categories=vectorpilot
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.status.snapshotName`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.sizeBytes`
// +kubebuilder:printcolumn:name="Deletion",type=string,JSONPath=`.spec.deletionPolicy`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VectorSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VectorSnapshotSpec `json:"spec,omitempty"`
	// The default makes a new object's status say generation 0 is observed, so kstatus
	// (Flux) reads it as InProgress until the operator has looked at it, never Current.
	// +kubebuilder:default={observedGeneration: 0}
	Status VectorSnapshotStatus `json:"status,omitempty"`
}

// VectorSnapshotList is a list of VectorSnapshot.
// +kubebuilder:object:root=true
type VectorSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VectorSnapshot `json:"items"`
}

// SnapshotPolicySpec schedules VectorSnapshots of the VectorIndexes it selects.
type SnapshotPolicySpec struct {
	ClusterRef LocalObjectReference `json:"clusterRef"`
	Repository SnapshotRepository   `json:"repository"`
	// schedule in cron format (minute hour day-of-month month day-of-week), or a
	// descriptor such as @hourly, @daily, @every 6h.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every ([0-9]+(ms|s|m|h))+|(\S+\s+){4}\S+)$`
	Schedule string `json:"schedule"`
	// timeZone of the schedule, an IANA name; UTC when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+/-]*$`
	TimeZone string `json:"timeZone,omitempty"`
	// retention says which of the policy's snapshots are kept; the others are deleted from
	// the repository. Snapshots the policy did not make (those it does not control, by
	// owner UID) are never touched, and deleting the policy deletes no snapshot.
	// +optional
	Retention SnapshotRetention `json:"retention,omitempty"`
	// indexSelector selects VectorIndexes in this namespace; all of them when empty.
	// +optional
	IndexSelector *metav1.LabelSelector `json:"indexSelector,omitempty"`
	// suspend stops new snapshots; retention still applies.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// SnapshotRetention keeps the newest successful snapshots.
// +kubebuilder:validation:XValidation:rule="has(self.maxCount) || has(self.maxAge)",message="retention needs maxCount, maxAge or both"
type SnapshotRetention struct {
	// maxCount is how many successful snapshots to keep.
	// +optional
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxCount *int32 `json:"maxCount,omitempty"`
	// maxAge is how long to keep a snapshot, e.g. 168h; the newest successful one is kept
	// regardless.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	MaxAge string `json:"maxAge,omitempty"`
}

// SnapshotPolicyStatus is the policy's schedule and repository state.
type SnapshotPolicyStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// lastScheduleTime is when the latest snapshot was started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// lastSuccessfulTime is when the latest successful snapshot completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// nextScheduleTime is when the next snapshot is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SnapshotPolicy registers a snapshot repository and takes scheduled VectorSnapshots.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sp,categories=vectorpilot
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SnapshotPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SnapshotPolicySpec `json:"spec,omitempty"`
	// The default makes a new object's status say generation 0 is observed, so kstatus
	// (Flux) reads it as InProgress until the operator has looked at it, never Current.
	// +kubebuilder:default={observedGeneration: 0}
	Status SnapshotPolicyStatus `json:"status,omitempty"`
}

// SnapshotPolicyList is a list of SnapshotPolicy.
// +kubebuilder:object:root=true
type SnapshotPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SnapshotPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VectorSnapshot{}, &VectorSnapshotList{}, &SnapshotPolicy{}, &SnapshotPolicyList{})
}
