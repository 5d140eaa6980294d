package managed

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

func TestRecordDefaultsKeepsWhatAClusterMeant(t *testing.T) {
	for _, tc := range []struct {
		name string
		// observedGeneration > 0: an older operator ran the cluster.
		observedGeneration int64
		spec               v1alpha1.ManagedCluster
		wrote              []string
		security, policy   bool
		mmap               v1alpha1.MMapMode
	}{
		{
			name:     "new cluster: today's defaults",
			wrote:    []string{"spec.managed.security.enabled=true", "spec.managed.networkPolicy.enabled=true", "spec.managed.mmap=Disabled"},
			security: true, policy: true, mmap: v1alpha1.MMapDisabled,
		},
		{
			name:               "cluster an operator from before the fields ran: what it ran with",
			observedGeneration: 3,
			wrote:              []string{"spec.managed.security.enabled=false", "spec.managed.networkPolicy.enabled=false", "spec.managed.mmap=NodeConfigured"},
			security:           false, policy: false, mmap: v1alpha1.MMapNodeConfigured,
		},
		{
			name:               "existing cluster created after the policy, before security",
			observedGeneration: 1,
			spec:               v1alpha1.ManagedCluster{NetworkPolicy: v1alpha1.ClusterNetworkPolicy{Enabled: ptr.To(true)}, MMap: v1alpha1.MMapInitContainer},
			wrote:              []string{"spec.managed.security.enabled=false"},
			security:           false, policy: true, mmap: v1alpha1.MMapInitContainer,
		},
		{
			name:               "everything set: nothing written, settings win over age",
			observedGeneration: 7,
			spec:               v1alpha1.ManagedCluster{Security: v1alpha1.ClusterSecurity{Enabled: ptr.To(true)}, NetworkPolicy: v1alpha1.ClusterNetworkPolicy{Enabled: ptr.To(false)}, MMap: v1alpha1.MMapDisabled},
			security:           true, policy: false, mmap: v1alpha1.MMapDisabled,
		},
		{
			name:   "new cluster that opted out",
			spec:   v1alpha1.ManagedCluster{Security: v1alpha1.ClusterSecurity{Enabled: ptr.To(false)}},
			wrote:  []string{"spec.managed.networkPolicy.enabled=true", "spec.managed.mmap=Disabled"},
			policy: true, mmap: v1alpha1.MMapDisabled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &v1alpha1.SearchCluster{Spec: v1alpha1.SearchClusterSpec{Managed: tc.spec.DeepCopy()}}
			sc.Status.ObservedGeneration = tc.observedGeneration
			// What the cluster means before the record is what it means after it.
			before := []any{SecurityEnabled(sc), NetworkPolicyEnabled(sc), MMap(sc)}
			if wrote := RecordDefaults(sc); !slices.Equal(wrote, tc.wrote) {
				t.Errorf("wrote %q, want %q", wrote, tc.wrote)
			}
			m := sc.Spec.Managed
			if m.Security.Enabled == nil || m.NetworkPolicy.Enabled == nil || m.MMap == "" {
				t.Fatalf("a field is still absent: %+v", m)
			}
			if *m.Security.Enabled != tc.security || *m.NetworkPolicy.Enabled != tc.policy || m.MMap != tc.mmap {
				t.Errorf("recorded security %v, policy %v, mmap %s; want %v, %v, %s", *m.Security.Enabled, *m.NetworkPolicy.Enabled, m.MMap, tc.security, tc.policy, tc.mmap)
			}
			if after := []any{SecurityEnabled(sc), NetworkPolicyEnabled(sc), MMap(sc)}; !slices.Equal(before, after) {
				t.Errorf("meaning changed by the record: %v then %v", before, after)
			}
			// Once recorded, the cluster's age no longer matters.
			sc.Status.ObservedGeneration = 1 - min(tc.observedGeneration, 1)
			if after := []any{SecurityEnabled(sc), NetworkPolicyEnabled(sc), MMap(sc)}; !slices.Equal(before, after) {
				t.Errorf("recorded meaning depends on observedGeneration: %v then %v", before, after)
			}
		})
	}
}
