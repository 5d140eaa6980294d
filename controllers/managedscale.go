package controllers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
)

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=delete

// removeNodes takes one node a shrinking or removed pool no longer wants through the
// removal (rollout.NextRemoval): drained, its vote moved, its pod removed; then a removed
// pool whose last node has gone loses its objects. Voting exclusions are cleared once the
// nodes they name have gone.
func (r *SearchClusterReconciler) removeNodes(ctx context.Context, m *clusterRun) error {
	sc := m.sc
	node, pool := leavingNode(m.pools, m.obs.pods)
	if node == nil {
		if sc.Status.ScaleDown == nil {
			return nil
		}
		// The last removal is done: clean up after it, then say so.
		if done, err := r.finishRemovals(ctx, sc, m); err != nil || !done {
			return err
		}
		sc.Status.ScaleDown = nil
		return nil
	}
	removal := rollout.NextRemoval(rollout.State{Pods: m.obs.pods, Missing: m.obs.missing, Health: r.clusterHealth(ctx, m)}, *node)
	sc.Status.ScaleDown = &v1alpha1.ScaleDownStatus{Node: node.Name, Phase: string(removal.Action), Message: removal.Message}
	switch removal.Action {
	case rollout.RemovalDrain:
		m.drain = append(m.drain, node.Name)
		if why := r.stuckCopy(ctx, sc, r.clusterHealth(ctx, m), node.Name); why != "" {
			sc.Status.ScaleDown.Message += "; " + why
		}
	case rollout.RemovalExcludeVote:
		osClient, err := r.clusterAPIFor(ctx, sc)
		if err != nil {
			return err
		}
		if err := osClient.ExcludeVoter(ctx, node.Name); err != nil {
			return fmt.Errorf("moving %s's vote: %w", node.Name, err)
		}
	case rollout.RemovalRemove:
		// The StatefulSet removes its highest ordinal, which is this node.
		patch := client.MergeFrom(pool.sts.DeepCopy())
		pool.sts.Spec.Replicas = ptr.To(int32(node.Ordinal))
		if err := r.Patch(ctx, pool.sts, patch); err != nil {
			return fmt.Errorf("removing %s: %w", node.Name, err)
		}
		r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonNodeRemoved, "ScaleDown", "Removed %s: its shards and vote had moved to other nodes", node.Name)
	}
	return nil
}

// stuckCopy says why a started copy on a draining node does not move to another node (a
// full disk, a copy of the shard there already, an allocation filter …), from OpenSearch's
// allocation explanation of the first one; "" while the copies can move, and when
// OpenSearch does not say (the drain's message stays as it is).
func (r *SearchClusterReconciler) stuckCopy(ctx context.Context, sc *v1alpha1.SearchCluster, health rollout.Health, node string) string {
	i := slices.IndexFunc(health.Shards, func(sh rollout.Shard) bool {
		return sh.Node == node && sh.State == "STARTED" && sh.RelocatingTo == ""
	})
	if i < 0 {
		return ""
	}
	sh := health.Shards[i]
	number, err := strconv.Atoi(sh.Shard)
	if err != nil {
		return ""
	}
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return ""
	}
	why, err := osClient.StuckShard(ctx, sh.Index, number, sh.Primary, node)
	if err != nil || why == "" {
		return ""
	}
	return fmt.Sprintf("%s/%s cannot move: %s", sh.Index, sh.Shard, why)
}

// leavingNode is the next node to remove: the highest ordinal of the first pool, in spec
// order then removed pools, that runs more nodes than it wants.
func leavingNode(pools []poolView, pods []rollout.Pod) (*rollout.Pod, *poolView) {
	for i := range pools {
		p := &pools[i]
		last := int(ptr.Deref(p.sts.Spec.Replicas, 0)) - 1
		if last < p.wanted {
			continue
		}
		for j := range pods {
			if pods[j].Pool == p.name && pods[j].Ordinal == last {
				return &pods[j], p
			}
		}
		// Its pod is not there: nothing runs on it to drain.
		return &rollout.Pod{Name: fmt.Sprintf("%s-%d", p.sts.Name, last), Pool: p.name, Ordinal: last, Leaving: true}, p
	}
	return nil, nil
}

// finishRemovals, once every pool runs the nodes it wants: waits for the removed pods to
// go, then deletes the objects of removed pools and clears the voting exclusions. done is
// false while there is still something to wait for.
func (r *SearchClusterReconciler) finishRemovals(ctx context.Context, sc *v1alpha1.SearchCluster, m *clusterRun) (done bool, err error) {
	for _, p := range m.obs.pods {
		if p.Leaving {
			sc.Status.ScaleDown = &v1alpha1.ScaleDownStatus{Node: p.Name, Phase: string(rollout.RemovalRemove), Message: "waiting for " + p.Name + " to stop"}
			return false, nil
		}
	}
	for _, p := range m.pools {
		if !p.removed {
			continue
		}
		if err := r.deletePool(ctx, sc, p.sts); err != nil {
			return false, err
		}
		r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonPoolRemoved, "ScaleDown", "Pool %s removed: its nodes were drained and have gone; its volume claims are kept", p.name)
	}
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return false, err
	}
	if err := osClient.ClearVotingExclusions(ctx); err != nil {
		return false, fmt.Errorf("clearing the voting configuration exclusions: %w", err)
	}
	return true, nil
}

// deletePool deletes a removed pool's StatefulSet, Services, ConfigMap and certificates.
// Its volume claims stay, like those of any removed node.
func (r *SearchClusterReconciler) deletePool(ctx context.Context, sc *v1alpha1.SearchCluster, sts *appsv1.StatefulSet) error {
	pool := sts.Labels[managed.PoolLabel]
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: sc.Namespace} }
	objs := []client.Object{sts, &corev1.Service{ObjectMeta: meta(sts.Name)}, &corev1.ConfigMap{ObjectMeta: meta(managed.ConfigName(sc, pool))},
		&corev1.Secret{ObjectMeta: meta(managed.CertsSecretName(sc, pool))}}
	for _, obj := range objs {
		if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pool %s: %w", pool, err)
		}
	}
	return nil
}

// syncDrains keeps cluster.routing.allocation.exclude._name to the nodes the operator
// drains: adds those this reconcile decided, lifts those that are gone for good or back on
// the current revision (rollout.Lift), and leaves any name it did not add alone.
// status.drainingNodes records its own: an addition before the call (a change whose answer
// was lost is still lifted later), a lift after it.
func (r *SearchClusterReconciler) syncDrains(ctx context.Context, sc *v1alpha1.SearchCluster, obs poolObservation, add []string) error {
	wanted := func(name string) bool {
		for _, p := range sc.Spec.Managed.NodePools {
			if strings.HasPrefix(name, managed.PoolName(sc, p.Name)+"-") && ordinal(name) < int(p.Replicas) {
				return true
			}
		}
		return false
	}
	lift := rollout.Lift(sc.Status.DrainingNodes, obs.pods, wanted)
	var adding []string
	for _, n := range add {
		if !slices.Contains(sc.Status.DrainingNodes, n) && !slices.Contains(adding, n) {
			adding = append(adding, n)
		}
	}
	if len(lift) == 0 && len(adding) == 0 {
		return nil
	}
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return err
	}
	settings, err := osClient.PersistentClusterSettings(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, n := range strings.Split(settings[opensearch.AllocationExcludeSetting], ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(lift, n) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range adding {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sc.Status.DrainingNodes = append(sc.Status.DrainingNodes, adding...)
	if err := osClient.ExcludeFromAllocation(ctx, names); err != nil {
		return fmt.Errorf("setting %s: %w", opensearch.AllocationExcludeSetting, err)
	}
	sc.Status.DrainingNodes = slices.DeleteFunc(sc.Status.DrainingNodes, func(n string) bool { return slices.Contains(lift, n) })
	for _, n := range adding {
		r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonNodeDraining, "Drain", "Moving the shards of %s to other nodes (%s)", n, opensearch.AllocationExcludeSetting)
	}
	return nil
}
