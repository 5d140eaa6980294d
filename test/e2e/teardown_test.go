package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// TestDeletingAManagedClusterKeepsItsVolumes, after the day-2 tests (rolling_test.go):
// deleting the SearchCluster lets the garbage
// collector remove what the operator made for it (StatefulSets and their pods, Services,
// budgets, ConfigMaps), while the claims holding the data stay until someone deletes them.
func TestDeletingAManagedClusterKeepsItsVolumes(t *testing.T) {
	integration(t)
	ctx := context.Background()
	sc := sandboxCluster(t)
	selector := client.MatchingLabels(managed.ClusterSelector(sc))
	if err := k8s.Delete(ctx, sc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the garbage collector to remove the cluster's objects", func() (bool, string) {
		left := map[string]int{}
		for kind, list := range map[string]client.ObjectList{
			"StatefulSet": &appsv1.StatefulSetList{}, "Pod": &corev1.PodList{}, "Service": &corev1.ServiceList{},
			"PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{}, "ConfigMap": &corev1.ConfigMapList{},
		} {
			if err := k8s.List(ctx, list, client.InNamespace(searchNamespace), selector); err != nil {
				t.Fatal(err)
			}
			if n := meta.LenList(list); n > 0 {
				left[kind] = n
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	var claims corev1.PersistentVolumeClaimList
	if err := k8s.List(ctx, &claims, client.InNamespace(searchNamespace)); err != nil {
		t.Fatal(err)
	}
	// The claims of its pool's pods (the StatefulSet's volumeClaimTemplate "data"); other
	// clusters of the namespace keep theirs.
	prefix := "data-" + managed.PoolName(sc, sc.Spec.Managed.NodePools[0].Name) + "-"
	kept := 0
	for _, c := range claims.Items {
		if strings.HasPrefix(c.Name, prefix) && c.DeletionTimestamp == nil && c.Status.Phase == corev1.ClaimBound {
			kept++
		}
	}
	if want := int(sc.Spec.Managed.NodePools[0].Replicas); kept != want {
		t.Errorf("%d claims kept after the cluster was deleted, want %d", kept, want)
	}
	t.Logf("cluster deleted: its objects collected, %d claims kept", kept)
}
