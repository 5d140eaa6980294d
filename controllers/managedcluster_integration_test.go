package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// machines are the Node objects the placement tests register: what real clusters label
// their nodes with, by node-feature-discovery, Karpenter or the kubelet.
var machines = map[string]map[string]string{
	// Sapphire Rapids by instance family only (Karpenter-provisioned, no NFD yet).
	"spr-c7i-1": {simd.InstanceFamilyLabel: "c7i", simd.InstanceTypeLabel: "c7i.2xlarge"},
	// Sapphire Rapids by NFD labels only (on-premises).
	"spr-nfd-1": cpuid("AVX2", "AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW", "AVX512FP16", "AVX512BF16", "AVX512VPOPCNTDQ"),
	// Ice Lake: AVX-512 but not SPR.
	"avx512-c6i-1": {simd.InstanceFamilyLabel: "c6i", simd.InstanceTypeLabel: "c6i.2xlarge"},
	// AMD Zen 3 and an NFD-labelled AVX2-only machine.
	"avx2-m6a-1": {simd.InstanceFamilyLabel: "m6a", simd.InstanceTypeLabel: "m6a.2xlarge"},
	"avx2-nfd-1": cpuid("AVX2"),
	// Graviton.
	"arm-c7g-1": {simd.ArchLabel: "arm64", simd.InstanceFamilyLabel: "c7g", simd.InstanceTypeLabel: "c7g.2xlarge"},
	"arm-c7g-2": {simd.ArchLabel: "arm64", simd.InstanceFamilyLabel: "c7g", simd.InstanceTypeLabel: "c7g.2xlarge"},
}

func cpuid(features ...string) map[string]string {
	l := map[string]string{}
	for _, f := range features {
		l[simd.CPUIDLabelPrefix+f] = "true"
	}
	return l
}

var registerNodes sync.Once

// ensureNodes registers the machines once per run: Ready, 8 CPUs and 32Gi allocatable.
func ensureNodes(e *env) {
	registerNodes.Do(func() {
		for name, extra := range machines {
			labels := map[string]string{simd.ArchLabel: "amd64", corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}
			for k, v := range extra {
				labels[k] = v
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
			e.create(node)
			resources := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
			node.Status = corev1.NodeStatus{
				Capacity: resources, Allocatable: resources,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}},
			}
			if err := e.k8s.Status().Update(e.ctx, node); err != nil {
				e.t.Fatal(err)
			}
			// Admission taints new nodes not-ready; the node lifecycle controller would lift
			// the taint once the node reports Ready. Here the test is that controller.
			node.Spec.Taints = nil
			if err := e.k8s.Update(e.ctx, node); err != nil {
				e.t.Fatal(err)
			}
		}
	})
}

// insecure turns a managed cluster's security off.
var insecure = v1alpha1.ClusterSecurity{Enabled: ptr.To(false)}

func pool(name string, level v1alpha1.SIMDLevel, replicas int32, roles ...v1alpha1.NodeRole) v1alpha1.NodePool {
	return v1alpha1.NodePool{Name: name, Roles: roles, Replicas: replicas, SIMD: level,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}
}

// releaseNodes removes the test's StatefulSets and force-deletes their pods when the test
// ends: without a garbage collector and a kubelet they would hold the shared nodes'
// capacity for the tests after it.
func releaseNodes(e *env) {
	e.t.Cleanup(func() {
		ctx := context.Background()
		// The cluster first, so the running operator does not put its StatefulSets back.
		_ = e.k8s.DeleteAllOf(ctx, &v1alpha1.SearchCluster{}, client.InNamespace(e.ns))
		_ = e.k8s.DeleteAllOf(ctx, &appsv1.StatefulSet{}, client.InNamespace(e.ns))
		var pods corev1.PodList
		if err := e.k8s.List(ctx, &pods, client.InNamespace(e.ns)); err == nil {
			for i := range pods.Items {
				_ = e.k8s.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
			}
		}
	})
}

func (e *env) pods(sc *v1alpha1.SearchCluster) []corev1.Pod {
	var pods corev1.PodList
	if err := e.k8s.List(e.ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		e.t.Fatal(err)
	}
	return pods.Items
}

// TestManagedPoolsLandOnMatchingCPUs: the real scheduler places each pool's pods only on
// nodes with its SIMD level, an unsatisfiable pool says so, and status shows the level the
// nodes really have.
func TestManagedPoolsLandOnMatchingCPUs(t *testing.T) {
	opts := fastOptions
	url := testsupport.OpenSearchURL(t)
	opts.ManagedEndpoint = func(*v1alpha1.SearchCluster) string { return url }
	e := startOperatorWith(t, opts)
	ensureNodes(e)
	releaseNodes(e)

	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "simd", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0",
		// The local node has no security plugin (internal/security's tests and
		// TestSecuredManagedCluster cover the secured default).
		Security: insecure,
		NodePools: []v1alpha1.NodePool{
			pool("spr", v1alpha1.SIMDAVX512SPR, 2, "cluster_manager", "data"),
			pool("avx2", v1alpha1.SIMDAVX2, 3, "data"),
			pool("arm", v1alpha1.SIMDNEON, 2, "data"),
			// Only Sapphire Rapids machines of a family this cluster lacks: nowhere to go.
			func() v1alpha1.NodePool {
				p := pool("r7iz", v1alpha1.SIMDAVX512SPR, 1, "data")
				p.InstanceFamilies = []string{"r7iz"}
				return p
			}(),
		},
	}}}
	e.create(sc)

	want := map[string][]string{
		"spr":  {"spr-c7i-1", "spr-nfd-1"},
		"avx2": {"spr-c7i-1", "spr-nfd-1", "avx512-c6i-1", "avx2-m6a-1", "avx2-nfd-1"},
		"arm":  {"arm-c7g-1", "arm-c7g-2"},
	}
	e.eventually(60*time.Second, func() (bool, string) {
		bound := 0
		for _, p := range e.pods(sc) {
			pool := p.Labels[managed.PoolLabel]
			if p.Spec.NodeName == "" {
				continue
			}
			if !slices.Contains(want[pool], p.Spec.NodeName) {
				t.Fatalf("pod %s of pool %s landed on %s, which lacks the pool's SIMD level", p.Name, pool, p.Spec.NodeName)
			}
			bound++
		}
		return bound == 7, fmt.Sprintf("%d of 7 schedulable pods bound", bound)
	})
	for _, p := range e.pods(sc) {
		if p.Labels[managed.PoolLabel] == "r7iz" && p.Spec.NodeName != "" {
			t.Fatalf("pod %s of the unsatisfiable pool was bound to %s", p.Name, p.Spec.NodeName)
		}
	}

	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, 30*time.Second)
	msg := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionScheduled).Message
	if !strings.Contains(msg, "r7iz") || !strings.Contains(msg, "node affinity") {
		t.Errorf("Scheduled condition does not name the pool and the scheduler's reason: %q", msg)
	}
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, 10*time.Second)

	pools := map[string]v1alpha1.NodePoolStatus{}
	for _, p := range sc.Status.Pools {
		pools[p.Name] = p
	}
	if p := pools["spr"]; p.NodeSIMD != "avx512_spr" || p.Replicas != 2 {
		t.Errorf("spr pool status %+v, want nodeSIMD avx512_spr, 2 replicas", p)
	}
	if p := pools["avx2"]; !slices.Contains([]string{"avx2", "avx512", "avx512_spr"}, p.NodeSIMD) {
		t.Errorf("avx2 pool status %+v, want x86 nodes", p)
	}
	if p := pools["arm"]; p.NodeSIMD != "neon" {
		t.Errorf("arm pool status %+v, want neon nodes", p)
	}
	if p := pools["r7iz"]; p.Unschedulable == "" || p.NodeSIMD != "" {
		t.Errorf("r7iz pool status %+v, want an unschedulable message and no node level", p)
	}
	// The pods are played (no OpenSearch runs in them); the OpenSearch that answers for the
	// cluster here is the test's own node, which belongs to no pool. What the pools report is
	// what that cluster says — none of their nodes joined, no variant loaded — rather than
	// what the operator configured (test/e2e reads both from a live managed cluster).
	for name, p := range pools {
		if p.SIMD != "" || p.OpenSearchNodes == nil || *p.OpenSearchNodes != 0 {
			t.Errorf("pool %s reports simd %q and %v OpenSearch nodes; want none joined, as the cluster says", name, p.SIMD, ptr.Deref(p.OpenSearchNodes, -1))
		}
	}
	t.Logf("Scheduled=False: %s", msg)

	// The objects: StatefulSets rolled by the operator, a client Service, the k-NN variant
	// the pool asked for in its configuration.
	var sts appsv1.StatefulSet
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "simd-avx2"}, &sts); err != nil {
		t.Fatal(err)
	}
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || !metav1.IsControlledBy(&sts, sc) {
		t.Errorf("StatefulSet simd-avx2: strategy %s, controlled by the SearchCluster %v", sts.Spec.UpdateStrategy.Type, metav1.IsControlledBy(&sts, sc))
	}
	var cm corev1.ConfigMap
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "simd-avx2-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cfg := cm.Data["opensearch.yml"]; !strings.Contains(cfg, "knn.faiss.avx512.disabled: \"true\"") {
		t.Errorf("avx2 pool configuration lacks the variant pin:\n%s", cfg)
	}
	// The cluster the operator reaches has formed: its UUID is recorded and new nodes no
	// longer get the bootstrap setting.
	e.eventually(30*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "simd-avx2-config"}, &cm); err != nil {
			t.Fatal(err)
		}
		if err := e.k8s.Get(e.ctx, clientKey(sc), sc); err != nil {
			t.Fatal(err)
		}
		return sc.Status.ClusterUUID != "" && !strings.Contains(cm.Data["opensearch.yml"], "initial_cluster_manager_nodes"),
			fmt.Sprintf("clusterUUID %q, configuration:\n%s", sc.Status.ClusterUUID, cm.Data["opensearch.yml"])
	})
	var svc corev1.Service
	if err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "simd"}, &svc); err != nil {
		t.Fatalf("client Service: %v", err)
	}
	if sc.Status.Version == "" || sc.Status.Endpoint != url {
		t.Errorf("status version %q endpoint %q: the operator did not reach the cluster through its endpoint", sc.Status.Version, sc.Status.Endpoint)
	}
}

// controlledHealth is the cluster health the rollout tests play. Its voting
// configuration is played too, unless the test sets one: the cluster-manager nodes of the
// spec vote, one left out when they are an even number (as OpenSearch keeps the
// configuration odd), and the nodes whose pods are ready have joined.
type controlledHealth struct {
	mu     sync.Mutex
	health rollout.Health
	pods   client.Reader
	// indexes are the index settings an upgrade's pre-flight reads; none by default.
	indexes map[string]rollout.IndexSettings
}

func (c *controlledHealth) IndexSettings(context.Context, *v1alpha1.SearchCluster) (map[string]rollout.IndexSettings, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.indexes, nil
}

func (c *controlledHealth) setIndexes(indexes map[string]rollout.IndexSettings) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.indexes = indexes
}

func (c *controlledHealth) Health(ctx context.Context, sc *v1alpha1.SearchCluster) rollout.Health {
	c.mu.Lock()
	h, pods := c.health, c.pods
	c.mu.Unlock()
	if h.Status == "" || h.Voting != nil || pods == nil {
		return h
	}
	var list corev1.PodList
	if err := pods.List(ctx, &list, client.InNamespace(sc.Namespace), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		return rollout.Health{}
	}
	voters := managed.InitialClusterManagerNodes(sc)
	h.Voting = &rollout.Voting{Voters: voters[:len(voters)-(1-len(voters)%2)]}
	for i := range list.Items {
		if p := &list.Items[i]; p.DeletionTimestamp == nil && meta.IsStatusConditionTrue(podConditions(p), string(corev1.PodReady)) {
			h.Voting.Joined = append(h.Voting.Joined, p.Name)
		}
	}
	return h
}

func (c *controlledHealth) set(h rollout.Health) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.health = h
}

// kubelet plays the kubelet for a cluster's pods: a bound pod turns ready after startup,
// a deleted pod goes away. It records every restart and the most pods ever unavailable.
type kubelet struct {
	e        *env
	selector map[string]string
	desired  int
	startup  time.Duration
	mu       sync.Mutex
	restarts []string
	// maxUnavailable and maxManagersDown are the worst seen; worstSeen the pods then.
	maxUnavailable, maxManagersDown int
	worstSeen                       string
}

// startRollingOperator starts the operator for managed clusters that roll: endpoint is
// where it reaches OpenSearch, health what the rollout planner is told, pods looked at
// every 500 ms; the envtest nodes are there and schedulable.
func startRollingOperator(t *testing.T, endpoint func(*v1alpha1.SearchCluster) string, health *controlledHealth) *env {
	opts := fastOptions
	opts.ManagedEndpoint = endpoint
	opts.ClusterHealth = health
	opts.RolloutPollInterval = 500 * time.Millisecond
	e := startOperatorWith(t, opts)
	health.mu.Lock()
	health.pods = e.k8s
	health.mu.Unlock()
	ensureNodes(e)
	releaseNodes(e)
	return e
}

// playKubelet plays the kubelet for sc's pods until the test ends.
func playKubelet(e *env, sc *v1alpha1.SearchCluster, desired int) *kubelet {
	// The selector is taken now: the test reads the cluster into sc while this runs.
	k := &kubelet{e: e, selector: managed.ClusterSelector(sc), desired: desired, startup: time.Second}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); k.run(stop) }()
	e.t.Cleanup(func() { close(stop); <-done })
	return k
}

func (k *kubelet) run(stop <-chan struct{}) {
	seen := map[string]bool{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		// Not e.pods: t.Fatal must not be called off the test goroutine, and the test's
		// context is already cancelled while its clean-up stops this loop.
		var list corev1.PodList
		if err := k.e.k8s.List(context.Background(), &list, client.InNamespace(k.e.ns), client.MatchingLabels(k.selector)); err != nil {
			continue
		}
		pods := list.Items
		available, managersDown := 0, 0
		for i := range pods {
			p := &pods[i]
			ready := meta.IsStatusConditionTrue(podConditions(p), string(corev1.PodReady))
			if p.DeletionTimestamp == nil && ready {
				available++
			} else if p.Labels[managed.ClusterManagerLabel] == "true" {
				managersDown++
			}
		}
		k.mu.Lock()
		if k.desired-available > k.maxUnavailable {
			var seen []string
			for i := range pods {
				seen = append(seen, fmt.Sprintf("%s (uid %s, ready %v, deleted %v)", pods[i].Name, pods[i].UID[:5],
					meta.IsStatusConditionTrue(podConditions(&pods[i]), string(corev1.PodReady)), pods[i].DeletionTimestamp != nil))
			}
			k.worstSeen = time.Now().Format(time.TimeOnly) + ": " + strings.Join(seen, ", ")
		}
		k.maxUnavailable = max(k.maxUnavailable, k.desired-available)
		k.maxManagersDown = max(k.maxManagersDown, managersDown)
		k.mu.Unlock()
		for i := range pods {
			p := &pods[i]
			switch {
			case p.DeletionTimestamp != nil:
				if !seen[string(p.UID)] {
					seen[string(p.UID)] = true
					k.mu.Lock()
					k.restarts = append(k.restarts, p.Name)
					k.mu.Unlock()
				}
				_ = k.e.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
			case p.Spec.NodeName != "" && !meta.IsStatusConditionTrue(podConditions(p), string(corev1.PodReady)) && time.Since(p.CreationTimestamp.Time) > k.startup:
				now := metav1.Now()
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				}
				_ = k.e.k8s.Status().Update(context.Background(), p)
			}
		}
	}
}

func podConditions(p *corev1.Pod) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range p.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status)})
	}
	return out
}

// resetWorst forgets the unavailability of the cluster's first start.
func (k *kubelet) resetWorst() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.maxUnavailable, k.maxManagersDown = 0, 0
}

// seenAtWorst is the pods as they were when the most were unavailable.
func (k *kubelet) seenAtWorst() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.worstSeen
}

func (k *kubelet) snapshot() ([]string, int, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.restarts), k.maxUnavailable, k.maxManagersDown
}

// TestManagedRollingRestart: a configuration change restarts pods one at a time behind the
// predicates; red health stalls it and says so; a yellow cluster whose candidates hold
// the only copy of a shard stalls it on require_started_replica; a version upgrade
// restarts every data pod before any cluster manager.
func TestManagedRollingRestart(t *testing.T) {
	health := &controlledHealth{health: rollout.Health{Status: "green"}}
	url := testsupport.OpenSearchURL(t)
	e := startRollingOperator(t, func(*v1alpha1.SearchCluster) string { return url }, health)

	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "roll", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "3.6.0",
		// The local node has no security plugin (internal/security's tests and
		// TestSecuredManagedCluster cover the secured default).
		Security: insecure,
		NodePools: []v1alpha1.NodePool{
			pool("managers", v1alpha1.SIMDAuto, 3, "cluster_manager"),
			pool("data", v1alpha1.SIMDAVX2, 3, "data", "ingest"),
		},
	}}}
	e.create(sc)
	k := playKubelet(e, sc, 6)

	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)
	if restarts, _, _ := k.snapshot(); len(restarts) != 0 {
		t.Fatalf("pods restarted before any change: %v", restarts)
	}
	k.resetWorst()

	// A configuration change: every pod must restart.
	start := time.Now()
	e.update(sc, func() {
		sc.Spec.Managed.Search = &v1alpha1.ClusterSearch{ConcurrentSegmentSearch: &v1alpha1.ClusterConcurrentSegmentSearch{Mode: "all"}}
	})
	e.eventually(30*time.Second, func() (bool, string) {
		r, _, _ := k.snapshot()
		// What holds the next restart, should it not come: the rollout status says.
		var now v1alpha1.SearchCluster
		_ = e.k8s.Get(e.ctx, clientKey(sc), &now)
		return len(r) >= 2, fmt.Sprintf("restarts so far: %v; rollout %+v; allocation restricted %v", r, now.Status.Rollout, now.Status.AllocationRestricted)
	})
	// Red: the rollout holds and says which predicate holds it.
	health.set(rollout.Health{Status: "red"})
	e.eventually(20*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(sc), sc); err != nil {
			t.Fatal(err)
		}
		r := sc.Status.Rollout
		return r != nil && r.BlockedBy == "cluster_health", fmt.Sprintf("rollout %+v", r)
	})
	// A pod deleted just before the health turned red may still be reported by the kubelet
	// loop; give it a moment before counting.
	time.Sleep(time.Second)
	held, _, _ := k.snapshot()
	progressing := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionProgressing)
	if progressing == nil || progressing.Reason != v1alpha1.ReasonRollingRestart || !strings.Contains(progressing.Message, "cluster_health") {
		t.Errorf("Progressing while held = %+v, want RollingRestart naming cluster_health", progressing)
	}
	time.Sleep(3 * time.Second)
	if r, _, _ := k.snapshot(); len(r) != len(held) {
		t.Errorf("pods restarted while the cluster was red: %v after %v", r, held)
	}
	// Yellow with every shard's only started copy on each node: held by require_started_replica.
	var shards []rollout.Shard
	for i, p := range e.pods(sc) {
		shards = append(shards, rollout.Shard{Index: "vectors", Shard: fmt.Sprint(i), Primary: true, State: "STARTED", Node: p.Name})
	}
	health.set(rollout.Health{Status: "yellow", Shards: shards})
	e.eventually(20*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(sc), sc); err != nil {
			t.Fatal(err)
		}
		r := sc.Status.Rollout
		return r != nil && r.BlockedBy == "require_started_replica", fmt.Sprintf("rollout %+v", r)
	})
	// Green again: the rollout finishes. Each restart of a serving node is prepared the way
	// OpenSearch's rolling-restart procedure says (allocation restricted to primaries,
	// flush) on the real node the operator talks to, and the restriction is lifted after.
	osClient := osClient(t, url)
	restricted := make(chan bool, 1)
	go func() {
		seen := false
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !seen; time.Sleep(50 * time.Millisecond) {
			v, _ := allocationEnable(context.Background(), osClient)
			seen = v == "primaries"
		}
		restricted <- seen
	}()
	health.set(rollout.Health{Status: "green"})
	waitRolledOut(e, sc, 90*time.Second)
	if !<-restricted {
		t.Error("shard allocation was never restricted to primaries during the rollout")
	}
	if v, err := allocationEnable(t.Context(), osClient); err != nil || v != "" {
		t.Errorf("after the rollout cluster.routing.allocation.enable = %q (%v), want it reset", v, err)
	}
	restarts, worst, managersDown := k.snapshot()
	t.Logf("config rollout: %d restarts in %s, order %v, at most %d pods unavailable, %d cluster managers down", len(restarts), time.Since(start).Round(time.Second), restarts, worst, managersDown)
	if len(restarts) != 6 {
		t.Errorf("%d restarts, want each of the 6 pods once: %v", len(restarts), restarts)
	}
	if worst > 1 || managersDown > 1 {
		t.Errorf("maxUnavailable 1 exceeded: %d pods, %d cluster managers unavailable at once", worst, managersDown)
	}

	// A version upgrade: data pods first, then the cluster managers, still one at a time.
	before := len(restarts)
	k.resetWorst()
	e.update(sc, func() { sc.Spec.Managed.Version = "3.6.1" })
	waitRolledOut(e, sc, 90*time.Second)
	restarts, worst, _ = k.snapshot()
	upgrade := restarts[before:]
	t.Logf("upgrade order: %v", upgrade)
	if len(upgrade) != 6 {
		t.Fatalf("%d restarts for the upgrade, want 6: %v", len(upgrade), upgrade)
	}
	for i, name := range upgrade {
		if isManager := strings.Contains(name, "-managers-"); isManager != (i >= 3) {
			t.Errorf("upgrade restarted %s at step %d: data pods must all go before cluster managers (%v)", name, i, upgrade)
		}
	}
	if worst > 1 {
		t.Errorf("maxUnavailable 1 exceeded during the upgrade: %d", worst)
	}
	for _, p := range e.pods(sc) {
		if p.Annotations[managed.VersionAnnotation] != "3.6.1" {
			t.Errorf("pod %s still on version %s", p.Name, p.Annotations[managed.VersionAnnotation])
		}
	}
}

// TestUpgradePreflightRefusesWhatTheTargetCannotServe: an upgrade to 3.x of a cluster
// holding an index OpenSearch 3.x cannot read (created by 1.3.0) and one setting
// index.knn.space_type (removed by k-NN 3.0) does not start: a Degraded condition
// UpgradeRefused names both, no pod restarts and the cluster's settings are untouched.
// Once the indexes are fixed the upgrade goes on by itself. The index settings are played
// (controlledHealth), and so is the kubelet: a 1.x node cannot be assembled here (a 2.19.1
// node can: TestPreflightRefusesWhatTheNextMajorDrops reads a real one's settings).
func TestUpgradePreflightRefusesWhatTheTargetCannotServe(t *testing.T) {
	health := &controlledHealth{health: rollout.Health{Status: "green"}}
	url := testsupport.OpenSearchURL(t)
	e := startRollingOperator(t, func(*v1alpha1.SearchCluster) string { return url }, health)
	const os2191, os130 = "136407927", "135247827"
	health.setIndexes(map[string]rollout.IndexSettings{
		"docs":    {"index.version.created": os2191},
		"old":     {"index.version.created": os130},
		"vectors": {"index.version.created": os2191, "index.knn": "true", "index.knn.space_type": "cosinesimil"},
	})
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "preflight", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version: "2.19.1", Security: insecure, NodePools: []v1alpha1.NodePool{pool("nodes", v1alpha1.SIMDAuto, 3, "cluster_manager", "data")},
	}}}
	e.create(sc)
	k := playKubelet(e, sc, 3)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)
	// What the nodes run is what the real node runs, whatever the played spec says.
	if info, err := osClient(t, url).Info(t.Context()); err != nil || sc.Status.NewestNodeVersion != info.Version {
		t.Errorf("status.newestNodeVersion %q, the node runs %q (%v)", sc.Status.NewestNodeVersion, info.Version, err)
	}

	e.update(sc, func() { sc.Spec.Managed.Version = "3.6.0" })
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonUpgradeRefused, 30*time.Second)
	degraded := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded)
	for _, want := range []string{"old: created by OpenSearch 1.3.0", "vectors: sets index.knn.space_type"} {
		if !strings.Contains(degraded.Message, want) {
			t.Errorf("UpgradeRefused says %q, want it to name %q", degraded.Message, want)
		}
	}
	if strings.Contains(degraded.Message, "docs:") {
		t.Errorf("UpgradeRefused names docs, which 3.x reads: %q", degraded.Message)
	}
	if r := sc.Status.Rollout; r == nil || r.BlockedBy != "upgrade_preflight" {
		t.Errorf("status.rollout %+v, want blocked by upgrade_preflight", r)
	}
	time.Sleep(2 * time.Second)
	if restarts, _, _ := k.snapshot(); len(restarts) != 0 {
		t.Errorf("pods restarted by a refused upgrade: %v", restarts)
	}
	if v, err := allocationEnable(t.Context(), osClient(t, url)); err != nil || v != "" {
		t.Errorf("a refused upgrade changed cluster.routing.allocation.enable to %q (%v)", v, err)
	}

	// Reindexed and deleted: the upgrade starts.
	health.setIndexes(map[string]rollout.IndexSettings{"docs": {"index.version.created": os2191}, "vectors-v2": {"index.version.created": os2191, "index.knn": "true"}})
	waitRolledOut(e, sc, 60*time.Second)
	if restarts, _, _ := k.snapshot(); len(restarts) != 3 {
		t.Errorf("%d restarts once the indexes were fixed, want 3: %v", len(restarts), restarts)
	}
}

// TestPreflightReadsTheRealNodesIndexes: the pre-flight's reading of the real node — a
// hidden k-NN index's settings from the cluster state, its version ID decoded to the
// version the node reports — lets the next major through and refuses the one after.
func TestPreflightReadsTheRealNodesIndexes(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	c := osClient(t, url)
	const index = "preflight-read"
	testsupport.Send(t, http.MethodPut, url+"/"+index, `{"settings":{"index.knn":true,"index.hidden":true,"number_of_replicas":0}}`)
	t.Cleanup(func() { testsupport.Send(t, http.MethodDelete, url+"/"+index, "") })
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := c.IndexSettings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]rollout.IndexSettings{index: indexes[index]}
	if indexes[index]["index.knn"] != "true" {
		t.Fatalf("settings read of %s: %v", index, indexes[index])
	}
	major, _, _ := strings.Cut(info.Version, ".")
	next, _ := strconv.Atoi(major)
	if refused := rollout.Preflight(fmt.Sprintf("%d.0.0", next+1), read); len(refused) != 0 {
		t.Errorf("the next major refuses an index of %s: %v", info.Version, refused)
	}
	refused := rollout.Preflight(fmt.Sprintf("%d.0.0", next+2), read)
	if want := index + ": created by OpenSearch " + info.Version; len(refused) != 1 || !strings.HasPrefix(refused[0], want) {
		t.Errorf("two majors on: %q, want %q…", refused, want)
	}
}

// TestPreflightRefusesWhatTheNextMajorDrops: on a real node of the previous major
// (devenv.PreviousMajorVersion), an index takes its vectors' space type from
// index.knn.space_type, as the 2.x line allowed for fields without a method. The pre-flight,
// reading that node, refuses an upgrade to this major and names the index and the setting.
// The node is then upgraded in place anyway, to show what the refusal prevents: the real
// node of the new major opens the index but archives the setting, so its field's space
// type silently falls back to the default.
func TestPreflightRefusesWhatTheNextMajorDrops(t *testing.T) {
	testgate.Integration(t, "OpenSearch nodes of two majors")
	root := testsupport.Root(t)
	const name, index = "ctl-major", "cosine-by-index-setting"
	node, err := devenv.StartNode(root, name, devenv.NodeOptions{Version: devenv.PreviousMajorVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	testsupport.Send(t, http.MethodPut, node.URL+"/"+index, `{"settings":{"index.knn":true,"index.knn.space_type":"cosinesimil","number_of_replicas":0},`+
		`"mappings":{"properties":{"embedding":{"type":"knn_vector","dimension":4}}}}`)
	indexes, err := osClient(t, node.URL).IndexSettings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	target, err := osClient(t, testsupport.OpenSearchURL(t)).Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	refused := rollout.Preflight(target.Version, map[string]rollout.IndexSettings{index: indexes[index]})
	if want := index + ": sets index.knn.space_type"; len(refused) != 1 || !strings.HasPrefix(refused[0], want) {
		t.Fatalf("pre-flight of %s → %s: %q, want %q…", node.Version, target.Version, refused, want)
	}
	t.Logf("pre-flight of %s → %s: %s", node.Version, target.Version, refused[0])

	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	upgraded, err := devenv.StartNode(root, name, devenv.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := osClient(t, upgraded.URL).IndexSettings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := after[index]["index.knn.space_type"]; kept || after[index]["archived.index.knn.space_type"] != "cosinesimil" {
		t.Errorf("%s upgraded in place to %s: the index's settings are %v; want index.knn.space_type archived", node.Version, upgraded.Version, after[index])
	}
}

// waitRolledOut waits until no pod is pending restart and the cluster is Ready.
func waitRolledOut(e *env, sc *v1alpha1.SearchCluster, timeout time.Duration) {
	e.t.Helper()
	e.eventually(timeout, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(sc), sc); err != nil {
			e.t.Fatal(err)
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionReady)
		updated := true
		for _, p := range sc.Status.Pools {
			updated = updated && p.UpdatedReplicas == p.Replicas && p.ReadyReplicas == p.Replicas
		}
		return sc.Status.Rollout == nil && updated && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation,
			fmt.Sprintf("rollout %+v, pools %+v, ready %+v", sc.Status.Rollout, sc.Status.Pools, ready)
	})
}

var _ controllers.HealthSource = (*controlledHealth)(nil)

// TestAllocationRestrictionIsLiftedAfterAFailedLift: a rolling restart restricted shard
// allocation to primaries and recorded it (status.allocationRestricted); the lift then
// fails because OpenSearch does not answer. The test plays that moment — it restricts
// allocation on the real node and records it, with the line to OpenSearch cut — and the
// operator must keep trying and lift it once OpenSearch answers, with no rollout pending:
// replicas must not stay unallocated for good.
func TestAllocationRestrictionIsLiftedAfterAFailedLift(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	line := startProxy(t, strings.TrimPrefix(url, "http://"))
	e := startRollingOperator(t, func(*v1alpha1.SearchCluster) string { return line.url() }, &controlledHealth{health: rollout.Health{Status: "green"}})
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "lift", Namespace: e.ns}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version:   "3.6.0",
		Security:  insecure,
		NodePools: []v1alpha1.NodePool{pool("all", v1alpha1.SIMDAuto, 1, "cluster_manager", "data")},
	}}}
	e.create(sc)
	playKubelet(e, sc, 1)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 60*time.Second)

	// The cluster is closed by a NetworkPolicy the operator keeps (content: internal/managed's
	// table test; this control plane's CNI-less node enforces nothing), owned by the cluster.
	var np networkingv1.NetworkPolicy
	e.eventually(10*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.NetworkPolicyName(sc)}, &np)
		return err == nil && metav1.IsControlledBy(&np, sc) && len(np.Spec.Ingress) == 2, fmt.Sprintf("%v %+v", err, np.Spec)
	})

	osClient := osClient(t, url)
	t.Cleanup(func() {
		_ = osClient.PutBackClusterSettings(context.Background(), map[string]any{opensearch.AllocationEnableSetting: nil})
	})
	line.cut()
	if err := osClient.RestrictAllocationToPrimaries(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.eventually(10*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(sc), sc); err != nil {
			return false, err.Error()
		}
		sc.Status.AllocationRestricted = true
		err := e.k8s.Status().Update(e.ctx, sc)
		return err == nil, fmt.Sprint(err)
	})
	e.waitEvent(sc.Name, "AllocationNotRestored")
	if v, _ := allocationEnable(t.Context(), osClient); v != "primaries" {
		t.Fatalf("with the line cut the restriction cannot have been lifted, setting is %q", v)
	}
	line.restore()
	e.eventually(30*time.Second, func() (bool, string) {
		v, err := allocationEnable(t.Context(), osClient)
		_ = e.k8s.Get(e.ctx, clientKey(sc), sc)
		return err == nil && v == "" && !sc.Status.AllocationRestricted, fmt.Sprintf("allocation.enable %q (%v), status.allocationRestricted %v", v, err, sc.Status.AllocationRestricted)
	})

	// Turned off in the spec, the policy goes.
	e.update(sc, func() { sc.Spec.Managed.NetworkPolicy.Enabled = ptr.To(false) })
	e.eventually(20*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: managed.NetworkPolicyName(sc)}, &np)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// allocationEnable is the persistent cluster.routing.allocation.enable, "" when unset.
func allocationEnable(ctx context.Context, c *opensearch.Client) (string, error) {
	settings, err := c.PersistentClusterSettings(ctx)
	return settings[opensearch.AllocationEnableSetting], err
}

// TestVotingReadsTheElectedManager: the voting configuration, the joined nodes and the
// elected cluster manager come from one cluster-state read of the real node — the hand-over
// (a61db8f) moves the role away from the elected manager, so it must be named.
func TestVotingReadsTheElectedManager(t *testing.T) {
	c := osClient(t, testsupport.OpenSearchURL(t))
	v, err := c.Voting(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Joined) != 1 || v.Manager != v.Joined[0] || !slices.Equal(v.Voters, v.Joined) || len(v.Excluded) != 0 {
		t.Fatalf("voting %+v, want the single node as voter, joined and elected manager", v)
	}
}
