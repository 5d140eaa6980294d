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

	// variants are configurations to compare on the same index, data and queries: under
	// each slice setting, every variant is measured in turn with its queries served only by
	// its nodes (OpenSearch's _only_nodes preference) and the CPU read from those nodes.
	// Pools with different SIMD settings (level, vector width, Panama on or off), each
	// holding a copy of every shard of the index, are compared so; the run fails with
	// reason VariantWithoutCopy when a variant's nodes miss a shard no copy is on its
	// way to them with (it waits while one recovers or relocates). Empty: one
	// configuration, every node. A run with variants is an A/B record, never the slice
	// tuner's input.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Variants []BenchmarkVariant `json:"variants,omitempty"`

	// representations, when set, also measure the workload in each of these vector
	// representations, each in a scratch index the run creates beside the VectorIndex's
	// (<index>-vpbench-<representation>, marked as the run's) and deletes when it ends:
	// recall@k against the exact float neighbours, p90 and throughput at one client, and
	// the bytes per document an HNSW search keeps hot. The run recommends the cheapest that
	// meets recallTarget; it never changes the VectorIndex (that needs a reindex).
	// +kubebuilder:validation:MaxItems=5
	// +listType=set
	// +optional
	Representations []VectorRepresentation `json:"representations,omitempty"`

	// recallTarget is the recall@k a representation must reach to be recommended.
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	// +kubebuilder:default="0.95"
	// +optional
	RecallTarget string `json:"recallTarget,omitempty"`

	// runner says where the sweep runs.
	// +optional
	Runner BenchmarkRunner `json:"runner,omitempty"`

	// ttlAfterFinished deletes the run's Argo Workflow (and with it its pods) this long after
	// the run finished; the run and its results stay, for the tuner and for the record.
	// +optional
	TTLAfterFinished *metav1.Duration `json:"ttlAfterFinished,omitempty"`
}

// BenchmarkVariant is one configuration of a comparison: the nodes that serve its queries.
// +kubebuilder:validation:XValidation:rule="has(self.pool) != has(self.nodes)",message="exactly one of pool and nodes must be set"
type BenchmarkVariant struct {
	// name of the variant in the results.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// pool is a node pool of the index's managed SearchCluster: its nodes carry the
	// vectorpilot_pool attribute.
	// +kubebuilder:validation:MaxLength=40
	// +optional
	Pool string `json:"pool,omitempty"`
	// nodes is an OpenSearch node specification (node names, attribute:value, wildcards,
	// comma-separated), for clusters whose nodes vectorpilot does not manage.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Nodes string `json:"nodes,omitempty"`
}

// VectorRepresentation is how an index stores its vectors: on Lucene float, byte, binary
// (one bit per dimension, Hamming distance), or float with scalar quantization to 7 or 1
// bits (sq7, sq1; sq1 needs the k-NN plugin's native library on the nodes); on faiss
// (native graphs, their memory measured in the k-NN cache) faiss-float, faiss-fp16 (2x)
// and faiss-binary.
// +kubebuilder:validation:Enum=float;byte;binary;sq7;sq1;faiss-float;faiss-fp16;faiss-binary
type VectorRepresentation string

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
	// the runner needs: the Local runner of `vectorpilot-dev` and `make demo` has it (from
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
	// variant is the configuration measured, for a run with variants.
	// +optional
	Variant    string `json:"variant,omitempty"`
	SliceCount int32  `json:"sliceCount"`
	Clients    int32  `json:"clients"`
	P50Ms      string `json:"p50Ms"`
	P90Ms      string `json:"p90Ms"`
	P99Ms      string `json:"p99Ms"`
	QPS        string `json:"qps"`
	CPUPercent string `json:"cpuPercent"`
	// +optional
	Recall string `json:"recall,omitempty"`
	// inFlight is the mean number of searches in flight on the index's shards during the
	// cell (their query time per second, Little's law): what the tuner maps the live load
	// onto. Absent when not measured.
	// +optional
	InFlight string `json:"inFlight,omitempty"`
}

// BenchmarkRecommendation is the tuner's choice for one client level.
type BenchmarkRecommendation struct {
	Clients    int32  `json:"clients"`
	SliceCount int32  `json:"sliceCount"`
	Reason     string `json:"reason"`
}

// BenchmarkVariantResult is one variant as its nodes reported themselves, and how it did
// against the first variant.
type BenchmarkVariantResult struct {
	Name string `json:"name"`
	// nodes is the node specification its queries were pinned to.
	Nodes string `json:"nodes"`
	// nodeNames are the nodes that matched it.
	// +listType=atomic
	// +optional
	NodeNames []string `json:"nodeNames,omitempty"`
	// simd is the level the nodes' pool asked for (their vectorpilot_simd attribute), and
	// cpuSIMD the widest their CPUs have (vectorpilot_cpu, detected on the node); empty
	// when the nodes do not carry them.
	// +optional
	SIMD string `json:"simd,omitempty"`
	// +optional
	CPUSIMD string `json:"cpuSIMD,omitempty"`
	// luceneVector is the vector code the nodes' JVM options give Lucene: scalar,
	// panama-256, panama-512, mixed.
	// +optional
	LuceneVector string `json:"luceneVector,omitempty"`
	// faissLibrary is the faiss library variant the nodes load for faiss fields
	// (generic, avx2, avx512, avx512_spr), as the k-NN plugin chooses it from their CPU and
	// their knn.faiss.<level>.disabled settings; mixed when they differ. The SearchCluster's
	// status.pools[].faissLibrary is the library each node logged loading.
	// +optional
	FaissLibrary string `json:"faissLibrary,omitempty"`
	// qpsRatio is the geometric mean, over the cells both measured, of this variant's
	// throughput over the first variant's (1.10 = 10 % more); p90Ratio likewise of its p90
	// over the first's (0.90 = 10 % faster).
	// +optional
	QPSRatio string `json:"qpsRatio,omitempty"`
	// +optional
	P90Ratio string `json:"p90Ratio,omitempty"`
}

// BenchmarkSIMDRecommendation is the SIMD level the measured variants say a pool should
// ask for: the level on the most instance families whose throughput is within 5 % of the
// best variant's.
type BenchmarkSIMDRecommendation struct {
	Variant string `json:"variant"`
	// +optional
	Level string `json:"level,omitempty"`
	// instanceFamilies are AWS families whose every size has the level.
	// +listType=atomic
	// +optional
	InstanceFamilies []string `json:"instanceFamilies,omitempty"`
	Reason           string   `json:"reason"`
}

// BenchmarkRepresentationResult is one representation measured in its scratch index.
type BenchmarkRepresentationResult struct {
	Name VectorRepresentation `json:"name"`
	// recall@k against the exact float neighbours, p90 and throughput, at one client.
	Recall string `json:"recall"`
	P90Ms  string `json:"p90Ms"`
	QPS    string `json:"qps"`
	// hotBytesPerDoc is what an HNSW search reads per document (the graph and the vectors
	// it scores), the memory to keep cached; diskBytesPerDoc is every vector file.
	HotBytesPerDoc  string `json:"hotBytesPerDoc"`
	DiskBytesPerDoc string `json:"diskBytesPerDoc"`
}

// BenchmarkRepresentationRecommendation is the cheapest measured representation meeting
// the recall target: the fewest hot bytes per document, then the lowest p90.
type BenchmarkRepresentationRecommendation struct {
	RecallTarget string               `json:"recallTarget"`
	Name         VectorRepresentation `json:"name"`
	// met is false when none reached the target: name is then the one with the best recall.
	Met    bool   `json:"met"`
	Reason string `json:"reason"`
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
	// progress is how far a running benchmark is, written as it goes.
	// +optional
	Progress *BenchmarkProgress `json:"progress,omitempty"`
	// results is the measured table, one cell per slice setting and client level.
	// +listType=atomic
	// +optional
	Results []BenchmarkCell `json:"results,omitempty"`
	// recommendations are the tuner's slice count for each client level measured (runs
	// without variants).
	// +listType=atomic
	// +optional
	Recommendations []BenchmarkRecommendation `json:"recommendations,omitempty"`
	// variants are the compared configurations, as observed, and their ratios.
	// +listType=atomic
	// +optional
	Variants []BenchmarkVariantResult `json:"variants,omitempty"`
	// simdRecommendation is what the variants' results say about the SIMD level to ask for.
	// +optional
	SIMDRecommendation *BenchmarkSIMDRecommendation `json:"simdRecommendation,omitempty"`
	// representations are the representation sweep's results.
	// +listType=atomic
	// +optional
	Representations []BenchmarkRepresentationResult `json:"representations,omitempty"`
	// representationRecommendation is the cheapest representation meeting the recall target.
	// +optional
	RepresentationRecommendation *BenchmarkRepresentationRecommendation `json:"representationRecommendation,omitempty"`
	// attempts is how many times the Local runner started the run; a run interrupted
	// (the operator restarted) or failed by OpenSearch errors that may pass (no answer,
	// 429, 5xx) that many times fails instead of starting again.
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

// BenchmarkProgress is how far a running benchmark is.
type BenchmarkProgress struct {
	// step the run is in: Loading (the dataset into the index), Variants (reading the
	// variants' nodes, waiting for their copies of the index), Sweeping (the cells),
	// Representations (their scratch indexes) for the Local runner; the Workflow's phase for
	// Argo. Empty once the run has ended.
	// +optional
	Step string `json:"step,omitempty"`
	// documents loaded into the index, "loaded/total", while Loading.
	// +optional
	Documents string `json:"documents,omitempty"`
	// cells of the sweep measured, "done/total" (Local runner).
	// +optional
	Cells string `json:"cells,omitempty"`
	// workflowSteps is the Argo Workflow's own progress, "done/total" of its steps.
	// +optional
	WorkflowSteps string `json:"workflowSteps,omitempty"`
	// eta is when the sweep should end at the pace of its cells so far; absent before the
	// first cell and once the sweep is over.
	// +optional
	ETA *metav1.Time `json:"eta,omitempty"`
}

// BenchmarkRun is a benchmark sweep of slice settings × client levels against an index.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=br,categories=vectorpilot
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.spec.indexRef.name`
// +kubebuilder:printcolumn:name="Runner",type=string,JSONPath=`.spec.runner.type`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.progress.step`
// +kubebuilder:printcolumn:name="Cells",type=string,JSONPath=`.status.progress.cells`
// +kubebuilder:printcolumn:name="ETA",type=string,JSONPath=`.status.progress.eta`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Workflow",type=string,JSONPath=`.status.workflowName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BenchmarkRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BenchmarkRunSpec `json:"spec,omitempty"`
	// The default makes a new object's status say generation 0 is observed, so kstatus
	// (Flux) reads it as InProgress until the operator has looked at it, never Current.
	// +kubebuilder:default={observedGeneration: 0}
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
