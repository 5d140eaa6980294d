package v1alpha1

// Condition types shared by every kind. Ready, Progressing and Degraded are the summary
// (Argo CD's health checks in docs/gitops read them); Reconciling and Stalled say the same
// as Progressing and Degraded in kstatus's terms (its "abnormal-true" conditions), which
// Flux, kpt and cli-utils read: without them kstatus calls every observed object Current.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	// ConditionTuned: the autotuner has chosen and applied a slice count.
	ConditionTuned = "Tuned"
	// ConditionRecallBelowTarget: the live recall last measured is below spec.recall.target
	// (True), meets it (False), or has not been measured yet (Unknown).
	ConditionRecallBelowTarget = "RecallBelowTarget"
	// ConditionRebuildGateFailed: the last blue/green rebuild's new index failed
	// spec.rebuild.gate and clients stayed on the serving index (True), or it passed (False).
	ConditionRebuildGateFailed = "RebuildGateFailed"
	// ConditionScheduled: every pod of a managed cluster has a node.
	ConditionScheduled = "Scheduled"
	// ConditionSecured: a managed cluster runs with TLS and authentication, its
	// certificates valid; False with a Warning-worthy reason when security is off.
	ConditionSecured = "Secured"
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

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
