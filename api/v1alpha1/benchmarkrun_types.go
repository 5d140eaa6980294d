package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkRunLabel on a run's Workflow and its pods names the BenchmarkRun.
const BenchmarkRunLabel = "vectorpilot.io/benchmark-run"

// BenchmarkRunSpec is one benchmark sweep against a VectorIndex. The spec is fixed once the
// run exists: a run is a record of what was measured.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new BenchmarkRun"
// +kubebuilder:validation:XValidation:rule="(has(self.runner) && has(self.runner.type) && self.runner.type == 'Argo') || !has(self.workload.dataset.generated) || (self.workload.dataset.generated.count <= 200000 && (!has(self.workload.dataset.generated.queries) || self.workload.dataset.generated.queries <= 2000))",message="spec.workload.dataset.generated: the Local runner builds the dataset and its exact neighbours inside the operator, so it takes at most 200000 vectors and 2000 queries; use the Argo runner for more",fieldPath=".workload.dataset.generated"
type BenchmarkRunSpec struct {
	// indexRef names the VectorIndex to measure, in the same namespace.
	IndexRef LocalObjectReference `json:"indexRef"`

	// workload is the dataset and queries.
	Workload BenchmarkWorkload `json:"workload"`

	// sliceCounts are the settings to measure: 1 = concurrent search off, 0 = Lucene's own
	// slicing, N = at most N slices.
	// +kubebuilder:default={1,2,4,0}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=1024
	// +listType=set
	// +optional
	SliceCounts []int32 `json:"sliceCounts,omitempty"`

	// clients are the closed-loop client counts to measure each slice setting under.
	// +kubebuilder:default={1,2,4}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=512
	// +listType=set
	// +optional
	Clients []int32 `json:"clients,omitempty"`

	// runner says where the sweep runs.
	// +optional
	Runner BenchmarkRunner `json:"runner,omitempty"`

	// ttlAfterFinished deletes the run's Argo Workflow (and with it its pods) this long after
	// the run finished; the run and its results stay, for the tuner and for the record.
	// +optional
	TTLAfterFinished *metav1.Duration `json:"ttlAfterFinished,omitempty"`
}

// BenchmarkWorkload is the data and the queries of a run.
// +kubebuilder:validation:XValidation:rule="has(self.dataset.generated) != has(self.dataset.hdf5)",message="spec.workload.dataset: exactly one of generated and hdf5 must be set",fieldPath=".dataset"
type BenchmarkWorkload struct {
	// field is the knn_vector field to query; default the index's first field.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Field string `json:"field,omitempty"`

	// dataset holds the base vectors, the queries and their true neighbours.
	Dataset BenchmarkDataset `json:"dataset"`

	// load: IfIncomplete writes the dataset's base vectors (ids 0..count-1) into an empty
	// index, or completes a load of the same dataset cut short; an index holding other
	// documents is refused (the run fails with IndexNotEmpty). IntoNonEmpty also writes
	// into an index holding other documents: the dataset's documents are added beside
	// them (existing ids are never overwritten) and stay. Never writes no document and
	// measures the index as it is. Recall is reported only when the index holds exactly
	// the dataset.
	// +kubebuilder:validation:Enum=IfIncomplete;IntoNonEmpty;Never
	// +kubebuilder:default=IfIncomplete
	// +optional
	Load string `json:"load,omitempty"`

	// k is the number of neighbours per query.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	K int32 `json:"k,omitempty"`

	// warmup runs before each cell and is not measured.
	// +kubebuilder:default="5s"
	// +optional
	Warmup metav1.Duration `json:"warmup,omitempty"`

	// duration is the measured time of each cell.
	// +kubebuilder:default="15s"
	// +optional
	Duration metav1.Duration `json:"duration,omitempty"`
}

// BenchmarkDataset is generated vectors or an HDF5 file.
type BenchmarkDataset struct {
	// generated vectors: clustered, seeded, of the field's dimension; exact neighbours are
	// computed by the runner (L2).
	// +optional
	Generated *GeneratedDataset `json:"generated,omitempty"`
	// hdf5 is a file in the ann-benchmarks / OpenSearch Benchmark layout (train, test,
	// neighbors), at a path the runner can read. It is decoded with python's h5py, which
	// the runner needs: the Local runner of `vectorpilot dev` and `make demo` has it (from
	// bin/venv); for Argo, use a step image that adds it and mounts the file.
	// +optional
	HDF5 *HDF5Dataset `json:"hdf5,omitempty"`
}

// GeneratedDataset is a seeded synthetic dataset.
type GeneratedDataset struct {
	// count of base vectors.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=10000000
	Count int32 `json:"count"`
	// queries is the number of distinct query vectors.
	// +kubebuilder:default=200
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Queries int32 `json:"queries,omitempty"`
	// seed of the generator; the same seed gives the same vectors.
	// +kubebuilder:default=1
	// +optional
	Seed int64 `json:"seed,omitempty"`
}

// HDF5Dataset is a dataset file.
type HDF5Dataset struct {
	// path of the file as the runner sees it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`
}

// BenchmarkRunner is where a sweep runs.
// +kubebuilder:validation:XValidation:rule="self.type != 'Argo' || has(self.workflowTemplateRef)",message="spec.runner.workflowTemplateRef is required when spec.runner.type is Argo",fieldPath=".workflowTemplateRef"
// +kubebuilder:validation:XValidation:rule="self.type != 'Local' || (!has(self.workflowTemplateRef) && !has(self.image) && !has(self.serviceAccountName))",message="spec.runner: workflowTemplateRef, image and serviceAccountName apply to the Argo runner only"
type BenchmarkRunner struct {
	// type: Local runs the sweep inside the operator (development, clusters without Argo),
	// one run at a time per index; Argo submits a Workflow from a WorkflowTemplate.
	// +kubebuilder:validation:Enum=Local;Argo
	// +kubebuilder:default=Local
	// +optional
	Type string `json:"type,omitempty"`
	// workflowTemplateRef names the WorkflowTemplate (in the run's namespace) to submit,
	// e.g. vectorpilot-benchmark-sweep or vectorpilot-benchmark-osb from workflows/.
	// +optional
	WorkflowTemplateRef *LocalObjectReference `json:"workflowTemplateRef,omitempty"`
	// image of the benchmark steps; the template's default (the operator image) when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// serviceAccountName the Workflow runs as; it needs patch on benchmarkruns/status for
	// the reporter step.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// Runner types.
const (
	RunnerLocal = "Local"
	RunnerArgo  = "Argo"
)

// Benchmark run phases.
const (
	BenchmarkPending   = "Pending"
	BenchmarkRunning   = "Running"
	BenchmarkSucceeded = "Succeeded"
	BenchmarkFailed    = "Failed"
)

// BenchmarkCell is one measured cell. Figures are decimal strings: the API avoids floats.
type BenchmarkCell struct {
	SliceCount int32  `json:"sliceCount"`
	Clients    int32  `json:"clients"`
	P50Ms      string `json:"p50Ms"`
	P90Ms      string `json:"p90Ms"`
	P99Ms      string `json:"p99Ms"`
	QPS        string `json:"qps"`
	CPUPercent string `json:"cpuPercent"`
	// +optional
	Recall string `json:"recall,omitempty"`
}

// BenchmarkRecommendation is the tuner's choice for one client level.
type BenchmarkRecommendation struct {
	Clients    int32  `json:"clients"`
	SliceCount int32  `json:"sliceCount"`
	Reason     string `json:"reason"`
}

// BenchmarkRunStatus is the run's progress and results.
type BenchmarkRunStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending, Running, Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// workflowName is the Argo Workflow of the run.
	// +optional
	WorkflowName string `json:"workflowName,omitempty"`
	// engine that measured: vectorpilot or opensearch-benchmark.
	// +optional
	Engine string `json:"engine,omitempty"`
	// cores of the measured node and segments of the index, the tuner's context.
	// +optional
	Cores int32 `json:"cores,omitempty"`
	// +optional
	Segments int32 `json:"segments,omitempty"`
	// results is the measured table, one cell per slice setting and client level.
	// +listType=atomic
	// +optional
	Results []BenchmarkCell `json:"results,omitempty"`
	// recommendations are the tuner's slice count for each client level measured.
	// +listType=atomic
	// +optional
	Recommendations []BenchmarkRecommendation `json:"recommendations,omitempty"`
	// attempts is how many times the Local runner started the run; a run interrupted
	// (the operator restarted) that many times fails instead of starting again.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// restoreSettings are the index settings the run changes, as they were before it
	// started; they are put back when it ends, however it ends (an empty value: the
	// setting was not set).
	// +optional
	RestoreSettings map[string]string `json:"restoreSettings,omitempty"`
	// conditions: Ready (the run succeeded), Progressing, Degraded (it failed).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BenchmarkRun is a benchmark sweep of slice settings × client levels against an index.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=br,categories=vectorpilot
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.spec.indexRef.name`
// +kubebuilder:printcolumn:name="Runner",type=string,JSONPath=`.spec.runner.type`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Workflow",type=string,JSONPath=`.status.workflowName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BenchmarkRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BenchmarkRunSpec   `json:"spec,omitempty"`
	Status BenchmarkRunStatus `json:"status,omitempty"`
}

// BenchmarkRunList is a list of BenchmarkRun.
// +kubebuilder:object:root=true
type BenchmarkRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BenchmarkRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BenchmarkRun{}, &BenchmarkRunList{})
}
