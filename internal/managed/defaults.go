package managed

import (
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// A CRD default is applied whenever an object is read, so a default added for a new field
// would also change every cluster created before the field existed. The fields below have a
// default unlike what such clusters ran with, so their schema has none: absent, a field
// means today's default on a cluster no operator has run yet and the old behaviour on one an
// older operator already ran (ExistedBefore), and the operator writes that meaning into the
// spec when it first sees the cluster (RecordDefaults). A newer operator thus never changes
// what an existing cluster means; its owner opts in by setting the field. CEL keeps a
// recorded field from being removed, so it is never decided again.

// ExistedBefore says whether an operator already ran sc before this one recorded its
// defaults: it wrote status.observedGeneration, which a cluster just created does not have.
func ExistedBefore(sc *v1alpha1.SearchCluster) bool { return sc.Status.ObservedGeneration > 0 }

// SecurityEnabled says whether the cluster runs the security plugin. Before the field
// existed nodes ran without it, over plain HTTP.
func SecurityEnabled(sc *v1alpha1.SearchCluster) bool {
	return ptr.Deref(sc.Spec.Managed.Security.Enabled, !ExistedBefore(sc))
}

// NetworkPolicyEnabled says whether the cluster keeps a NetworkPolicy. Before the field
// existed every client reached the pods.
func NetworkPolicyEnabled(sc *v1alpha1.SearchCluster) bool {
	return ptr.Deref(sc.Spec.Managed.NetworkPolicy.Enabled, !ExistedBefore(sc))
}

// MMap is how the cluster's nodes get to memory-map index files. Before the field existed
// nothing set node.store.allow_mmap: nodes mapped files on Kubernetes nodes whose admin had
// raised vm.max_map_count, which is NodeConfigured.
func MMap(sc *v1alpha1.SearchCluster) v1alpha1.MMapMode {
	switch {
	case sc.Spec.Managed.MMap != "":
		return sc.Spec.Managed.MMap
	case ExistedBefore(sc):
		return v1alpha1.MMapNodeConfigured
	}
	return v1alpha1.MMapDisabled
}

// RecordDefaults writes into sc's spec every field above that is absent, with the value it
// means (see the comment above), and returns "path=value" for each field it wrote.
func RecordDefaults(sc *v1alpha1.SearchCluster) []string {
	m := sc.Spec.Managed
	var wrote []string
	record := func(path string, value any) {
		wrote = append(wrote, fmt.Sprintf("spec.managed.%s=%v", path, value))
	}
	if m.Security.Enabled == nil {
		m.Security.Enabled = ptr.To(SecurityEnabled(sc))
		record("security.enabled", *m.Security.Enabled)
	}
	if m.NetworkPolicy.Enabled == nil {
		m.NetworkPolicy.Enabled = ptr.To(NetworkPolicyEnabled(sc))
		record("networkPolicy.enabled", *m.NetworkPolicy.Enabled)
	}
	if m.MMap == "" {
		m.MMap = MMap(sc)
		record("mmap", m.MMap)
	}
	return wrote
}
