package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/simd"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// fakeCluster answers clusterAPI from fields, and records the writes.
type fakeCluster struct {
	info     opensearch.ClusterInfo
	infoErr  error
	knn      string
	nodes    []opensearch.NodeVariant
	nodesErr error
	// settings are the persistent cluster settings; writes land in puts, not here.
	settings map[string]string
	putErr   error
	puts     []map[string]any
	flushes  int
	// routing is the weighted shard routing; weightPuts and weightDeletes count the writes.
	routing                   opensearch.SearchRouting
	weightPuts, weightDeletes int
	// stuck answers StuckShard by "index/shard@node"; explained records the questions.
	stuck     map[string]string
	explained []string
}

func (f *fakeCluster) Info(context.Context) (opensearch.ClusterInfo, error) { return f.info, f.infoErr }
func (f *fakeCluster) PluginVersion(context.Context, string) (string, error) {
	return f.knn, nil
}
func (f *fakeCluster) NodeVariants(context.Context, string) ([]opensearch.NodeVariant, error) {
	return f.nodes, f.nodesErr
}
func (f *fakeCluster) FileCacheNodes(context.Context) ([]opensearch.FileCacheNode, error) {
	return nil, nil
}
func (f *fakeCluster) Shards(context.Context) ([]opensearch.ShardCopy, error) { return nil, nil }
func (f *fakeCluster) PersistentClusterSettings(context.Context) (map[string]string, error) {
	return f.settings, nil
}
func (f *fakeCluster) RestrictAllocationToPrimaries(context.Context) error {
	return f.put(opensearch.PrimariesOnlyAllocation())
}
func (f *fakeCluster) ExcludeFromAllocation(_ context.Context, nodes []string) error {
	return f.put(opensearch.AllocationExclusion(nodes))
}
func (f *fakeCluster) SetAllocationAwareness(_ context.Context, attributes []string, attribute string, forced []string) error {
	return f.put(opensearch.AllocationAwareness(attributes, attribute, forced))
}
func (f *fakeCluster) PutBackClusterSettings(_ context.Context, values map[string]any) error {
	if err := opensearch.PutBackable(values); err != nil {
		return err
	}
	return f.put(values)
}

// put records a persistent cluster settings write, the body the client would send.
func (f *fakeCluster) put(s map[string]any) error {
	f.puts = append(f.puts, s)
	return f.putErr
}
func (f *fakeCluster) Flush(context.Context) error { f.flushes++; return nil }
func (f *fakeCluster) Voting(context.Context) (opensearch.Voting, error) {
	return opensearch.Voting{}, nil
}
func (f *fakeCluster) IndexSettings(context.Context) (map[string]map[string]any, error) {
	return nil, nil
}
func (f *fakeCluster) ExcludeVoter(context.Context, string) error  { return nil }
func (f *fakeCluster) ClearVotingExclusions(context.Context) error { return nil }
func (f *fakeCluster) SearchWeights(context.Context, string) (opensearch.SearchRouting, error) {
	return f.routing, nil
}
func (f *fakeCluster) PutSearchWeights(_ context.Context, _ string, w map[string]string, version int64) error {
	f.weightPuts++
	f.routing = opensearch.SearchRouting{Weights: w, Version: version + 1}
	return nil
}
func (f *fakeCluster) StuckShard(_ context.Context, index string, shard int, _ bool, node string) (string, error) {
	key := fmt.Sprintf("%s/%d@%s", index, shard, node)
	f.explained = append(f.explained, key)
	return f.stuck[key], nil
}
func (f *fakeCluster) DeleteSearchWeights(context.Context, int64) error {
	f.weightDeletes++
	return nil
}

func reconcilerWith(f *fakeCluster, objs ...client.Object) *SearchClusterReconciler {
	return reconcilerOn(fake.NewClientBuilder(), f, objs...)
}

// reconcilerOn builds the reconciler's client with b (interceptors, for faults), SearchCluster
// status as a subresource.
func reconcilerOn(b *fake.ClientBuilder, f *fakeCluster, objs ...client.Object) *SearchClusterReconciler {
	c := b.WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.SearchCluster{}).Build()
	return &SearchClusterReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10),
		openSearch: func(context.Context, string, string) (clusterAPI, error) { return f, nil }}
}

// applyPuts is what f's settings become after its writes, as OpenSearch applies them (nil
// unsets).
func applyPuts(f *fakeCluster) map[string]string {
	out := maps.Clone(f.settings)
	if out == nil {
		out = map[string]string{}
	}
	for _, put := range f.puts {
		for k, v := range put {
			if v == nil {
				delete(out, k)
			} else {
				out[k] = fmt.Sprint(v)
			}
		}
	}
	return out
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
		sc := &v1alpha1.SearchCluster{Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{}}}
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

// TestObserveCPU: each node's own reading of its CPU (the node attribute) is the pool's
// cpuSIMD, wins over the Kubernetes node's labels for the k-NN variant, and with the JVM
// arguments gives the Lucene vector code; a pool whose nodes lack the level it asked for
// is reported.
func TestObserveCPU(t *testing.T) {
	node := func(name, pool, cpu string, jvm []string) opensearch.NodeVariant {
		return opensearch.NodeVariant{Name: name, Attributes: map[string]string{managed.PoolAttribute: pool, managed.CPUAttribute: cpu}, JVMArguments: jvm}
	}
	wide, narrow := simd.JVMOptions(v1alpha1.SIMDAVX512SPR), simd.JVMOptions(v1alpha1.SIMDAVX2)
	nodes := []opensearch.NodeVariant{
		node("v-spr-0", "spr", "avx512_spr", wide),
		node("v-spr-1", "spr", "avx512", wide),
		node("v-small-0", "small", "avx512_spr", narrow),
		node("v-small-1", "small", "avx512_spr", []string{"-Xmx1g"}),
	}
	// The labels claim SPR for every node; the nodes know better.
	obs := poolObservation{cpu: map[string]string{"v-spr-0": "avx512_spr", "v-spr-1": "avx512_spr", "v-small-0": "avx512_spr", "v-small-1": "avx512_spr"}}
	sc := &v1alpha1.SearchCluster{Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{NodePools: []v1alpha1.NodePool{
		{Name: "spr", SIMD: v1alpha1.SIMDAVX512SPR}, {Name: "small", SIMD: v1alpha1.SIMDAVX2}}}}}
	sc.Status.Pools = []v1alpha1.NodePoolStatus{{Name: "spr"}, {Name: "small"}}
	msg := observeVariants(sc, obs, nodes)
	for i, want := range []v1alpha1.NodePoolStatus{
		{Name: "spr", CPUSIMD: "avx512", SIMD: "avx512", LuceneVector: "panama-512"},
		{Name: "small", CPUSIMD: "avx512_spr", SIMD: "avx512_spr", LuceneVector: "mixed"},
	} {
		got := sc.Status.Pools[i]
		if got.CPUSIMD != want.CPUSIMD || got.SIMD != want.SIMD || got.LuceneVector != want.LuceneVector {
			t.Errorf("pool %s: cpuSIMD %q simd %q luceneVector %q; want %q %q %q", want.Name, got.CPUSIMD, got.SIMD, got.LuceneVector, want.CPUSIMD, want.SIMD, want.LuceneVector)
		}
	}
	if want := (variantFinding{v1alpha1.ReasonSIMDUnavailable, "pool spr asked for avx512_spr but its nodes' CPUs have avx512"}); msg != want {
		t.Errorf("SIMD shortfall %+v, want %+v (and nothing of pool small, whose CPUs exceed avx2)", msg, want)
	}
}

// TestRollOutStep: the rollout step restarts what the planner allows, prepares OpenSearch
// before a serving node goes down (and holds the restart when it cannot), and lifts the
// allocation restriction once every node is back.
func TestRollOutStep(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	sc.Spec.Managed = &v1alpha1.ManagedCluster{UpdateStrategy: v1alpha1.UpdateStrategy{MaxUnavailable: 1}}
	podObj := readyPod
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
		{"every node back: the restriction is lifted", fakeCluster{settings: map[string]string{opensearch.AllocationEnableSetting: "primaries"}}, pods(false, false, false), true, 0, "", false, 1, 0, false},
		{"a restriction someone else set is left alone", fakeCluster{settings: map[string]string{opensearch.AllocationEnableSetting: "none"}}, pods(false, false, false), true, 0, "", false, 0, 0, false},
	} {
		s := sc.DeepCopy()
		s.Status.AllocationRestricted = tc.restricted
		r := reconcilerWith(&tc.f, s, podObj("vectors-data-0"), podObj("vectors-data-1"), podObj("vectors-data-2"))
		r.Options.ClusterHealth = staticHealth{rollout.Health{Status: "green"}}
		plan, err := r.rollOut(context.Background(), &clusterRun{sc: s, obs: poolObservation{pods: tc.pods}})
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

// TestRestartWeighsSearchesAway: before a serving data node restarts, shard searches are
// weighed away from it (weight 0, every other node 1, the node attribute made an awareness
// attribute with every node forced) so none starts there while it stops; when OpenSearch
// could not take the weights the restart goes ahead as before; once every node is back the
// weights and the awareness settings go.
func TestRestartWeighsSearchesAway(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	sc.Spec.Managed = &v1alpha1.ManagedCluster{UpdateStrategy: v1alpha1.UpdateStrategy{MaxUnavailable: 1},
		NodePools: []v1alpha1.NodePool{{Name: "data", AdditionalConfig: map[string]string{opensearch.AwarenessSetting: "zone"}}}}
	names := []string{"vectors-data-0", "vectors-data-1", "vectors-data-2"}
	nodes := func(attribute bool) []opensearch.NodeVariant {
		var out []opensearch.NodeVariant
		for _, n := range names {
			a := map[string]string{}
			if attribute {
				a[managed.NodeAttribute] = n
			}
			out = append(out, opensearch.NodeVariant{Name: n, Attributes: a})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		f           fakeCluster
		nodes       []opensearch.NodeVariant
		wantWeights map[string]string
	}{
		{"weighed away", fakeCluster{routing: opensearch.SearchRouting{Version: -1}}, nodes(true),
			map[string]string{"vectors-data-0": "1", "vectors-data-1": "0", "vectors-data-2": "1"}},
		{"nodes started before the attribute existed", fakeCluster{}, nodes(false), nil},
		{"OpenSearch not read", fakeCluster{}, nil, nil},
		{"the cluster weighs something else", fakeCluster{routing: opensearch.SearchRouting{Weights: map[string]string{"zone-a": "1", "zone-b": "0"}}}, nodes(true), nil},
	} {
		var objs []client.Object
		var pods []rollout.Pod
		for i, n := range names {
			objs = append(objs, readyPod(n))
			pods = append(pods, rollout.Pod{Name: n, Pool: "data", Ordinal: i, Ready: true, Data: true, Outdated: i == 1})
		}
		s := sc.DeepCopy()
		r := reconcilerWith(&tc.f, append(objs, s)...)
		r.Options.ClusterHealth = staticHealth{rollout.Health{Status: "green"}}
		plan, err := r.rollOut(context.Background(), &clusterRun{sc: s, obs: poolObservation{pods: pods}, probe: probeResult{nodes: tc.nodes}})
		if err != nil || len(plan.Restart) != 1 {
			t.Fatalf("%s: restart %v, %v; want vectors-data-1 restarted with or without weights", tc.name, plan.Restart, err)
		}
		if tc.wantWeights == nil {
			if tc.f.weightPuts != 0 {
				t.Errorf("%s: weights %v written", tc.name, tc.f.routing.Weights)
			}
			continue
		}
		if tc.f.weightPuts != 1 || !maps.Equal(tc.f.routing.Weights, tc.wantWeights) || tc.f.routing.Version != 0 {
			t.Errorf("%s: weights %+v after %d writes; want %v written once at version -1", tc.name, tc.f.routing, tc.f.weightPuts, tc.wantWeights)
		}
		awareness := tc.f.puts[len(tc.f.puts)-1]
		if awareness[opensearch.AwarenessSetting] != "zone,vectorpilot_node" || awareness[forcedSetting] != strings.Join(names, ",") {
			t.Errorf("%s: awareness settings %v; want the pools' zone kept, the node attribute added, every node forced", tc.name, awareness)
		}
	}

	for _, tc := range []struct {
		name                  string
		f                     fakeCluster
		wantDeletes, wantPuts int
	}{
		{"the restart's weights go", fakeCluster{settings: map[string]string{opensearch.AwarenessSetting: "zone,vectorpilot_node"},
			routing: opensearch.SearchRouting{Weights: map[string]string{"vectors-data-1": "0"}, Version: 3}}, 1, 1},
		{"awareness left without weights (a crash between the two) goes", fakeCluster{settings: map[string]string{opensearch.AwarenessSetting: "vectorpilot_node"}}, 0, 1},
		{"the user's own awareness is left alone", fakeCluster{settings: map[string]string{opensearch.AwarenessSetting: "zone"},
			routing: opensearch.SearchRouting{Weights: map[string]string{"zone-a": "0"}}}, 0, 0},
	} {
		if err := reconcilerWith(&tc.f).endRestart(context.Background(), sc.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if tc.f.weightDeletes != tc.wantDeletes || len(tc.f.puts) != tc.wantPuts {
			t.Errorf("%s: %d weight deletions, setting writes %v; want %d, %d", tc.name, tc.f.weightDeletes, tc.f.puts, tc.wantDeletes, tc.wantPuts)
		}
		if tc.wantPuts == 1 {
			if v, ok := tc.f.puts[0][opensearch.AwarenessSetting]; !ok || v != nil {
				t.Errorf("%s: awareness setting written %v, want reset", tc.name, tc.f.puts[0])
			}
		}
	}
}

// TestRestartRecordsItsIntentFirst: the restart's intent (status.allocationRestricted and
// the settings it changes) reaches the API server before any setting changes in
// OpenSearch; when that write fails nothing changes and no pod goes.
func TestRestartRecordsItsIntentFirst(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	sc.Spec.Managed = &v1alpha1.ManagedCluster{UpdateStrategy: v1alpha1.UpdateStrategy{MaxUnavailable: 1}}
	pod := readyPod("vectors-data-0")
	pods := []rollout.Pod{{Name: "vectors-data-0", Pool: "data", Ready: true, Outdated: true}}
	for _, refuse := range []bool{false, true} {
		f := &fakeCluster{settings: map[string]string{opensearch.AllocationEnableSetting: "all"}}
		var stored *v1alpha1.SearchCluster
		statusWrite := func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if refuse {
				return apierrors.NewServiceUnavailable("status writes refused")
			}
			if len(f.puts) > 0 {
				t.Errorf("status written after %d setting writes to OpenSearch", len(f.puts))
			}
			stored = obj.(*v1alpha1.SearchCluster).DeepCopy()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}
		s := sc.DeepCopy()
		r := reconcilerOn(fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: statusWrite}), f, s, pod.DeepCopy())
		r.Options.ClusterHealth = staticHealth{rollout.Health{Status: "green"}}
		plan, err := r.rollOut(context.Background(), &clusterRun{sc: s, obs: poolObservation{pods: pods}})
		if err != nil {
			t.Fatal(err)
		}
		if refuse {
			if len(f.puts) != 0 || len(plan.Restart) != 0 || plan.BlockedBy != "prepare_restart" || s.Status.AllocationRestricted {
				t.Errorf("status write refused: setting writes %v, restarts %v, blockedBy %q, restricted %v; want nothing changed, held by prepare_restart",
					f.puts, plan.Restart, plan.BlockedBy, s.Status.AllocationRestricted)
			}
			continue
		}
		if stored == nil || !stored.Status.AllocationRestricted || stored.Status.SettingsBeforeRestart[opensearch.AllocationEnableSetting] != "all" || len(plan.Restart) != 1 {
			t.Errorf("stored status %+v before the restart %v; want allocationRestricted and allocation.enable=all recorded", stored, plan.Restart)
		}
	}
}

// TestRestartPutsBackTheUsersSettings: a user's own persistent awareness and allocation
// settings are what the cluster has again once the restart is over, whatever the restart
// set meanwhile; settings the user changes during the restart stay as the user set them.
func TestRestartPutsBackTheUsersSettings(t *testing.T) {
	names := []string{"vectors-data-0", "vectors-data-1", "vectors-data-2"}
	var nodes []opensearch.NodeVariant
	for _, n := range names {
		nodes = append(nodes, opensearch.NodeVariant{Name: n, Attributes: map[string]string{managed.NodeAttribute: n}})
	}
	for _, tc := range []struct {
		name  string
		user  map[string]string
		after func(map[string]string) // what someone changes while the restart runs
		want  map[string]string
	}{
		{"zone awareness", map[string]string{opensearch.AwarenessSetting: "zone", "cluster.routing.allocation.awareness.force.zone.values": "a,b"}, nil, nil},
		{"allocation and awareness", map[string]string{opensearch.AllocationEnableSetting: "all", opensearch.AwarenessSetting: "zone,rack"}, nil, nil},
		{"nothing set", map[string]string{}, nil, nil},
		{"allocation changed meanwhile", map[string]string{opensearch.AwarenessSetting: "zone"},
			func(s map[string]string) { s[opensearch.AllocationEnableSetting] = "none" },
			map[string]string{opensearch.AwarenessSetting: "zone", opensearch.AllocationEnableSetting: "none"}},
	} {
		sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
		sc.Spec.Managed = &v1alpha1.ManagedCluster{UpdateStrategy: v1alpha1.UpdateStrategy{MaxUnavailable: 1}, NodePools: []v1alpha1.NodePool{{Name: "data"}}}
		var objs []client.Object
		var pods []rollout.Pod
		for i, n := range names {
			objs = append(objs, readyPod(n))
			pods = append(pods, rollout.Pod{Name: n, Pool: "data", Ordinal: i, Ready: true, Data: true, Outdated: i == 1})
		}
		f := &fakeCluster{settings: maps.Clone(tc.user), routing: opensearch.SearchRouting{Version: -1}}
		r := reconcilerWith(f, append(objs, sc)...)
		r.Options.ClusterHealth = staticHealth{rollout.Health{Status: "green"}}
		if _, err := r.rollOut(context.Background(), &clusterRun{sc: sc, obs: poolObservation{pods: pods}, probe: probeResult{nodes: nodes}}); err != nil {
			t.Fatal(err)
		}
		during := applyPuts(f)
		if during[opensearch.AllocationEnableSetting] != "primaries" || !weighed(during) {
			t.Fatalf("%s: during the restart %v; want allocation primaries and the node attribute weighed", tc.name, during)
		}
		if a := strings.Split(during[opensearch.AwarenessSetting], ","); tc.user[opensearch.AwarenessSetting] != "" && !slices.Contains(a, strings.Split(tc.user[opensearch.AwarenessSetting], ",")[0]) {
			t.Errorf("%s: awareness during the restart %v dropped the user's %q", tc.name, a, tc.user[opensearch.AwarenessSetting])
		}
		if tc.after != nil {
			tc.after(during)
		}
		f.settings, f.puts = during, nil
		if err := r.endRestart(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if want == nil {
			want = tc.user
		}
		if got := applyPuts(f); !maps.Equal(got, want) {
			t.Errorf("%s: after the restart %v, want %v", tc.name, got, want)
		}
	}
}

// readyPod is a pod of SearchCluster ns/vectors whose readiness probe passes.
func readyPod(name string) *corev1.Pod {
	labels := managed.ClusterSelector(&v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors"}})
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: labels},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

type staticHealth struct{ h rollout.Health }

func (s staticHealth) Health(context.Context, *v1alpha1.SearchCluster) rollout.Health { return s.h }
func (s staticHealth) IndexSettings(context.Context, *v1alpha1.SearchCluster) (map[string]rollout.IndexSettings, error) {
	return nil, nil
}

// TestClusterStatus: a SearchCluster's conditions come from one place after its steps: a
// step that failed its part says why; once every step ran, pods starting and shards
// recovering after them ask to look again soon, and otherwise only what the probe says may
// pass is retried; an external cluster says what its probe found, and is looked at again
// soon while its shards move.
func TestClusterStatus(t *testing.T) {
	managedSpec := v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{}}
	externalSpec := v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "https://search:9200"}}
	refused := errors.New("refused")
	unavailable := &opensearch.APIError{Status: 503}
	unreachable := probeResult{state: conditions.Degraded, reason: v1alpha1.ReasonUnreachable, message: "refused", retry: refused}
	settled := poolObservation{desired: 3, ready: 3, settled: true}
	for _, tc := range []struct {
		name string
		spec v1alpha1.SearchClusterSpec
		// readySince: the cluster has been Ready this long before the reconcile.
		readySince time.Duration
		run        clusterRun
		out        steps.Outcome
		reason     string // of the condition that says it, "" for none set
		requeue    time.Duration
		err        error
	}{
		{name: "pods starting: back in 5s", spec: managedSpec,
			run:    clusterRun{obs: poolObservation{desired: 3, ready: 1, settled: true}},
			reason: v1alpha1.ReasonPodsStarting, requeue: 5 * time.Second},
		{name: "a step's earlier requeue is kept", spec: managedSpec,
			run: clusterRun{obs: poolObservation{desired: 3, ready: 1, settled: true}}, out: steps.Outcome{Result: steps.After(time.Second)},
			reason: v1alpha1.ReasonPodsStarting, requeue: time.Second},
		{name: "settled and green: back at the poll interval", spec: managedSpec,
			run: clusterRun{obs: settled, probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled}}},
		{name: "shards recovering: back in 5s", spec: managedSpec,
			run: clusterRun{obs: settled, probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, shardsMoving: true}}, requeue: 5 * time.Second},
		{name: "copies unassigned as it becomes Ready: back in 5s", spec: managedSpec,
			run: clusterRun{obs: settled, probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, shardsUnassigned: true}}, requeue: 5 * time.Second},
		{name: "copies unassigned a minute after it became Ready: back in 5s", spec: managedSpec, readySince: time.Minute,
			run: clusterRun{obs: settled, probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, shardsUnassigned: true}}, requeue: 5 * time.Second},
		{name: "copies unassigned long after it became Ready: back at the poll interval", spec: managedSpec, readySince: 10 * time.Minute,
			run: clusterRun{obs: settled, probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, shardsUnassigned: true}}},
		{name: "unreachable and settled: the probe's error retried", spec: managedSpec,
			run: clusterRun{obs: settled, probe: unreachable}, reason: v1alpha1.ReasonUnreachable, err: refused},
		{name: "objects not applied: Degraded with why", spec: managedSpec,
			run: clusterRun{failed: &stepFailure{reason: v1alpha1.ReasonNameConflict, message: "taken"}},
			out: steps.Outcome{Result: steps.Done(refused), StoppedAt: "apply objects"}, reason: v1alpha1.ReasonNameConflict, err: refused},
		{name: "any step's error reaches status", spec: managedSpec,
			run: clusterRun{obs: settled, probe: unreachable}, out: steps.Outcome{Result: steps.Done(unavailable), StoppedAt: "roll out"},
			reason: v1alpha1.ReasonOpenSearchError, err: unavailable},
		{name: "a step that waits keeps the conditions", spec: managedSpec,
			run: clusterRun{obs: settled}, out: steps.Outcome{Result: steps.StopFor(time.Minute), StoppedAt: "secure"}, requeue: time.Minute},
		{name: "external: what the probe found", spec: externalSpec,
			run: clusterRun{probe: unreachable}, out: steps.Outcome{Result: steps.Done(refused), StoppedAt: "probe"}, reason: v1alpha1.ReasonUnreachable, err: refused},
		{name: "external, green: back at the poll interval", spec: externalSpec,
			run: clusterRun{probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled}}},
		{name: "external, shards recovering: back in 5s", spec: externalSpec,
			run: clusterRun{probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, shardsMoving: true}}, requeue: 5 * time.Second},
		{name: "external, copies unassigned for good: back at the poll interval", spec: externalSpec,
			run: clusterRun{probe: probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, shardsUnassigned: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reconcilerWith(&fakeCluster{})
			r.Options.RolloutPollInterval = 5 * time.Second
			run := tc.run
			run.sc = &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}, Spec: tc.spec}
			if tc.readySince > 0 {
				run.sc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReconciled,
					LastTransitionTime: metav1.NewTime(time.Now().Add(-tc.readySince))}}
			}
			out := tc.out
			r.clusterStatus(&run, &out)
			if out.RequeueAfter != tc.requeue || !errors.Is(out.Err, tc.err) {
				t.Errorf("answer %+v, want requeue %v and error %v", out, tc.requeue, tc.err)
			}
			var reasons []string
			for _, c := range run.sc.Status.Conditions {
				if c.Status == metav1.ConditionTrue && (c.Type == v1alpha1.ConditionDegraded || c.Type == v1alpha1.ConditionProgressing) {
					reasons = append(reasons, c.Reason)
				}
			}
			if want := []string{tc.reason}; (tc.reason == "" && len(reasons) > 0) || (tc.reason != "" && !slices.Equal(reasons, want)) {
				t.Errorf("conditions say %v, want %q", reasons, tc.reason)
			}
		})
	}
}

// TestStuckCopySaysWhy: a draining node's drain message says why its first started copy
// does not move, as OpenSearch explains it; a copy already relocating, or one OpenSearch
// says can move, adds nothing.
func TestStuckCopySaysWhy(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	for _, tc := range []struct {
		name      string
		shards    []rollout.Shard
		stuck     map[string]string
		want      string
		explained []string
	}{
		{"stuck on a full disk",
			[]rollout.Shard{{Index: "docs", Shard: "2", State: "STARTED", Node: "n1"}, {Index: "docs", Shard: "2", State: "STARTED", Node: "n0"}},
			map[string]string{"docs/2@n1": "cannot move shard to another node; n0: [disk_threshold] the node is above the low watermark"},
			"docs/2 cannot move: cannot move shard to another node; n0: [disk_threshold] the node is above the low watermark", []string{"docs/2@n1"}},
		{"moving: nothing to add", []rollout.Shard{{Index: "docs", Shard: "0", State: "STARTED", Node: "n1"}}, nil, "", []string{"docs/0@n1"}},
		{"relocating copies are moving already", []rollout.Shard{{Index: "docs", Shard: "0", State: "RELOCATING", Node: "n1", RelocatingTo: "n0"}}, nil, "", nil},
		{"nothing on the node", []rollout.Shard{{Index: "docs", Shard: "0", State: "STARTED", Node: "n0"}}, nil, "", nil},
	} {
		f := &fakeCluster{stuck: tc.stuck}
		r := reconcilerWith(f, sc.DeepCopy())
		got := r.stuckCopy(context.Background(), sc, rollout.Health{Status: "green", Shards: tc.shards}, "n1")
		if got != tc.want || !slices.Equal(f.explained, tc.explained) {
			t.Errorf("%s: %q after asking about %v; want %q after %v", tc.name, got, f.explained, tc.want, tc.explained)
		}
	}
}

// TestExternalSearchClusterReconcile drives whole reconciles of an external SearchCluster
// against controller-runtime's fake client and a fake OpenSearch: unreachable (Degraded,
// retried on the backoff), then reachable (Ready, one Normal Event and the Warning of an
// unverified certificate, looked at again at the poll interval), then quiet: no status
// write and no Event while nothing changes.
func TestExternalSearchClusterReconcile(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns", Generation: 4},
		Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "https://search:9200", InsecureSkipVerify: true}}}
	refused := &opensearch.TransportError{Op: "GET /", Err: errors.New("connection refused")}
	f := &fakeCluster{infoErr: refused, knn: "3.6.0.0"}
	writes := 0
	r := reconcilerOn(fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			writes++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}), f, sc)
	r.Options.ClusterPollInterval = 30 * time.Second
	recorder := events.NewFakeRecorder(10)
	r.Recorder = recorder
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sc)}
	reconcile := func() (*v1alpha1.SearchCluster, ctrl.Result, error) {
		answer, err := r.Reconcile(context.Background(), req)
		var got v1alpha1.SearchCluster
		if gerr := r.Get(context.Background(), req.NamespacedName, &got); gerr != nil {
			t.Fatal(gerr)
		}
		return &got, answer, err
	}

	got, _, err := reconcile()
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDegraded); err == nil || c == nil || c.Reason != v1alpha1.ReasonUnreachable ||
		got.Status.ObservedGeneration != 4 || got.Status.Endpoint != "https://search:9200" {
		t.Fatalf("unreachable: error %v, Degraded %+v, observed %d, endpoint %q", err, c, got.Status.ObservedGeneration, got.Status.Endpoint)
	}
	f.infoErr, f.info = nil, opensearch.ClusterInfo{Version: "3.6.0", Health: "green", Nodes: 3}
	got, answer, err := reconcile()
	if err != nil || !conditions.IsReady(got.Status.Conditions) || got.Status.Version != "3.6.0" || answer.RequeueAfter != 30*time.Second {
		t.Fatalf("reachable: error %v, conditions %+v, version %q, answer %+v", err, got.Status.Conditions, got.Status.Version, answer)
	}
	var sent []string
	for len(recorder.Events) > 0 {
		sent = append(sent, <-recorder.Events)
	}
	if len(sent) != 2 || !strings.Contains(sent[0], v1alpha1.ReasonReachable) || !strings.Contains(sent[1], v1alpha1.ReasonInsecureSkipVerify) {
		t.Errorf("events %q, want Reachable then InsecureSkipVerify", sent)
	}
	before := writes
	if _, _, err := reconcile(); err != nil || writes != before || len(recorder.Events) != 0 {
		t.Errorf("unchanged: error %v, %d status writes, %d events; want none", err, writes-before, len(recorder.Events))
	}
}
