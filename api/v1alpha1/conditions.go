package v1alpha1

// Condition types shared by every kind; kstatus, Argo CD and Flux read Ready.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
	// ConditionTuned: the autotuner has chosen and applied a slice count.
	ConditionTuned = "Tuned"
	// ConditionScheduled: every pod of a managed cluster has a node.
	ConditionScheduled = "Scheduled"
	// ConditionPaused: the object carries the pause annotation; the operator writes nothing
	// to OpenSearch (or to the cluster's pods) for it until the annotation goes.
	ConditionPaused = "Paused"
)

// PausedAnnotation set to "true" pauses an object, as ECK's managed=false and Flux's
// suspend do: no writes to OpenSearch for it, and deleting a paused object lets it go
// without touching its data (the way out of a finalizer that can never finish).
const PausedAnnotation = "vectorpilot.io/paused"

// IsPaused says the object carries the pause annotation.
func IsPaused(annotations map[string]string) bool { return annotations[PausedAnnotation] == "true" }

// Condition reasons. Every condition carries one; they are part of the API users alert on.
const (
	ReasonReconciled        = "Reconciled"
	ReasonReconciling       = "Reconciling"
	ReasonCreating          = "Creating"
	ReasonClusterNotFound   = "ClusterNotFound"
	ReasonClusterNotReady   = "ClusterNotReady"
	ReasonUnreachable       = "Unreachable"
	ReasonUnauthorized      = "Unauthorized"
	ReasonTLSError          = "TLSError"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonInvalidSecret     = "InvalidSecret"
	ReasonConflict          = "Conflict"
	ReasonRejected          = "RejectedByOpenSearch"
	ReasonOpenSearchError   = "OpenSearchError"
	ReasonDeleting          = "Deleting"
	ReasonIndexHealthRed    = "IndexRed"
	ReasonIndexHealthYellow = "IndexYellow"
	ReasonTuned             = "Tuned"
	ReasonBenchmarkMissing  = "BenchmarkMissing"
	ReasonBenchmarkInvalid  = "BenchmarkInvalid"
	ReasonUnschedulable     = "Unschedulable"
	ReasonPodsStarting      = "PodsStarting"
	ReasonRollingRestart    = "RollingRestart"
	ReasonRolloutBlocked    = "RolloutBlocked"
	ReasonPaused            = "PausedByAnnotation"
	ReasonResumed           = "Resumed"
	// ReasonClusterBlocked: OpenSearch refused a write because of a cluster or index block
	// (e.g. flood-stage disk watermark): not a credentials problem.
	ReasonClusterBlocked = "ClusterBlocked"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
