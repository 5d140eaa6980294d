package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// fakeCluster answers clusterAPI from fields, and records the writes.
type fakeCluster struct {
	info       opensearch.ClusterInfo
	infoErr    error
	knn        string
	nodes      []opensearch.NodeVariant
	nodesErr   error
	allocation string
	putErr     error
	puts       []map[string]any
	flushes    int
}

func (f *fakeCluster) Info(context.Context) (opensearch.ClusterInfo, error) { return f.info, f.infoErr }
func (f *fakeCluster) PluginVersion(context.Context, string) (string, error) {
	return f.knn, nil
}
func (f *fakeCluster) NodeVariants(context.Context) ([]opensearch.NodeVariant, error) {
	return f.nodes, f.nodesErr
}
func (f *fakeCluster) FileCacheNodes(context.Context) ([]opensearch.FileCacheNode, error) {
	return nil, nil
}
func (f *fakeCluster) Shards(context.Context) ([]opensearch.ShardCopy, error) { return nil, nil }
func (f *fakeCluster) PersistentClusterSetting(context.Context, string) (string, error) {
	return f.allocation, nil
}
func (f *fakeCluster) PutPersistentClusterSettings(_ context.Context, s map[string]any) error {
	f.puts = append(f.puts, s)
	return f.putErr
}
func (f *fakeCluster) Flush(context.Context) error { f.flushes++; return nil }
func (f *fakeCluster) Voting(context.Context) (opensearch.Voting, error) {
	return opensearch.Voting{}, nil
}
func (f *fakeCluster) ExcludeVoter(context.Context, string) error  { return nil }
func (f *fakeCluster) ClearVotingExclusions(context.Context) error { return nil }

func reconcilerWith(f *fakeCluster, objs ...client.Object) *SearchClusterReconciler {
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).Build()
	return &SearchClusterReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10),
		openSearch: func(context.Context, *v1alpha1.SearchCluster) (clusterAPI, error) { return f, nil }}
}

func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      fakeCluster
		state  conditions.State
		reason string
		retry  bool
	}{
		{"no answer", fakeCluster{infoErr: &opensearch.TransportError{Op: "GET /", Err: errors.New("refused")}}, conditions.Degraded, v1alpha1.ReasonUnreachable, true},
		{"no k-NN plugin", fakeCluster{info: opensearch.ClusterInfo{Version: "3.6.0", Health: "green", Nodes: 1}}, conditions.Degraded, v1alpha1.ReasonKNNPluginMissing, false},
		{"red", fakeCluster{info: opensearch.ClusterInfo{Version: "3.6.0", Health: "red", Nodes: 3}, knn: "3.6.0.0"}, conditions.Degraded, v1alpha1.ReasonClusterRed, false},
		{"green", fakeCluster{info: opensearch.ClusterInfo{Version: "3.6.0", Health: "green", Nodes: 3}, knn: "3.6.0.0"}, conditions.Ready, v1alpha1.ReasonReconciled, false},
	} {
		sc := &v1alpha1.SearchCluster{}
		sc.Status.Health = "stale"
		got := reconcilerWith(&tc.f).probe(context.Background(), sc)
		if got.state != tc.state || got.reason != tc.reason || (got.retry != nil) != tc.retry {
			t.Errorf("%s: probe = %+v, want state %d reason %s retry %v", tc.name, got, tc.state, tc.reason, tc.retry)
		}
		if want := tc.f.info.Health; sc.Status.Health != want {
			t.Errorf("%s: status.health %q, want %q (what OpenSearch said, empty when it said nothing)", tc.name, sc.Status.Health, want)
		}
	}
}

// TestObserveVariants: status.pools reports what OpenSearch says its nodes run, by pool,
// from the nodes the probe read; nothing when the probe could not read them.
func TestObserveVariants(t *testing.T) {
	sprOff := []string{simd.SettingAVX512SPRDisabled}
	nodes := []opensearch.NodeVariant{
		{Name: "vectors-data-0", Attributes: map[string]string{managed.PoolAttribute: "data"}, Disabled: sprOff},
		{Name: "vectors-data-1", Attributes: map[string]string{managed.PoolAttribute: "data"}, Disabled: sprOff},
		{Name: "stranger", Attributes: map[string]string{}},
	}
	obs := poolObservation{cpu: map[string]string{"vectors-data-0": "avx512_spr", "vectors-data-1": "avx512"}}
	pools := func() []v1alpha1.NodePoolStatus {
		return []v1alpha1.NodePoolStatus{{Name: "data"}, {Name: "managers"}}
	}
	green := opensearch.ClusterInfo{Version: "3.6.0", Health: "green", Nodes: 3}
	for _, tc := range []struct {
		name string
		f    fakeCluster
		want map[string]v1alpha1.NodePoolStatus
	}{
		{"OpenSearch answers", fakeCluster{info: green, knn: "3.6.0.0", nodes: nodes}, map[string]v1alpha1.NodePoolStatus{
			"data":     {Name: "data", SIMD: "avx512", OpenSearchNodes: ptr.To[int32](2)},
			"managers": {Name: "managers", OpenSearchNodes: ptr.To[int32](0)},
		}},
		{"the probe found it unreachable", fakeCluster{infoErr: &opensearch.APIError{Status: 503}, nodes: nodes}, map[string]v1alpha1.NodePoolStatus{
			"data": {Name: "data"}, "managers": {Name: "managers"},
		}},
		{"the read fails", fakeCluster{info: green, knn: "3.6.0.0", nodesErr: &opensearch.APIError{Status: 403}}, map[string]v1alpha1.NodePoolStatus{
			"data": {Name: "data"}, "managers": {Name: "managers"},
		}},
	} {
		sc := &v1alpha1.SearchCluster{}
		sc.Status.Pools = pools()
		probe := reconcilerWith(&tc.f).probe(context.Background(), sc)
		observeVariants(sc, obs, probe.nodes)
		for _, p := range sc.Status.Pools {
			want := tc.want[p.Name]
			if p.SIMD != want.SIMD || ptr.Deref(p.OpenSearchNodes, -1) != ptr.Deref(want.OpenSearchNodes, -1) {
				t.Errorf("%s: pool %s reports simd %q, %d nodes; want %q, %d", tc.name, p.Name, p.SIMD,
					ptr.Deref(p.OpenSearchNodes, -1), want.SIMD, ptr.Deref(want.OpenSearchNodes, -1))
			}
		}
	}
}

// TestRollOutStep: the rollout step restarts what the planner allows, prepares OpenSearch
// before a serving node goes down (and holds the restart when it cannot), and lifts the
// allocation restriction once every node is back.
func TestRollOutStep(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	sc.Spec.Managed = &v1alpha1.ManagedCluster{UpdateStrategy: v1alpha1.UpdateStrategy{MaxUnavailable: 1}}
	podObj := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	}
	pods := func(outdated ...bool) []rollout.Pod {
		var out []rollout.Pod
		for i, o := range outdated {
			out = append(out, rollout.Pod{Name: "vectors-data-" + string(rune('0'+i)), Pool: "data", Ordinal: i, Ready: true, Outdated: o})
		}
		return out
	}
	for _, tc := range []struct {
		name                 string
		f                    fakeCluster
		pods                 []rollout.Pod
		restricted           bool
		wantDeleted          int
		wantBlockedBy        string
		wantRestricted       bool
		wantPuts, wantFlushs int
		wantRollout          bool
	}{
		{"nothing outdated", fakeCluster{}, pods(false, false, false), false, 0, "", false, 0, 0, false},
		{"one outdated serving node: prepared, then restarted", fakeCluster{}, pods(false, true, false), false, 1, "", true, 1, 1, true},
		{"preparation refused: the restart waits", fakeCluster{putErr: &opensearch.APIError{Status: 403}}, pods(true, false, false), false, 0, "prepare_restart", true, 1, 0, true},
		{"every node back: the restriction is lifted", fakeCluster{allocation: "primaries"}, pods(false, false, false), true, 0, "", false, 1, 0, false},
		{"a restriction someone else set is left alone", fakeCluster{allocation: "none"}, pods(false, false, false), true, 0, "", false, 0, 0, false},
	} {
		s := sc.DeepCopy()
		s.Status.AllocationRestricted = tc.restricted
		r := reconcilerWith(&tc.f, podObj("vectors-data-0"), podObj("vectors-data-1"), podObj("vectors-data-2"))
		r.Options.ClusterHealth = staticHealth{rollout.Health{Status: "green"}}
		plan, err := r.rollOut(context.Background(), &managedRun{sc: s, obs: poolObservation{pods: tc.pods}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var left corev1.PodList
		if err := r.List(context.Background(), &left); err != nil {
			t.Fatal(err)
		}
		deleted := 3 - len(left.Items)
		if deleted != tc.wantDeleted || plan.BlockedBy != tc.wantBlockedBy || s.Status.AllocationRestricted != tc.wantRestricted ||
			len(tc.f.puts) != tc.wantPuts || tc.f.flushes != tc.wantFlushs || (s.Status.Rollout != nil) != tc.wantRollout {
			t.Errorf("%s: deleted %d, blockedBy %q, restricted %v, %d setting writes, %d flushes, rollout %+v; want %d, %q, %v, %d, %d, rollout %v",
				tc.name, deleted, plan.BlockedBy, s.Status.AllocationRestricted, len(tc.f.puts), tc.f.flushes, s.Status.Rollout,
				tc.wantDeleted, tc.wantBlockedBy, tc.wantRestricted, tc.wantPuts, tc.wantFlushs, tc.wantRollout)
		}
	}
}

type staticHealth struct{ h rollout.Health }

func (s staticHealth) Health(context.Context, *v1alpha1.SearchCluster) rollout.Health { return s.h }

// TestManagedStepsAnswer: the managed step list asks to look again soon while pods start,
// and otherwise retries only what the probe says may pass.
func TestManagedStepsAnswer(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	r := reconcilerWith(&fakeCluster{})
	r.Options.RolloutPollInterval = 5e9
	last := r.managedSteps()[len(r.managedSteps())-1]
	if !strings.Contains(last.Name, "conditions") {
		t.Fatalf("last managed step is %q", last.Name)
	}
	starting := &managedRun{sc: sc.DeepCopy(), obs: poolObservation{desired: 3, ready: 1, settled: true}}
	if got := last.Run(context.Background(), starting); got.RequeueAfter != 5e9 || got.Err != nil {
		t.Errorf("pods starting: %+v, want back in 5s", got)
	}
	unreachable := &managedRun{sc: sc.DeepCopy(), obs: poolObservation{desired: 3, ready: 3, settled: true},
		probe: probeResult{state: conditions.Degraded, reason: v1alpha1.ReasonUnreachable, retry: errors.New("refused")}}
	if got := last.Run(context.Background(), unreachable); got.Err == nil {
		t.Errorf("unreachable and settled: %+v, want the probe's error retried", got)
	}
	if c := meta.FindStatusCondition(unreachable.sc.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Reason != v1alpha1.ReasonUnreachable {
		t.Errorf("Degraded = %+v, want Unreachable", c)
	}
}
