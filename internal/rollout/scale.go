package rollout

import (
	"fmt"
	"slices"
	"strings"
)

// RemovalAction is the next thing to do for a node that leaves the cluster.
type RemovalAction string

// Removal actions, in the order a leaving node goes through them.
const (
	// RemovalWait: something else must settle first.
	RemovalWait RemovalAction = "Wait"
	// RemovalDrain: exclude the node from shard allocation and wait until it holds no
	// shard copy.
	RemovalDrain RemovalAction = "Drain"
	// RemovalExcludeVote: take the node out of the voting configuration.
	RemovalExcludeVote RemovalAction = "ExcludeVote"
	// RemovalRemove: the node holds nothing and no vote; its pod can go.
	RemovalRemove RemovalAction = "Remove"
)

// Removal is the next step of a leaving node, and why.
type Removal struct {
	Node    string
	Action  RemovalAction
	Message string
}

// NextRemoval decides the next step for the leaving node n, one node at a time: the rest
// of the cluster ready and answering; then its shards moved to other nodes
// (cluster.routing.allocation.exclude._name), which the operator waits for whatever the
// index's replicas, so no copy is lost and the cluster never turns red; then, for a
// cluster manager, its vote moved (voting configuration exclusion) so the remaining
// managers keep a majority; then its pod removed.
func NextRemoval(s State, n Pod) Removal {
	wait := func(format string, args ...any) Removal {
		return Removal{Node: n.Name, Action: RemovalWait, Message: fmt.Sprintf(format, args...)}
	}
	switch s.Health.Status {
	case "green", "yellow":
	case "":
		return wait("cluster health unknown: OpenSearch does not answer")
	default:
		return wait("cluster health is %s", s.Health.Status)
	}
	for _, p := range s.Pods {
		if p.Name != n.Name && (!p.Ready || p.Terminating) {
			return wait("%s is not ready", p.Name)
		}
	}
	if s.Missing > 0 {
		return wait("%d pods not created yet", s.Missing)
	}
	if held := copiesOn(s.Health.Shards, n.Name); len(held) > 0 {
		ids := map[string]bool{}
		for _, sh := range held {
			ids[shardID(sh)] = true
		}
		list := make([]string, 0, len(ids))
		for id := range ids {
			list = append(list, id)
		}
		slices.Sort(list)
		if len(list) > 5 {
			list = append(list[:5], "…")
		}
		return Removal{Node: n.Name, Action: RemovalDrain, Message: fmt.Sprintf("moving %d shard copies off %s (%s)", len(held), n.Name, strings.Join(list, ", "))}
	}
	if n.ClusterManager {
		v := s.Health.Voting
		if v == nil {
			return wait("the voting configuration is unknown")
		}
		if slices.Contains(v.Voters, n.Name) {
			return Removal{Node: n.Name, Action: RemovalExcludeVote, Message: "moving " + n.Name + "'s vote to the remaining cluster managers"}
		}
	}
	return Removal{Node: n.Name, Action: RemovalRemove, Message: "removing " + n.Name + ": it holds no shard and no vote"}
}

// Lift are the drained nodes whose exclusion from allocation can go: a node that is gone
// for good (no pod, not wanted), or one drained for a restart that is back, ready and on
// the current revision (its shards may return).
func Lift(draining []string, pods []Pod, wanted func(name string) bool) []string {
	var out []string
	for _, d := range draining {
		i := slices.IndexFunc(pods, func(p Pod) bool { return p.Name == d })
		switch {
		case i < 0 && !wanted(d):
			out = append(out, d)
		case i >= 0 && pods[i].Ready && !pods[i].Terminating && !pods[i].Outdated && !pods[i].Leaving:
			out = append(out, d)
		}
	}
	return out
}
