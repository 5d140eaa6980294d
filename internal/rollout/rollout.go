// Package rollout decides which pods of a managed cluster to restart next so a
// configuration, image or version change reaches every node without losing availability.
// Like ECK, a restart happens only when every named predicate allows it; when none can
// proceed, the first predicate that holds the first candidate is reported.
package rollout

import (
	"fmt"
	"sort"
	"strings"
)

// Pod is what the planner knows of one OpenSearch pod.
type Pod struct {
	Name           string
	Pool           string
	Ordinal        int
	ClusterManager bool
	Ready          bool
	Terminating    bool
	// Outdated: the pod runs an older revision of its StatefulSet.
	Outdated bool
}

// Shard is one shard copy as _cat/shards reports it; Node is the OpenSearch node name,
// which is the pod name.
type Shard struct {
	Index   string
	Shard   string
	Primary bool
	State   string
	Node    string
}

// Health is the cluster's health as the planner sees it. Status is empty when the cluster
// could not be asked.
type Health struct {
	Status string
	Shards []Shard
}

// State is the input of a plan.
type State struct {
	Pods []Pod
	// Missing is the number of pods the StatefulSets want that do not exist yet.
	Missing        int
	MaxUnavailable int
	// VersionUpgrade: the change includes a new OpenSearch version.
	VersionUpgrade bool
	Health         Health
}

// Predicate allows or holds the restart of one candidate; a non-empty result is why not.
type Predicate struct {
	Name  string
	Check func(s State, candidate Pod, chosen []Pod) string
}

// Predicates in evaluation order.
var Predicates = []Predicate{
	{"max_unavailable", maxUnavailable},
	{"cluster_health", clusterHealth},
	{"require_started_replica", requireStartedReplica},
	{"one_cluster_manager_at_a_time", oneClusterManagerAtATime},
	{"data_before_cluster_manager", dataBeforeClusterManager},
}

// Plan is the pods to delete now, and what holds the rest.
type Plan struct {
	Restart []string
	// Pending is the number of outdated pods, including those restarted now.
	Pending int
	// BlockedBy and Reason name the predicate that holds the next candidate; empty when
	// nothing is pending or everything pending was chosen.
	BlockedBy string
	Reason    string
}

// Decide plans the next restarts. Pods that are not ready go first (they serve nothing, and
// restarting them is how a broken configuration gets fixed), then non-cluster-manager pods,
// then by pool and highest ordinal first, as a StatefulSet would.
func Decide(s State) Plan {
	var candidates []Pod
	for _, p := range s.Pods {
		if p.Outdated {
			candidates = append(candidates, p)
		}
	}
	plan := Plan{Pending: len(candidates)}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.Ready != b.Ready {
			return !a.Ready
		}
		if a.ClusterManager != b.ClusterManager {
			return !a.ClusterManager
		}
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		return a.Ordinal > b.Ordinal
	})
	var chosen []Pod
	for _, c := range candidates {
		if c.Terminating {
			continue
		}
		if name, why := check(s, c, chosen); name != "" {
			if plan.BlockedBy == "" {
				plan.BlockedBy, plan.Reason = name, fmt.Sprintf("%s: %s", c.Name, why)
			}
			continue
		}
		chosen = append(chosen, c)
		plan.Restart = append(plan.Restart, c.Name)
	}
	return plan
}

func check(s State, c Pod, chosen []Pod) (string, string) {
	for _, p := range Predicates {
		if why := p.Check(s, c, chosen); why != "" {
			return p.Name, why
		}
	}
	return "", ""
}

func isChosen(chosen []Pod, name string) bool {
	for _, c := range chosen {
		if c.Name == name {
			return true
		}
	}
	return false
}

// maxUnavailable: restarting a ready pod must keep unavailable pods (not ready,
// terminating, not yet created, or chosen in this plan) within the budget. A pod that is
// not ready costs nothing to restart.
func maxUnavailable(s State, c Pod, chosen []Pod) string {
	if !c.Ready {
		return ""
	}
	unavailable := s.Missing + len(chosen)
	for _, p := range s.Pods {
		if (!p.Ready || p.Terminating) && !isChosen(chosen, p.Name) {
			unavailable++
		}
	}
	if unavailable >= s.MaxUnavailable {
		return fmt.Sprintf("%d pods unavailable, maxUnavailable is %d", unavailable, s.MaxUnavailable)
	}
	return ""
}

// clusterHealth: a ready pod is restarted only in a green or yellow cluster that answers.
func clusterHealth(s State, c Pod, _ []Pod) string {
	if !c.Ready {
		return ""
	}
	switch s.Health.Status {
	case "green", "yellow":
		return ""
	case "":
		return "cluster health unknown: OpenSearch does not answer"
	default:
		return "cluster health is " + s.Health.Status
	}
}

// requireStartedReplica: in a yellow cluster a pod may restart only if every shard copy on
// it has another started copy elsewhere. This lets a rollout go on while the cluster is
// yellow only because the node it restarted last is still recovering its replicas, and
// holds it when the candidate has the only started copy of a shard.
func requireStartedReplica(s State, c Pod, chosen []Pod) string {
	if !c.Ready || s.Health.Status != "yellow" {
		return ""
	}
	gone := map[string]bool{c.Name: true}
	for _, p := range chosen {
		gone[p.Name] = true
	}
	var sole []string
	for _, sh := range s.Health.Shards {
		if sh.Node != c.Name || sh.State != "STARTED" {
			continue
		}
		other := false
		for _, o := range s.Health.Shards {
			other = other || (o.Index == sh.Index && o.Shard == sh.Shard && o.State == "STARTED" && !gone[o.Node])
		}
		if !other {
			sole = append(sole, sh.Index+"/"+sh.Shard)
		}
	}
	if len(sole) > 0 {
		return "cluster is yellow and the pod holds the only started copy of " + strings.Join(sole, ", ")
	}
	return ""
}

// oneClusterManagerAtATime: a cluster-manager-eligible pod restarts only when every other
// cluster-manager-eligible pod is ready, so the voting configuration keeps its quorum. A
// cluster manager that is not ready holds no vote, so restarting it costs nothing; this is
// what lets a cluster whose every node is broken by a bad configuration roll to a fix.
func oneClusterManagerAtATime(s State, c Pod, chosen []Pod) string {
	if !c.ClusterManager || !c.Ready {
		return ""
	}
	for _, p := range chosen {
		if p.ClusterManager && p.Ready {
			return p.Name + " (cluster manager) restarts in this step"
		}
	}
	for _, p := range s.Pods {
		if p.ClusterManager && p.Name != c.Name && (!p.Ready || p.Terminating) {
			return p.Name + " (cluster manager) is not ready"
		}
	}
	return ""
}

// dataBeforeClusterManager: on a version upgrade, cluster-manager-eligible pods wait until
// every other pod runs the new version; a newer node can join an older cluster manager,
// not the other way round.
func dataBeforeClusterManager(s State, c Pod, _ []Pod) string {
	if !s.VersionUpgrade || !c.ClusterManager {
		return ""
	}
	var waiting []string
	for _, p := range s.Pods {
		if !p.ClusterManager && (p.Outdated || !p.Ready) {
			waiting = append(waiting, p.Name)
		}
	}
	if len(waiting) > 0 {
		return "version upgrade: non-cluster-manager pods first (" + strings.Join(waiting, ", ") + ")"
	}
	return ""
}

// AllocationSetting is what a rolling restart sets to primaries while a node is down, as
// the OpenSearch rolling-restart procedure says: the cluster does not start copying the
// node's replicas elsewhere for a restart of a minute.
const AllocationSetting = "cluster.routing.allocation.enable"
