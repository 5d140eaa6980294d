// Package rollout decides how a managed cluster changes its nodes without losing a query or
// a shard: which pods to restart next so a configuration, image or version change reaches
// every node, and how a node a shrinking or removed pool no longer wants leaves. Like ECK, a
// restart happens only when every named predicate allows it; when none can proceed, the
// first predicate that holds the first candidate is reported.
package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Pod is what the planner knows of one OpenSearch pod.
type Pod struct {
	Name           string
	Pool           string
	Ordinal        int
	ClusterManager bool
	// Data: the pod's node holds shards (the data role).
	Data bool
	// Persistent: the pod's data folder is on a volume that outlives the pod.
	Persistent bool
	// Remote: the node serves searchable-snapshot copies (warm or search role), whose data
	// is read from the repository: a restart loses none of it, and such a copy can move only
	// to another node of that kind, never to a data node.
	Remote bool
	Ready  bool
	// ServedSinceStart: the pod is ready, or its container has been ready since it last
	// started (see managed.ServedSinceStart) — unready now, but it was serving.
	ServedSinceStart bool
	Terminating      bool
	// Outdated: the pod runs an older revision of its StatefulSet.
	Outdated bool
	// Leaving: its pool no longer wants it (scale-down or pool removal); it is drained and
	// removed, never restarted.
	Leaving bool
	// CertificatesExpire is when the certificates its node started with end (a node reads
	// them at start-up); zero when the cluster has none or it is not known.
	CertificatesExpire time.Time
}

// Shard is one shard copy as _cat/shards reports it; Node is the OpenSearch node name,
// which is the pod name. A RELOCATING copy is on Node and moving to RelocatingTo.
type Shard struct {
	Index        string
	Shard        string
	Primary      bool
	State        string
	Node         string
	RelocatingTo string
}

// Voting is the cluster's voting configuration, as its cluster state records it.
type Voting struct {
	// Voters are the node names of the last committed voting configuration.
	Voters []string
	// Joined are the names of the nodes in the cluster.
	Joined []string
	// Excluded are the node names of the voting configuration exclusions.
	Excluded []string
	// Manager is the elected cluster manager's node name.
	Manager string
}

// ExcludedBesides are the voting exclusions other than node's. OpenSearch clears exclusions
// only all together, so a hand-over's goes only while there are none.
func ExcludedBesides(excluded []string, node string) []string {
	return slices.DeleteFunc(slices.Clone(excluded), func(n string) bool { return n == node })
}

// Health is the cluster as the planner sees it. Status is empty when the cluster could not
// be asked; Shards and Voting are then unknown too.
type Health struct {
	Status string
	Shards []Shard
	// Voting is nil when it could not be read.
	Voting *Voting
}

// State is the input of a plan.
type State struct {
	Pods []Pod
	// Missing is the number of pods the StatefulSets want that do not exist yet.
	Missing        int
	MaxUnavailable int
	// VersionUpgrade: the change includes a new OpenSearch version.
	VersionUpgrade bool
	// Refused is what the upgrade's target version could not serve (Preflight), read
	// while no node has restarted onto it yet.
	Refused []string
	Health  Health
	// Draining are the nodes the operator has excluded from allocation.
	Draining []string
	// Now and ExpiryMargin say which pods are expiring: their certificates end before
	// Now+ExpiryMargin.
	Now          time.Time
	ExpiryMargin time.Duration
}

// Expiring says whether p's node serves certificates that end within the expiry margin. At
// their end the node can no longer talk to the others or to clients, whatever the cluster's
// health: restarting it onto its re-issued certificates first takes nothing more down, so
// the predicates that wait for a healthy, answering cluster let it through.
func (s State) Expiring(p Pod) bool {
	return !p.CertificatesExpire.IsZero() && p.CertificatesExpire.Before(s.Now.Add(s.ExpiryMargin))
}

// Predicate allows or holds the restart of one candidate; a non-empty result is why not.
type Predicate struct {
	Name  string
	Check func(s State, candidate Pod, chosen []Pod, plan *Plan) string
}

// Predicates in evaluation order.
var Predicates = []Predicate{
	{"upgrade_preflight", upgradePreflight},
	{"max_unavailable", maxUnavailable},
	{"cluster_health", clusterHealth},
	{"copy_holders_ready", copyHoldersReady},
	{"require_started_replica", requireStartedReplica},
	{"do_not_restart_pods_with_same_shards", sameShards},
	{"cluster_manager_quorum", clusterManagerQuorum},
	{"data_before_cluster_manager", dataBeforeClusterManager},
	{"cluster_manager_hand_over", handOverClusterManager},
}

// Plan is the pods to delete now, the nodes to drain first, and what holds the rest.
type Plan struct {
	Restart []string
	// Drain are nodes whose shards have no other copy: they are excluded from allocation so
	// their shards move to other nodes, and restart once they hold none.
	Drain []string
	// HandOver is the elected cluster manager to take out of the voting configuration, so
	// that another node is elected while it still serves; it restarts once it is not
	// elected.
	HandOver string
	// Pending is the number of outdated pods, including those restarted now.
	Pending int
	// BlockedBy and Reason name the predicate that holds the next candidate; empty when
	// nothing is pending or everything pending was chosen.
	BlockedBy string
	Reason    string
}

// Decide plans the next restarts. Pods that are not ready go first (restarting them is how a
// broken configuration gets fixed), then non-cluster-manager pods, then cluster-manager
// pods with the elected one last (one election per rollout), then by pool and highest
// ordinal first, as a StatefulSet would.
func Decide(s State) Plan {
	var elected string
	if s.Health.Voting != nil {
		elected = s.Health.Voting.Manager
	}
	var candidates []Pod
	for _, p := range s.Pods {
		if p.Outdated && !p.Leaving {
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
		if (a.Name == elected) != (b.Name == elected) {
			return b.Name == elected
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
		if name, why := check(s, c, chosen, &plan); name != "" {
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

func check(s State, c Pod, chosen []Pod, plan *Plan) (string, string) {
	for _, p := range Predicates {
		if why := p.Check(s, c, chosen, plan); why != "" {
			return p.Name, why
		}
	}
	return "", ""
}

// terminating says whether the pod of node is being deleted.
func (s State) terminating(node string) bool {
	return slices.ContainsFunc(s.Pods, func(p Pod) bool { return p.Name == node && p.Terminating })
}

// Serving says whether p's node takes part in the cluster: its pod is ready, or its node
// has joined the cluster or holds shard copies. A pod can fail its readiness probe while its
// node serves (a probe that timed out on a CPU-starved machine): stopping it stops copies
// and queries like stopping a ready one, so the predicates judge it as one. A pod whose node
// is not in the cluster (crash-looping, or a configuration that cannot join) serves nothing.
// When the cluster does not say who is in it (a starved cluster manager does not answer),
// a pod that was serving since it started is presumed still serving: on a starved machine
// every probe can fail at once, and all the pods would otherwise restart together.
func (s State) Serving(p Pod) bool {
	if p.Ready || len(copiesOn(s.Health.Shards, p.Name)) > 0 {
		return true
	}
	if s.Health.Voting == nil {
		return p.ServedSinceStart
	}
	return slices.Contains(s.Health.Voting.Joined, p.Name)
}

// down says whether the pod of node is down or going down, for whatever reason: not ready,
// being deleted, or restarting in this step (chosen). A node can rejoin and start its
// copies seconds before its readiness probe passes, and a starved node can fail its probe
// while it holds copies: either way it is not counted on.
func (s State) down(chosen []Pod) func(string) bool {
	return func(node string) bool {
		if slices.ContainsFunc(chosen, func(p Pod) bool { return p.Name == node }) {
			return true
		}
		return slices.ContainsFunc(s.Pods, func(p Pod) bool { return p.Name == node && (p.Terminating || !p.Ready) })
	}
}

// gone says which nodes do not count as keeping a copy while c restarts with chosen: c
// itself and every node that is down.
func (s State) gone(c Pod, chosen []Pod) func(string) bool {
	down := s.down(chosen)
	return func(node string) bool { return node == c.Name || down(node) }
}

func names(pods []Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// maxUnavailable: restarting a serving pod must keep unavailable pods (not ready for any
// reason, terminating, not yet created, or chosen in this plan) within the budget. A pod
// whose node serves nothing costs nothing to restart.
func maxUnavailable(s State, c Pod, chosen []Pod, _ *Plan) string {
	if !s.Serving(c) {
		return ""
	}
	unavailable := s.Missing + len(chosen)
	for _, p := range s.Pods {
		if p.Name != c.Name && (!p.Ready || p.Terminating) && !slices.Contains(names(chosen), p.Name) {
			unavailable++
		}
	}
	if unavailable >= s.MaxUnavailable {
		return fmt.Sprintf("%d pods unavailable, maxUnavailable is %d", unavailable, s.MaxUnavailable)
	}
	return ""
}

// upgradePreflight: an upgrade whose pre-flight found what the target version could not
// serve does not start; nothing restarts until the indexes are fixed or the version is set
// back.
func upgradePreflight(s State, _ Pod, _ []Pod, _ *Plan) string {
	if !s.VersionUpgrade || len(s.Refused) == 0 {
		return ""
	}
	return "version upgrade refused before it started: " + strings.Join(s.Refused, "; ")
}

// clusterHealth: a serving pod is restarted only in a green or yellow cluster that
// answers; a version upgrade only in a green one, so every shard has all its copies on nodes
// of one version or the other before the next node changes. An expiring pod (see Expiring)
// restarts in any health: waiting for green would let a red cluster's certificates end.
func clusterHealth(s State, c Pod, _ []Pod, _ *Plan) string {
	if !s.Serving(c) || s.Expiring(c) {
		return ""
	}
	switch s.Health.Status {
	case "green":
		return ""
	case "yellow":
		if s.VersionUpgrade {
			return "version upgrade paused: cluster health is yellow, it goes on when green"
		}
		return ""
	case "":
		return "cluster health unknown: OpenSearch does not answer"
	default:
		return "cluster health is " + s.Health.Status
	}
}

// copyHoldersReady: a pod restarts only while every other node holding a copy of one of
// its shards is up (see down): whatever made that node unready — its own restart, a
// readiness probe that timed out on a starved machine — the two would be down together.
func copyHoldersReady(s State, c Pod, _ []Pod, _ *Plan) string {
	down := s.down(nil)
	var held []string
	for _, sh := range copiesOn(s.Health.Shards, c.Name) {
		for _, o := range s.Health.Shards {
			for _, node := range []string{o.Node, o.RelocatingTo} {
				if node != "" && node != c.Name && sameShard(o, sh) && down(node) {
					if h := fmt.Sprintf("%s (%s)", node, shardID(sh)); !slices.Contains(held, h) {
						held = append(held, h)
					}
				}
			}
		}
	}
	if len(held) > 0 {
		return "other copies of its shards are on pods that are not ready: " + strings.Join(held, ", ")
	}
	return ""
}

// copiesOn are the shard copies a node holds or receives.
func copiesOn(shards []Shard, node string) []Shard {
	var out []Shard
	for _, sh := range shards {
		if sh.Node == node || sh.RelocatingTo == node {
			out = append(out, sh)
		}
	}
	return out
}

func shardID(sh Shard) string { return sh.Index + "/" + sh.Shard }

// startedElsewhere: another started copy of sh is on a node outside gone.
func startedElsewhere(shards []Shard, sh Shard, gone func(string) bool) bool {
	return slices.ContainsFunc(shards, func(o Shard) bool {
		return sameShard(o, sh) && o.Node != sh.Node && o.State == "STARTED" && !gone(o.Node)
	})
}

// onlyCopy: sh has no other copy in the cluster, in any state (an index without replicas).
func onlyCopy(shards []Shard, sh Shard) bool {
	return !slices.ContainsFunc(shards, func(o Shard) bool { return sameShard(o, sh) && o.Node != sh.Node })
}

func sameShard(a, b Shard) bool { return a.Index == b.Index && a.Shard == b.Shard }

// requireStartedReplica, in any health: a pod restarts only when every shard copy it holds
// has another started copy on a node that stays (see gone), and none of its copies is
// moving (a recovery onto it or a relocation off it would be thrown away). A copy whose
// other copies are not started, or are on pods that are down or going down, waits for
// them. A shard whose only copy is on the pod (no replicas) is moved off first in a green
// cluster — the pod is drained, then restarted empty. With no other data node to move to,
// a pod whose data is on a persistent volume restarts (the copy comes back with it,
// unavailable meanwhile); one on an emptyDir never does.
func requireStartedReplica(s State, c Pod, _ []Pod, plan *Plan) string {
	if s.Health.Status == "" {
		return "" // unknown; cluster_health holds ready pods, and an unready one serves nothing
	}
	var moving, waiting, sole []string
	for _, sh := range copiesOn(s.Health.Shards, c.Name) {
		switch {
		case sh.State == "INITIALIZING" || sh.State == "RELOCATING":
			moving = append(moving, shardID(sh))
		case sh.State != "STARTED" || startedElsewhere(s.Health.Shards, sh, s.gone(c, nil)):
		case onlyCopy(s.Health.Shards, sh):
			sole = append(sole, shardID(sh))
		default:
			waiting = append(waiting, shardID(sh))
		}
	}
	if len(moving) > 0 {
		return "shard copies are moving to or from it: " + strings.Join(moving, ", ")
	}
	if len(waiting)+len(sole) == 0 || c.Remote && len(waiting) == 0 {
		// Nothing held alone, or only copies the repository holds too: they come back from
		// it (unavailable meanwhile, as the only copy on a persistent volume).
		return ""
	}
	others, ready := otherDataPods(s, c)
	if others == 0 {
		if c.Persistent {
			return ""
		}
		return "it holds the only copy of " + strings.Join(append(sole, waiting...), ", ") + ", no other data node can take it, and its data folder is an emptyDir: a restart would lose it (give the pool storage or add a data node)"
	}
	if len(waiting) > 0 {
		return "it holds the only started copy of " + strings.Join(waiting, ", ") + " on a pod that stays up; waiting for the other copies to recover"
	}
	copies := strings.Join(sole, ", ")
	if s.Health.Status != "green" || ready == 0 {
		return "it holds the only copy of " + copies + "; it drains when the cluster is green and another data node is ready"
	}
	// One node drains at a time: each drain moves a node's worth of shards.
	for _, d := range append(slices.Clone(plan.Drain), s.Draining...) {
		if d != c.Name {
			return "it holds the only copy of " + copies + "; it drains after " + d
		}
	}
	plan.Drain = append(plan.Drain, c.Name)
	return "it holds the only copy of " + copies + ": moving its shards to other nodes before it restarts"
}

// otherDataPods counts the data pods other than c that stay in the cluster (not leaving),
// and those of them that are ready and not being deleted, which can take c's shards now.
func otherDataPods(s State, c Pod) (others, ready int) {
	for _, p := range s.Pods {
		if p.Data && p.Name != c.Name && !p.Leaving {
			others++
			if p.Ready && !p.Terminating {
				ready++
			}
		}
	}
	return others, ready
}

// sameShards: two pods holding copies of one shard never restart in the same step when
// that shard would be left without a started copy (ECK's
// do_not_delete_pods_with_same_shards).
func sameShards(s State, c Pod, chosen []Pod, _ *Plan) string {
	if len(chosen) == 0 || s.Health.Status == "" {
		return ""
	}
	for _, sh := range copiesOn(s.Health.Shards, c.Name) {
		if sh.State == "STARTED" && !startedElsewhere(s.Health.Shards, sh, s.gone(c, chosen)) {
			return fmt.Sprintf("it shares shard %s with %s, which restarts in this step", shardID(sh), strings.Join(names(chosen), ", "))
		}
	}
	return ""
}

// clusterManagerQuorum: one cluster-manager-eligible pod per step, and only when the
// voting configuration the cluster reports keeps a majority of its voters in the cluster
// without it. A pod that is not in the cluster holds no vote. When the configuration
// cannot be read (no elected cluster manager), only pods that are not ready, or expiring,
// restart: that is how a cluster whose every node is broken by a bad configuration rolls to
// a fix, and how one without a manager gets valid certificates before its old ones end. A
// configuration of one voter cannot keep quorum through any restart of it; it restarts
// (the cluster has no manager until it is back).
func clusterManagerQuorum(s State, c Pod, chosen []Pod, _ *Plan) string {
	if !c.ClusterManager {
		return ""
	}
	for _, p := range chosen {
		if p.ClusterManager {
			return p.Name + " (cluster manager) restarts in this step"
		}
	}
	v := s.Health.Voting
	if v == nil {
		if s.Serving(c) && !s.Expiring(c) {
			return "the voting configuration is unknown: OpenSearch does not answer"
		}
		return ""
	}
	if !slices.Contains(v.Voters, c.Name) || !slices.Contains(v.Joined, c.Name) || len(v.Voters) == 1 {
		return ""
	}
	alive := 0
	for _, n := range v.Voters {
		if n != c.Name && slices.Contains(v.Joined, n) && !s.terminating(n) {
			alive++
		}
	}
	if 2*alive <= len(v.Voters) {
		return fmt.Sprintf("without it %d of the %d voters would be in the cluster, no majority", alive, len(v.Voters))
	}
	return ""
}

// handOverClusterManager: the elected cluster manager hands its role over before it stops —
// taken out of the voting configuration, it abdicates and another node is elected while it
// still serves — so the cluster is never without a manager under load. Stopped unannounced,
// the others must notice, elect and then remove it; on a CPU-starved machine queries were
// lost in that gap. With no other voter in the cluster there is nobody to hand over to; with
// exclusions that are not its own, it restarts as any node.
func handOverClusterManager(s State, c Pod, _ []Pod, plan *Plan) string {
	v := s.Health.Voting
	if v == nil || v.Manager != c.Name || !s.Serving(c) {
		return ""
	}
	others := slices.ContainsFunc(v.Voters, func(n string) bool {
		return n != c.Name && slices.Contains(v.Joined, n) && !s.terminating(n)
	})
	if !others || len(ExcludedBesides(v.Excluded, c.Name)) > 0 {
		// Exclusions of someone else's (a removal's, or the user's) would go with the
		// hand-over's.
		return ""
	}
	if slices.Contains(v.Excluded, c.Name) {
		return "it is the elected cluster manager, out of the voting configuration: waiting for another node to be elected"
	}
	plan.HandOver = c.Name
	return "it is the elected cluster manager: handing its role to another node first"
}

// dataBeforeClusterManager: on a version upgrade, cluster-manager-eligible pods wait until
// every other pod runs the new version; a newer node can join an older cluster manager,
// not the other way round.
func dataBeforeClusterManager(s State, c Pod, _ []Pod, _ *Plan) string {
	if !s.VersionUpgrade || !c.ClusterManager {
		return ""
	}
	var waiting []string
	for _, p := range s.Pods {
		if !p.ClusterManager && !p.Leaving && (p.Outdated || !p.Ready) {
			waiting = append(waiting, p.Name)
		}
	}
	if len(waiting) > 0 {
		return "version upgrade: non-cluster-manager pods first (" + strings.Join(waiting, ", ") + ")"
	}
	return ""
}
