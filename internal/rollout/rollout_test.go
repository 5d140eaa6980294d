package rollout

import (
	"strings"
	"testing"
)

// cluster: pool "cm" with 3 cluster-manager pods, pool "data" with 3 data pods, all ready
// and outdated unless changed.
func cluster(edit func(*State)) State {
	s := State{MaxUnavailable: 1, Health: Health{Status: "green"}}
	for i := range 3 {
		s.Pods = append(s.Pods, Pod{Name: "c-cm-" + string(rune('0'+i)), Pool: "cm", Ordinal: i, ClusterManager: true, Ready: true, Outdated: true})
	}
	for i := range 3 {
		s.Pods = append(s.Pods, Pod{Name: "c-data-" + string(rune('0'+i)), Pool: "data", Ordinal: i, Ready: true, Outdated: true})
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

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		state     State
		restart   string
		blockedBy string
		reason    string
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
		{name: "maxUnavailable 2 restarts two data pods", state: cluster(func(s *State) { s.MaxUnavailable = 2 }), restart: "c-data-2,c-data-1", blockedBy: "max_unavailable"},
		{name: "maxUnavailable 4: never two cluster managers at once", state: cluster(func(s *State) {
			s.MaxUnavailable = 4
		}), restart: "c-data-2,c-data-1,c-data-0,c-cm-2", blockedBy: "max_unavailable"},
		{name: "maxUnavailable 6: still one cluster manager per step", state: cluster(func(s *State) { s.MaxUnavailable = 6 }),
			restart: "c-data-2,c-data-1,c-data-0,c-cm-2", blockedBy: "one_cluster_manager_at_a_time", reason: "c-cm-1: c-cm-2 (cluster manager) restarts in this step"},
		{name: "red holds", state: cluster(func(s *State) { s.Health.Status = "red" }),
			blockedBy: "cluster_health", reason: "c-data-2: cluster health is red"},
		{name: "unreachable holds", state: cluster(func(s *State) { s.Health.Status = "" }),
			blockedBy: "cluster_health"},
		{name: "a broken pod restarts even when the cluster is down", state: cluster(func(s *State) {
			s.Health.Status = ""
			for i := range s.Pods {
				s.Pods[i].Ready = false
			}
		}), restart: "c-data-2,c-data-1,c-data-0,c-cm-2,c-cm-1,c-cm-0"},
		{name: "yellow from our own restarted node may proceed", state: cluster(func(s *State) {
			s.Health = Health{Status: "yellow", Shards: []Shard{
				{"vec", "0", true, "STARTED", "c-data-1"}, {"vec", "0", false, "STARTED", "c-data-0"}, {"vec", "0", false, "INITIALIZING", "c-data-2"},
			}}
			pod(s, "c-data-2").Outdated = false
		}), restart: "c-data-1", blockedBy: "max_unavailable"},
		{name: "yellow: the only started copy holds", state: cluster(func(s *State) {
			s.Health = Health{Status: "yellow", Shards: []Shard{
				{"vec", "0", true, "STARTED", "c-data-1"}, {"vec", "0", false, "INITIALIZING", "c-data-2"},
				{"vec", "1", true, "STARTED", "c-data-0"}, {"vec", "1", false, "STARTED", "c-data-2"},
			}}
			pod(s, "c-data-2").Outdated = false
		}), restart: "c-data-0", blockedBy: "require_started_replica",
			reason: "c-data-1: cluster is yellow and the pod holds the only started copy of vec/0"},
		{name: "cluster manager waits for a not-ready cluster manager", state: cluster(func(s *State) {
			for _, n := range []string{"c-data-0", "c-data-1", "c-data-2"} {
				pod(s, n).Outdated = false
			}
			pod(s, "c-cm-0").Outdated, pod(s, "c-cm-0").Ready = false, false
			s.MaxUnavailable = 2
		}), blockedBy: "one_cluster_manager_at_a_time", reason: "c-cm-2: c-cm-0 (cluster manager) is not ready"},
		{name: "upgrade: cluster managers after data", state: cluster(func(s *State) {
			s.VersionUpgrade = true
			s.MaxUnavailable = 5
			pod(s, "c-data-0").Ready = false
		}), restart: "c-data-0,c-data-2,c-data-1", blockedBy: "data_before_cluster_manager"},
		{name: "config change: cluster managers need not wait for data", state: cluster(func(s *State) {
			for _, n := range []string{"c-data-0", "c-data-1"} {
				pod(s, n).Outdated = false
			}
			pod(s, "c-data-2").Ready = false
			s.MaxUnavailable = 2
		}), restart: "c-data-2,c-cm-2", blockedBy: "max_unavailable"},
		{name: "terminating pods are left alone and count", state: cluster(func(s *State) {
			pod(s, "c-data-2").Terminating = true
		}), blockedBy: "max_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.state)
			if got := strings.Join(p.Restart, ","); got != tc.restart {
				t.Errorf("restart %q, want %q", got, tc.restart)
			}
			if p.BlockedBy != tc.blockedBy {
				t.Errorf("blockedBy %q (%s), want %q", p.BlockedBy, p.Reason, tc.blockedBy)
			}
			if tc.reason != "" && p.Reason != tc.reason {
				t.Errorf("reason %q, want %q", p.Reason, tc.reason)
			}
		})
	}
}
