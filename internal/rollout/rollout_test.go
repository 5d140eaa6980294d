package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// cluster: pool "cm" with 3 cluster-manager pods, pool "data" with 3 data pods on
// persistent volumes, all ready and outdated unless changed; green, every cluster manager
// a joined voter.
func cluster(edit func(*State)) State {
	s := State{MaxUnavailable: 1, Health: Health{Status: "green", Voting: &Voting{}}}
	for i := range 3 {
		name := "c-cm-" + string(rune('0'+i))
		s.Pods = append(s.Pods, Pod{Name: name, Pool: "cm", Ordinal: i, ClusterManager: true, Ready: true, Outdated: true})
		s.Health.Voting.Voters = append(s.Health.Voting.Voters, name)
		s.Health.Voting.Joined = append(s.Health.Voting.Joined, name)
	}
	for i := range 3 {
		name := "c-data-" + string(rune('0'+i))
		s.Pods = append(s.Pods, Pod{Name: name, Pool: "data", Ordinal: i, Data: true, Persistent: true, Ready: true, Outdated: true})
		s.Health.Voting.Joined = append(s.Health.Voting.Joined, name)
	}
	if edit != nil {
		edit(&s)
	}
	return s
}

func pod(s *State, name string) *Pod {
	for i := range s.Pods {
		if s.Pods[i].Name == name {
			return &s.Pods[i]
		}
	}
	panic(name)
}

func started(index, shard, node string, primary bool) Shard {
	return Shard{Index: index, Shard: shard, Primary: primary, State: "STARTED", Node: node}
}

// replicated: index vec, three shards with one replica each, spread over the data pods.
func replicated(s *State) {
	s.Health.Shards = []Shard{
		started("vec", "0", "c-data-0", true), started("vec", "0", "c-data-1", false),
		started("vec", "1", "c-data-1", true), started("vec", "1", "c-data-2", false),
		started("vec", "2", "c-data-2", true), started("vec", "2", "c-data-0", false),
	}
}

// expireIn: the named pods' certificates end in d; the margin is an hour.
func expireIn(s *State, d time.Duration, names ...string) {
	s.Now, s.ExpiryMargin = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), time.Hour
	for _, n := range names {
		pod(s, n).CertificatesExpire = s.Now.Add(d)
	}
}

func upToDate(s *State, names ...string) {
	for _, n := range names {
		pod(s, n).Outdated = false
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		state     State
		restart   string
		drain     string
		blockedBy string
		reason    string
		handOver  string
	}{
		{name: "green: highest data pod first", state: cluster(nil), restart: "c-data-2", blockedBy: "max_unavailable"},
		{name: "nothing outdated", state: cluster(func(s *State) {
			for i := range s.Pods {
				s.Pods[i].Outdated = false
			}
		})},
		{name: "a pod restarting holds the next", state: cluster(func(s *State) {
			pod(s, "c-data-2").Outdated, pod(s, "c-data-2").Ready = false, false
		}), blockedBy: "max_unavailable", reason: "c-data-1: 1 pods unavailable, maxUnavailable is 1"},
		{name: "a missing pod counts as unavailable", state: cluster(func(s *State) { s.Missing = 1 }),
			blockedBy: "max_unavailable"},
		{name: "maxUnavailable 2 restarts two data pods that share no shard", state: cluster(func(s *State) { s.MaxUnavailable = 2 }), restart: "c-data-2,c-data-1", blockedBy: "max_unavailable"},
		{name: "maxUnavailable 2, green, replicas 1: two pods holding copies of one shard never go together", state: cluster(func(s *State) {
			s.MaxUnavailable = 2
			replicated(s)
		}), restart: "c-data-2,c-cm-2", blockedBy: "do_not_restart_pods_with_same_shards",
			reason: "c-data-1: it shares shard vec/1 with c-data-2, which restarts in this step"},
		{name: "green with 0 replicas: the node with the only copy is drained, not restarted", state: cluster(func(s *State) {
			s.Health.Shards = []Shard{started("vec", "0", "c-data-2", true), started("vec", "1", "c-data-1", true)}
			upToDate(s, "c-data-0", "c-data-1")
		}), restart: "c-cm-2", drain: "c-data-2", blockedBy: "require_started_replica",
			reason: "c-data-2: it holds the only copy of vec/0: moving its shards to other nodes before it restarts"},
		{name: "one node drains at a time", state: cluster(func(s *State) {
			s.Health.Shards = []Shard{started("vec", "0", "c-data-2", true), started("vec", "1", "c-data-1", true)}
			s.Draining = []string{"c-data-2"}
			s.Health.Shards[0].State, s.Health.Shards[0].RelocatingTo = "RELOCATING", "c-data-0"
		}), restart: "c-cm-2", blockedBy: "require_started_replica",
			reason: "c-data-2: shard copies are moving to or from it: vec/0"},
		{name: "a drained node restarts", state: cluster(func(s *State) {
			s.Health.Shards = []Shard{started("vec", "0", "c-data-0", true), started("vec", "1", "c-data-1", true)}
			s.Draining = []string{"c-data-2"}
		}), restart: "c-data-2", blockedBy: "max_unavailable"},
		{name: "the only data node on a persistent volume restarts", state: cluster(func(s *State) {
			s.Pods = s.Pods[:4]
			s.Health.Shards = []Shard{started("vec", "0", "c-data-0", true)}
		}), restart: "c-data-0", blockedBy: "max_unavailable"},
		{name: "the only data node on an emptyDir never restarts with data", state: cluster(func(s *State) {
			s.Pods = s.Pods[:4]
			pod(s, "c-data-0").Persistent = false
			upToDate(s, "c-cm-0", "c-cm-1", "c-cm-2")
			s.Health.Shards = []Shard{started("vec", "0", "c-data-0", true)}
		}), blockedBy: "require_started_replica",
			reason: "c-data-0: it holds the only copy of vec/0, no other data node can take it, and its data folder is an emptyDir: a restart would lose it (give the pool storage or add a data node)"},
		{name: "a relocating copy holds its source", state: cluster(func(s *State) {
			replicated(s)
			s.Health.Shards[4].State, s.Health.Shards[4].RelocatingTo = "RELOCATING", "c-data-1"
			upToDate(s, "c-data-0", "c-data-1")
		}), restart: "c-cm-2", blockedBy: "require_started_replica", reason: "c-data-2: shard copies are moving to or from it: vec/2"},
		{name: "a relocating copy holds its target", state: cluster(func(s *State) {
			replicated(s)
			s.Health.Shards[4].State, s.Health.Shards[4].RelocatingTo = "RELOCATING", "c-data-1"
			upToDate(s, "c-data-0", "c-data-2")
		}), restart: "c-cm-2", blockedBy: "require_started_replica", reason: "c-data-1: shard copies are moving to or from it: vec/2"},
		{name: "red holds", state: cluster(func(s *State) { s.Health.Status = "red" }),
			blockedBy: "cluster_health", reason: "c-data-2: cluster health is red"},
		{name: "unreachable holds", state: cluster(func(s *State) { s.Health = Health{} }),
			blockedBy: "cluster_health"},
		{name: "red: a pod whose certificates end within the margin restarts, one at a time", state: cluster(func(s *State) {
			s.Health.Status = "red"
			expireIn(s, 30*time.Minute, "c-data-2", "c-data-1")
		}), restart: "c-data-2", blockedBy: "max_unavailable"},
		{name: "red: certificates ending after the margin hold", state: cluster(func(s *State) {
			s.Health.Status = "red"
			expireIn(s, 2*time.Hour, "c-data-2", "c-data-1")
		}), blockedBy: "cluster_health", reason: "c-data-2: cluster health is red"},
		{name: "unreachable: an expiring cluster manager restarts, the others hold", state: cluster(func(s *State) {
			s.Health = Health{}
			upToDate(s, "c-data-0", "c-data-1", "c-data-2")
			expireIn(s, time.Minute, "c-cm-1")
		}), restart: "c-cm-1", blockedBy: "cluster_health", reason: "c-cm-2: cluster health unknown: OpenSearch does not answer"},
		{name: "an expiring pod still waits for the holders of its copies", state: cluster(func(s *State) {
			replicated(s)
			s.MaxUnavailable = 2
			pod(s, "c-data-0").Ready = false
			expireIn(s, time.Minute, "c-data-1")
			upToDate(s, "c-data-0", "c-data-2")
		}), restart: "c-cm-2", blockedBy: "copy_holders_ready", reason: "c-data-1: other copies of its shards are on pods that are not ready: c-data-0 (vec/0)"},
		{name: "broken pods restart even when the cluster is down, one cluster manager per step", state: cluster(func(s *State) {
			s.Health = Health{}
			for i := range s.Pods {
				s.Pods[i].Ready = false
			}
		}), restart: "c-data-2,c-data-1,c-data-0,c-cm-2", blockedBy: "cluster_manager_quorum"},
		{name: "yellow from our own restarted node may proceed", state: cluster(func(s *State) {
			s.Health = Health{Status: "yellow", Voting: s.Health.Voting, Shards: []Shard{
				started("vec", "0", "c-data-1", true), started("vec", "0", "c-data-0", false), {Index: "vec", Shard: "0", State: "UNASSIGNED"},
			}}
			upToDate(s, "c-data-2")
		}), restart: "c-data-1", blockedBy: "max_unavailable"},
		{name: "yellow: the only started copy holds, and waits rather than drains", state: cluster(func(s *State) {
			s.Health = Health{Status: "yellow", Voting: s.Health.Voting, Shards: []Shard{
				started("vec", "0", "c-data-1", true), {Index: "vec", Shard: "0", State: "INITIALIZING", Node: "c-data-2"},
				started("vec", "1", "c-data-0", true), started("vec", "1", "c-data-2", false),
			}}
			upToDate(s, "c-data-2")
		}), restart: "c-data-0", blockedBy: "require_started_replica",
			reason: "c-data-1: it holds the only started copy of vec/0 on a pod that stays up; waiting for the other copies to recover"},
		{name: "a node back in the cluster is not counted on before its pod is ready", state: cluster(func(s *State) {
			s.MaxUnavailable = 2
			replicated(s)
			upToDate(s, "c-data-2")
			pod(s, "c-data-2").Ready = false // rejoined, its copies started, the readiness probe not yet passed
		}), restart: "c-cm-2", blockedBy: "copy_holders_ready",
			reason: "c-data-1: other copies of its shards are on pods that are not ready: c-data-2 (vec/1)"},
		{name: "the other copy on a pod being deleted: wait, never drain", state: cluster(func(s *State) {
			s.MaxUnavailable = 2
			replicated(s)
			upToDate(s, "c-data-2")
			pod(s, "c-data-2").Terminating = true
		}), restart: "c-cm-2", blockedBy: "copy_holders_ready",
			reason: "c-data-1: other copies of its shards are on pods that are not ready: c-data-2 (vec/1)"},
		{name: "a starved pod (not ready, its node still serving its copies) waits while another holder of its shards is down", state: cluster(func(s *State) {
			s.MaxUnavailable = 2
			replicated(s)
			upToDate(s, "c-data-2")
			pod(s, "c-data-2").Ready = false // restarted, recovering
			pod(s, "c-data-0").Ready = false // its readiness probe timed out on a busy machine
		}), blockedBy: "copy_holders_ready",
			reason: "c-data-0: other copies of its shards are on pods that are not ready: c-data-2 (vec/2)"},
		{name: "a starved pod restarts within maxUnavailable, and counts against it", state: cluster(func(s *State) {
			s.MaxUnavailable = 2
			replicated(s)
			upToDate(s, "c-data-2")
			pod(s, "c-data-2").Terminating = true
			pod(s, "c-cm-0").Ready = false // in the cluster, failing its probe
		}), restart: "c-cm-0", blockedBy: "max_unavailable", reason: "c-data-1: 2 pods unavailable, maxUnavailable is 2"},
		{name: "a starved cluster manager counts against maxUnavailable like a ready one", state: cluster(func(s *State) {
			pod(s, "c-data-2").Terminating = true
			pod(s, "c-cm-0").Ready = false // joined, voting, failing its readiness probe
		}), blockedBy: "max_unavailable", reason: "c-cm-0: 1 pods unavailable, maxUnavailable is 1"},
		{name: "a starved pod is weighed like a ready one: it waits while the cluster is red", state: cluster(func(s *State) {
			s.Health.Status = "red"
			pod(s, "c-data-0").Ready = false
		}), blockedBy: "cluster_health", reason: "c-data-0: cluster health is red"},
		{name: "pods a bad configuration keeps out of the cluster restart to a fix", state: cluster(func(s *State) {
			s.Health.Status = "red"
			s.Health.Voting.Joined = []string{"c-cm-0", "c-cm-1", "c-cm-2"}
			for _, n := range []string{"c-data-0", "c-data-1", "c-data-2"} {
				pod(s, n).Ready = false
			}
			s.Health.Shards = []Shard{{Index: "vec", Shard: "0", Primary: true, State: "UNASSIGNED"}, {Index: "vec", Shard: "0", State: "UNASSIGNED"}}
		}), restart: "c-data-2,c-data-1,c-data-0", blockedBy: "max_unavailable", reason: "c-cm-2: 3 pods unavailable, maxUnavailable is 1"},
		// Every probe timed out on a starved machine and the cluster manager does not answer:
		// nothing says the nodes left the cluster, and they had been serving.
		{name: "a starved cluster that does not answer restarts nobody", state: cluster(func(s *State) {
			s.MaxUnavailable = 2
			s.Health = Health{}
			for i := range s.Pods {
				s.Pods[i].Ready, s.Pods[i].ServedSinceStart = false, true
			}
		}), blockedBy: "max_unavailable", reason: "c-data-2: 5 pods unavailable, maxUnavailable is 2"},
		{name: "pods that never came up restart to a fix while nothing answers", state: cluster(func(s *State) {
			s.Health = Health{}
			for i := range s.Pods {
				s.Pods[i].Ready = false
			}
		}), restart: "c-data-2,c-data-1,c-data-0,c-cm-2", blockedBy: "cluster_manager_quorum", reason: "c-cm-1: c-cm-2 (cluster manager) restarts in this step"},
		{name: "one node a bad configuration keeps out restarts while the others serve", state: cluster(func(s *State) {
			s.Health.Status = "yellow"
			replicated(s)
			s.Health.Voting.Joined = slices.DeleteFunc(s.Health.Voting.Joined, func(n string) bool { return n == "c-data-2" })
			s.Health.Shards = slices.DeleteFunc(s.Health.Shards, func(sh Shard) bool { return sh.Node == "c-data-2" })
			upToDate(s, "c-data-0", "c-data-1")
			pod(s, "c-data-2").Ready = false
		}), restart: "c-data-2", blockedBy: "max_unavailable"},
		{name: "a warm-only pool's node holding the only copy of a searchable snapshot restarts, never drains", state: cluster(func(s *State) {
			upToDate(s, "c-cm-0", "c-cm-1", "c-cm-2", "c-data-0", "c-data-1", "c-data-2")
			s.Pods = append(s.Pods, Pod{Name: "c-warm-0", Pool: "warm", Remote: true, Ready: true, Outdated: true})
			s.Health.Shards = []Shard{started("archive", "0", "c-warm-0", true), started("vec", "0", "c-data-0", true)}
		}), restart: "c-warm-0"},
		{name: "a warm node still waits for a copy it shares with a node that is down", state: cluster(func(s *State) {
			upToDate(s, "c-cm-0", "c-cm-1", "c-cm-2", "c-data-0", "c-data-1", "c-data-2")
			s.MaxUnavailable = 2
			s.Pods = append(s.Pods, Pod{Name: "c-warm-0", Pool: "warm", Remote: true, Ready: true, Outdated: true},
				Pod{Name: "c-warm-1", Pool: "warm", Remote: true, Ready: false, Outdated: false})
			s.Health.Shards = []Shard{started("archive", "0", "c-warm-0", true), started("archive", "0", "c-warm-1", false)}
		}), blockedBy: "copy_holders_ready", reason: "c-warm-0: other copies of its shards are on pods that are not ready: c-warm-1 (archive/0)"},
		{name: "the only data node with an unassigned replica restarts on a volume", state: cluster(func(s *State) {
			s.Pods = s.Pods[:4]
			s.Health.Status = "yellow"
			s.Health.Shards = []Shard{started("vec", "0", "c-data-0", true), {Index: "vec", Shard: "0", State: "UNASSIGNED"}}
		}), restart: "c-data-0", blockedBy: "max_unavailable"},
		{name: "a ready cluster manager waits while another voter is out of the cluster", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2")
			s.Health.Voting.Joined = []string{"c-cm-1", "c-cm-2"}
			pod(s, "c-cm-0").Ready, pod(s, "c-cm-0").Outdated = false, false
			s.MaxUnavailable = 2
		}), blockedBy: "cluster_manager_quorum", reason: "c-cm-2: without it 1 of the 3 voters would be in the cluster, no majority"},
		{name: "a not-ready cluster manager that still votes keeps its vote", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-2")
			pod(s, "c-cm-2").Terminating, pod(s, "c-cm-2").Ready = true, false
			pod(s, "c-cm-0").Ready = false // joined, voting, failing its readiness probe
			s.MaxUnavailable = 3
		}), blockedBy: "cluster_manager_quorum", reason: "c-cm-0: without it 1 of the 3 voters would be in the cluster, no majority"},
		{name: "a cluster manager out of the cluster holds no vote", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-1", "c-cm-2")
			pod(s, "c-cm-0").Ready = false
			s.Health.Voting.Joined = []string{"c-cm-1", "c-cm-2"}
		}), restart: "c-cm-0"},
		{name: "a single voter restarts", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-1", "c-cm-2")
			s.Health.Voting.Voters = []string{"c-cm-0"}
		}), restart: "c-cm-0"},
		{name: "one cluster manager per step", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2")
			s.MaxUnavailable = 6
		}), restart: "c-cm-2", blockedBy: "cluster_manager_quorum", reason: "c-cm-1: c-cm-2 (cluster manager) restarts in this step"},
		{name: "upgrade: cluster managers after data", state: cluster(func(s *State) {
			s.VersionUpgrade = true
			s.MaxUnavailable = 5
			pod(s, "c-data-0").Ready = false
		}), restart: "c-data-0,c-data-2,c-data-1", blockedBy: "data_before_cluster_manager"},
		{name: "upgrade: paused while yellow", state: cluster(func(s *State) {
			s.VersionUpgrade = true
			s.Health.Status = "yellow"
		}), blockedBy: "cluster_health", reason: "c-data-2: version upgrade paused: cluster health is yellow, it goes on when green"},
		{name: "upgrade: refused by its pre-flight, nothing restarts, not even a pod that is down", state: cluster(func(s *State) {
			s.VersionUpgrade = true
			s.Refused = []string{"old: created by OpenSearch 1.3.0"}
			pod(s, "c-data-0").Ready = false
		}), blockedBy: "upgrade_preflight", reason: "c-data-0: version upgrade refused before it started: old: created by OpenSearch 1.3.0"},
		{name: "config change: cluster managers need not wait for data", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1")
			pod(s, "c-data-2").Ready = false
			s.MaxUnavailable = 2
		}), restart: "c-data-2,c-cm-2", blockedBy: "max_unavailable"},
		{name: "terminating pods are left alone and count", state: cluster(func(s *State) {
			pod(s, "c-data-2").Terminating = true
		}), blockedBy: "max_unavailable"},
		{name: "leaving pods are not restarted", state: cluster(func(s *State) {
			pod(s, "c-data-2").Leaving = true
		}), restart: "c-data-1", blockedBy: "max_unavailable"},
		{name: "the elected cluster manager goes last", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2")
			s.Health.Voting.Manager = "c-cm-2"
		}), restart: "c-cm-1", blockedBy: "max_unavailable"},
		{name: "the elected cluster manager hands its role over before it stops", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-0", "c-cm-1")
			s.Health.Voting.Manager = "c-cm-2"
		}), blockedBy: "cluster_manager_hand_over", handOver: "c-cm-2",
			reason: "c-cm-2: it is the elected cluster manager: handing its role to another node first"},
		{name: "out of the voting configuration and still elected: it waits", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-0", "c-cm-1")
			s.Health.Voting.Manager, s.Health.Voting.Excluded = "c-cm-2", []string{"c-cm-2"}
		}), blockedBy: "cluster_manager_hand_over",
			reason: "c-cm-2: it is the elected cluster manager, out of the voting configuration: waiting for another node to be elected"},
		{name: "handed over: it restarts", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-0", "c-cm-1")
			s.Health.Voting.Manager, s.Health.Voting.Excluded = "c-cm-0", []string{"c-cm-2"}
			s.Health.Voting.Voters = []string{"c-cm-0", "c-cm-1"}
		}), restart: "c-cm-2"},
		{name: "someone else's voting exclusions: no hand-over, which would clear them", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-0", "c-cm-1")
			s.Health.Voting.Manager, s.Health.Voting.Excluded = "c-cm-2", []string{"gone-node"}
		}), restart: "c-cm-2"},
		{name: "the only voter restarts without a hand-over", state: cluster(func(s *State) {
			upToDate(s, "c-data-0", "c-data-1", "c-data-2", "c-cm-0", "c-cm-1")
			s.Health.Voting.Manager, s.Health.Voting.Voters = "c-cm-2", []string{"c-cm-2"}
		}), restart: "c-cm-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.state)
			if got := strings.Join(p.Restart, ","); got != tc.restart {
				t.Errorf("restart %q, want %q", got, tc.restart)
			}
			if got := strings.Join(p.Drain, ","); got != tc.drain {
				t.Errorf("drain %q, want %q", got, tc.drain)
			}
			if p.BlockedBy != tc.blockedBy {
				t.Errorf("blockedBy %q (%s), want %q", p.BlockedBy, p.Reason, tc.blockedBy)
			}
			if tc.reason != "" && p.Reason != tc.reason {
				t.Errorf("reason %q, want %q", p.Reason, tc.reason)
			}
			if p.HandOver != tc.handOver {
				t.Errorf("hand over %q, want %q", p.HandOver, tc.handOver)
			}
		})
	}
}

func TestNextRemoval(t *testing.T) {
	leaving := func(s *State, name string) Pod {
		p := pod(s, name)
		p.Leaving = true
		return *p
	}
	for _, tc := range []struct {
		name   string
		state  State
		node   string
		action RemovalAction
		msg    string
	}{
		{name: "a data node with shards drains, whatever its replicas", state: cluster(replicated), node: "c-data-2",
			action: RemovalDrain, msg: "moving 2 shard copies off c-data-2 (vec/1, vec/2)"},
		{name: "a data node receiving a copy drains", state: cluster(func(s *State) {
			s.Health.Shards = []Shard{{Index: "vec", Shard: "0", State: "RELOCATING", Node: "c-data-0", RelocatingTo: "c-data-2"}}
		}), node: "c-data-2", action: RemovalDrain},
		{name: "an empty data node goes", state: cluster(func(s *State) {
			s.Health.Shards = []Shard{started("vec", "0", "c-data-0", true)}
		}), node: "c-data-2", action: RemovalRemove},
		{name: "a voting cluster manager gives its vote up first", state: cluster(nil), node: "c-cm-2", action: RemovalExcludeVote},
		{name: "an excluded cluster manager goes", state: cluster(func(s *State) {
			s.Health.Voting.Voters = []string{"c-cm-0", "c-cm-1"}
			s.Health.Voting.Excluded = []string{"c-cm-2"}
		}), node: "c-cm-2", action: RemovalRemove},
		{name: "waits for red", state: cluster(func(s *State) { s.Health.Status = "red" }), node: "c-data-2",
			action: RemovalWait, msg: "cluster health is red"},
		{name: "waits for OpenSearch", state: cluster(func(s *State) { s.Health = Health{} }), node: "c-data-2", action: RemovalWait},
		{name: "waits for a restarting pod", state: cluster(func(s *State) { pod(s, "c-data-0").Ready = false }), node: "c-data-2",
			action: RemovalWait, msg: "c-data-0 is not ready"},
		{name: "waits with an unknown voting configuration", state: cluster(func(s *State) { s.Health.Voting = nil }), node: "c-cm-2", action: RemovalWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.state
			r := NextRemoval(s, leaving(&s, tc.node))
			if r.Action != tc.action || (tc.msg != "" && r.Message != tc.msg) {
				t.Errorf("%s %q, want %s %q", r.Action, r.Message, tc.action, tc.msg)
			}
		})
	}
}

func TestLift(t *testing.T) {
	s := cluster(func(s *State) {
		upToDate(s, "c-data-0")
		pod(s, "c-data-1").Leaving = true
		upToDate(s, "c-data-1")
	})
	wanted := func(n string) bool { return n != "c-data-9" }
	got := Lift([]string{"c-data-0", "c-data-1", "c-data-2", "c-data-9", "c-data-5"}, s.Pods, wanted)
	// c-data-0 back on the current revision; c-data-9 gone for good. c-data-1 leaves,
	// c-data-2 has not restarted yet, c-data-5 is wanted and not created yet.
	if strings.Join(got, ",") != "c-data-0,c-data-9" {
		t.Errorf("lifted %v", got)
	}
}
