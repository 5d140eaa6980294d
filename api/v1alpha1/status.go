package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StatusFields points at the status every reconcile of a VectorIndex writes: the whole (compared
// before and after), its conditions and the generation they describe.
func (x *VectorIndex) StatusFields() (any, *[]metav1.Condition, *int64) {
	return &x.Status, &x.Status.Conditions, &x.Status.ObservedGeneration
}

// StatusFields points at the status every reconcile of a SearchCluster writes: the whole (compared
// before and after), its conditions and the generation they describe.
func (x *SearchCluster) StatusFields() (any, *[]metav1.Condition, *int64) {
	return &x.Status, &x.Status.Conditions, &x.Status.ObservedGeneration
}

// StatusFields points at the status every reconcile of a VectorSnapshot writes: the whole (compared
// before and after), its conditions and the generation they describe.
func (x *VectorSnapshot) StatusFields() (any, *[]metav1.Condition, *int64) {
	return &x.Status, &x.Status.Conditions, &x.Status.ObservedGeneration
}

// StatusFields points at the status every reconcile of a SnapshotPolicy writes: the whole (compared
// before and after), its conditions and the generation they describe.
func (x *SnapshotPolicy) StatusFields() (any, *[]metav1.Condition, *int64) {
	return &x.Status, &x.Status.Conditions, &x.Status.ObservedGeneration
}

// StatusFields points at the status every reconcile of a BenchmarkRun writes: the whole (compared
// before and after), its conditions and the generation they describe.
func (x *BenchmarkRun) StatusFields() (any, *[]metav1.Condition, *int64) {
	return &x.Status, &x.Status.Conditions, &x.Status.ObservedGeneration
}
