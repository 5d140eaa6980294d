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
)

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
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
