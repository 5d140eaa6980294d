package controllers

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/simd"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// The controllers' decisions as table tests: no real part, milliseconds. The integration
// tests (*_integration_test.go) show the same decisions against the real parts.

func TestClassify(t *testing.T) {
	unreachable := &opensearch.TransportError{Op: "GET /", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name      string
		err       error
		reason    string
		transient bool
	}{
		{"a step's own refusal", &reasonError{reason: v1alpha1.ReasonInvalidSchedule, message: "bad"}, v1alpha1.ReasonInvalidSchedule, false},
		{"a missing Secret", &connect.Error{Reason: v1alpha1.ReasonSecretNotFound, Message: "no"}, v1alpha1.ReasonSecretNotFound, true},
		{"an unknown CA", fmt.Errorf("get: %w", x509.UnknownAuthorityError{}), v1alpha1.ReasonTLSError, true},
		{"plain HTTP to HTTPS", &opensearch.TransportError{Op: "GET /", Err: errors.New("http: server gave HTTP response to HTTPS client")}, v1alpha1.ReasonTLSError, true},
		{"no answer", unreachable, v1alpha1.ReasonUnreachable, true},
		{"a block (403)", &opensearch.APIError{Status: 403, Type: "cluster_block_exception"}, v1alpha1.ReasonClusterBlocked, true},
		{"a block (429)", &opensearch.APIError{Status: 429, Type: "cluster_block_exception"}, v1alpha1.ReasonClusterBlocked, true},
		{"bad credentials", &opensearch.APIError{Status: 401}, v1alpha1.ReasonUnauthorized, true},
		{"no permission", &opensearch.APIError{Status: 403, Type: "security_exception"}, v1alpha1.ReasonUnauthorized, true},
		{"back-pressure", &opensearch.APIError{Status: 429, Type: "es_rejected_execution_exception"}, v1alpha1.ReasonOpenSearchError, true},
		{"a server error", &opensearch.APIError{Status: 503}, v1alpha1.ReasonOpenSearchError, true},
		{"a refused request", &opensearch.APIError{Status: 400, Type: "mapper_parsing_exception"}, v1alpha1.ReasonRejected, false},
		{"anything else", errors.New("apiserver hiccup"), v1alpha1.ReasonReconciling, true},
	} {
		f := classify(tc.err)
		if f.reason != tc.reason || f.transient != tc.transient {
			t.Errorf("%s: classify = %s transient=%v, want %s transient=%v", tc.name, f.reason, f.transient, tc.reason, tc.transient)
		}
	}
}

func TestSetManagedConditions(t *testing.T) {
	ready := probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, message: "green"}
	for _, tc := range []struct {
		name      string
		obs       poolObservation
		plan      rollout.Plan
		probe     probeResult
		simd      string
		condition string
		reason    string
		scheduled metav1.ConditionStatus
	}{
		{"an unschedulable pool first", poolObservation{unschedulable: []string{"spr: no node"}, desired: 3, ready: 0}, rollout.Plan{Pending: 1}, ready, "pool spr asked for avx512_spr",
			v1alpha1.ConditionDegraded, v1alpha1.ReasonUnschedulable, metav1.ConditionFalse},
		{"a pod that cannot start before pods starting", poolObservation{desired: 3, ready: 2, failing: []string{"nodes-2: container opensearch: CrashLoopBackOff"}},
			rollout.Plan{Pending: 2, BlockedBy: "cluster_health"}, ready, "",
			v1alpha1.ConditionDegraded, v1alpha1.ReasonPodsFailing, metav1.ConditionTrue},
		{"pods starting", poolObservation{desired: 3, ready: 2}, rollout.Plan{Pending: 1}, ready, "",
			v1alpha1.ConditionProgressing, v1alpha1.ReasonPodsStarting, metav1.ConditionTrue},
		{"a rolling restart", poolObservation{desired: 3, ready: 3}, rollout.Plan{Pending: 2, BlockedBy: "cluster_health"}, ready, "",
			v1alpha1.ConditionProgressing, v1alpha1.ReasonRollingRestart, metav1.ConditionTrue},
		{"a pool on CPUs without its SIMD level", poolObservation{desired: 3, ready: 3}, rollout.Plan{}, ready, "pool spr asked for avx512_spr but its nodes' CPUs have avx512",
			v1alpha1.ConditionDegraded, v1alpha1.ReasonSIMDUnavailable, metav1.ConditionTrue},
		{"a pool that loaded another faiss library", poolObservation{desired: 3, ready: 3}, rollout.Plan{}, ready, "pool small: its nodes loaded faiss library avx512, where their simd level and CPUs select avx2",
			v1alpha1.ConditionDegraded, v1alpha1.ReasonFaissLibraryMismatch, metav1.ConditionTrue},
		{"what OpenSearch says when it is worse", poolObservation{desired: 3, ready: 3}, rollout.Plan{},
			probeResult{state: conditions.Degraded, reason: v1alpha1.ReasonClusterRed, message: "red"}, "pool spr asked for avx512_spr but its nodes' CPUs have avx512",
			v1alpha1.ConditionDegraded, v1alpha1.ReasonClusterRed, metav1.ConditionTrue},
		{"then what OpenSearch says", poolObservation{desired: 3, ready: 3}, rollout.Plan{}, ready, "",
			v1alpha1.ConditionReady, v1alpha1.ReasonReconciled, metav1.ConditionTrue},
	} {
		sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
		variants := variantFinding{reason: v1alpha1.ReasonSIMDUnavailable, message: tc.simd}
		if strings.Contains(tc.simd, "faiss") {
			variants.reason = v1alpha1.ReasonFaissLibraryMismatch
		}
		if tc.simd == "" {
			variants = variantFinding{}
		}
		setManagedConditions(sc, tc.obs, tc.plan, tc.probe, variants)
		c := meta.FindStatusCondition(sc.Status.Conditions, tc.condition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason || c.ObservedGeneration != 4 {
			t.Errorf("%s: %s = %+v, want True with %s", tc.name, tc.condition, c, tc.reason)
		}
		if s := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionScheduled); s == nil || s.Status != tc.scheduled {
			t.Errorf("%s: Scheduled = %+v, want %s", tc.name, s, tc.scheduled)
		}
	}
}

// TestPodsFailingSaysWhatMendsIt: the version may go back only while no node has run the
// one the failing pods were upgraded to.
func TestPodsFailingSaysWhatMendsIt(t *testing.T) {
	const setBack = "spec.managed.version may go back to 3.5.0"
	for _, tc := range []struct {
		name    string
		upgrade bool
		newest  string
		want    bool
	}{
		{"the first upgraded pod crash-loops", true, "3.5.0", true},
		{"a node has run the new version", true, "3.6.0", false},
		{"not an upgrade", false, "3.6.0", false},
		{"the nodes' versions are not known yet", true, "", false},
	} {
		sc := &v1alpha1.SearchCluster{Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{Version: "3.6.0"}},
			Status: v1alpha1.SearchClusterStatus{NewestNodeVersion: tc.newest}}
		msg := podsFailing(sc, poolObservation{upgrade: tc.upgrade, failing: []string{"nodes-2: container opensearch: CrashLoopBackOff"}})
		if !strings.Contains(msg, "nodes-2: container opensearch: CrashLoopBackOff") || strings.Contains(msg, setBack) != tc.want {
			t.Errorf("%s: %q, want the pod named and %q said: %v", tc.name, msg, setBack, tc.want)
		}
	}
}

func TestRecordOutcome(t *testing.T) {
	old := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	young := strconv.FormatInt(time.Now().UnixMilli(), 10)
	r := &VectorIndexReconciler{Options: Options{IndexRedGrace: time.Minute}}
	for _, tc := range []struct {
		name        string
		health      string
		created     string
		progressing string
		err         error
		condition   string
		reason      string
		red, retry  bool
	}{
		{"converged", "green", old, "", nil, v1alpha1.ConditionReady, v1alpha1.ReasonReconciled, false, false},
		{"converged, replicas unassigned", "yellow", old, "", nil, v1alpha1.ConditionReady, v1alpha1.ReasonReconciled, false, false},
		{"red and old", "red", old, "", nil, v1alpha1.ConditionDegraded, v1alpha1.ReasonIndexHealthRed, true, false},
		{"red but young: primaries starting", "red", young, "shards starting", nil, v1alpha1.ConditionProgressing, v1alpha1.ReasonReconciling, false, false},
		{"a conflict is left alone", "", "", "", &conflictError{msg: "shards 2 ≠ 3"}, v1alpha1.ConditionDegraded, v1alpha1.ReasonConflict, false, false},
		{"unreachable is retried", "", "", "", &opensearch.TransportError{Op: "GET", Err: errors.New("refused")}, v1alpha1.ConditionDegraded, v1alpha1.ReasonUnreachable, false, true},
		{"a refusal waits for a spec change", "", "", "", &opensearch.APIError{Status: 400}, v1alpha1.ConditionDegraded, v1alpha1.ReasonRejected, false, false},
	} {
		vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		vi.Status.Health = tc.health
		run := &indexRun{vi: vi, name: "docs", progressing: tc.progressing}
		if tc.created != "" {
			run.live = &opensearch.Index{Settings: map[string]string{"index.creation_date": tc.created}}
		}
		redFor, retry := r.recordOutcome(run, tc.err)
		c := meta.FindStatusCondition(vi.Status.Conditions, tc.condition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason {
			t.Errorf("%s: %s = %+v, want True with %s", tc.name, tc.condition, c, tc.reason)
		}
		if (redFor > 0) != tc.red || (retry != nil) != tc.retry {
			t.Errorf("%s: red for %s, retry %v; want red %v, retry %v", tc.name, redFor, retry, tc.red, tc.retry)
		}
	}
}

// TestBenchmarkRunWaitsForItsIndex: the first step of a BenchmarkRun holds it Pending until
// its VectorIndex exists and, before it starts, is Ready; a run already Running goes on.
func TestBenchmarkRunWaitsForItsIndex(t *testing.T) {
	readyIndex := func() *v1alpha1.VectorIndex {
		vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns"}}
		meta.SetStatusCondition(&vi.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReconciled})
		return vi
	}
	for _, tc := range []struct {
		name   string
		index  *v1alpha1.VectorIndex
		phase  string
		stop   bool
		reason string
	}{
		{"no index", nil, "", true, v1alpha1.ReasonIndexNotFound},
		{"index not Ready", &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns"}}, "", true, v1alpha1.ReasonIndexNotReady},
		{"index Ready", readyIndex(), "", false, ""},
		{"already Running on an index that left Ready", &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns"}}, v1alpha1.BenchmarkRunning, false, ""},
	} {
		b := fake.NewClientBuilder().WithScheme(Scheme())
		if tc.index != nil {
			b = b.WithObjects(tc.index)
		}
		r := &BenchmarkRunReconciler{Client: b.Build(), Options: Options{ClusterPollInterval: 30 * time.Second}}
		run := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}}
		run.Spec.IndexRef.Name = "docs"
		run.Status.Phase = tc.phase
		got := r.resolveIndex(context.Background(), &benchmarkScope{run: run})
		if got.Stop != tc.stop || got.Err != nil {
			t.Errorf("%s: %+v, want stop=%v", tc.name, got, tc.stop)
			continue
		}
		if tc.stop {
			c := meta.FindStatusCondition(run.Status.Conditions, v1alpha1.ConditionProgressing)
			if run.Status.Phase != v1alpha1.BenchmarkPending || c == nil || c.Reason != tc.reason || got != steps.StopFor(30*time.Second) {
				t.Errorf("%s: phase %s, Progressing %+v, result %+v; want Pending with %s, back in 30s", tc.name, run.Status.Phase, c, got, tc.reason)
			}
		}
	}
}

// TestObservePools: pods read into status.pools and the planner's view — ready, outdated
// (by the StatefulSet's update revision, once it has observed its spec), unschedulable
// with the scheduler's message, missing, and the CPU level of the nodes they run on.
func TestObservePools(t *testing.T) {
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"}}
	sc.Spec.Managed = &v1alpha1.ManagedCluster{NodePools: []v1alpha1.NodePool{
		{Name: "data", Replicas: 3, Roles: []v1alpha1.NodeRole{v1alpha1.RoleData}},
		{Name: "spr", Replicas: 1, Roles: []v1alpha1.NodeRole{v1alpha1.RoleClusterManager}},
	}}
	set := func(pool, revision string, observed bool) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "vectors-" + pool, Generation: 2}}
		s.Status.UpdateRevision = revision
		if observed {
			s.Status.ObservedGeneration = 2
		}
		return s
	}
	pod := func(name, pool, revision, node string, ready bool, scheduled *corev1.PodCondition) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{
			managed.ClusterLabel: "vectors", managed.PoolLabel: pool, appsv1.ControllerRevisionHashLabelKey: revision}}}
		p.Spec.NodeName = node
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		if scheduled != nil {
			p.Status.Conditions = append(p.Status.Conditions, *scheduled)
		}
		return p
	}
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	avx512 := map[string]string{simd.ArchLabel: "amd64"}
	for _, f := range []string{"AVX2", "AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW"} {
		avx512[simd.CPUIDLabelPrefix+f] = "true"
	}
	avx2 := map[string]string{simd.ArchLabel: "amd64", simd.CPUIDLabelPrefix + "AVX2": "true"}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(
		pod("vectors-data-0", "data", "new", "n1", true, nil),
		pod("vectors-data-1", "data", "old", "n2", true, nil),
		// vectors-data-2 is missing
		pod("vectors-spr-0", "spr", "new", "", false, &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: node affinity"}),
		node("n1", avx512), node("n2", avx2),
	).Build()
	r := &SearchClusterReconciler{Client: c, APIReader: c}
	obs, err := r.observePools(context.Background(), sc, []poolView{{name: "data", sts: set("data", "new", true), data: true, wanted: 3}, {name: "spr", sts: set("spr", "new", true), clusterManager: true, wanted: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if obs.desired != 4 || obs.ready != 2 || obs.missing != 1 || !obs.settled || len(obs.unschedulable) != 1 {
		t.Errorf("observation %+v: want 4 desired, 2 ready, 1 missing, settled, 1 unschedulable", obs)
	}
	outdated := map[string]bool{}
	for _, p := range obs.pods {
		outdated[p.Name] = p.Outdated
	}
	if !outdated["vectors-data-1"] || outdated["vectors-data-0"] {
		t.Errorf("outdated pods %v, want only vectors-data-1", outdated)
	}
	data, spr := sc.Status.Pools[0], sc.Status.Pools[1]
	if data.Replicas != 2 || data.ReadyReplicas != 2 || data.UpdatedReplicas != 1 || data.NodeSIMD != "avx2" {
		t.Errorf("pool data %+v: want 2 pods, 2 ready, 1 updated, nodes' common level avx2", data)
	}
	if spr.Unschedulable == "" || spr.NodeSIMD != "" {
		t.Errorf("pool spr %+v: want the scheduler's message and no node level", spr)
	}
	if obs.cpu["vectors-data-0"] != "avx512" || obs.cpu["vectors-data-1"] != "avx2" {
		t.Errorf("pods' CPU levels %v", obs.cpu)
	}

	// A StatefulSet that has not observed its spec yet: nothing is outdated until it has.
	obs, err = r.observePools(context.Background(), sc, []poolView{{name: "data", sts: set("data", "new", false), data: true, wanted: 3}, {name: "spr", sts: set("spr", "new", true), clusterManager: true, wanted: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range obs.pods {
		if p.Outdated {
			t.Errorf("pod %s outdated before its StatefulSet observed its spec", p.Name)
		}
	}
	if obs.settled {
		t.Error("settled while a StatefulSet has not observed its spec")
	}

	// The data pool shrinks to one node: the pod above it is leaving, and not wanted.
	obs, err = r.observePools(context.Background(), sc, []poolView{{name: "data", sts: set("data", "new", true), data: true, wanted: 1}, {name: "spr", sts: set("spr", "new", true), clusterManager: true, wanted: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range obs.pods {
		if p.Leaving != (p.Name == "vectors-data-1") {
			t.Errorf("pod %s leaving=%v, want only vectors-data-1", p.Name, p.Leaving)
		}
	}
	if obs.desired != 2 || obs.missing != 0 || obs.ready != 1 {
		t.Errorf("observation while shrinking %+v: want 2 desired, 1 ready (the leaving pod is not counted), none missing", obs)
	}
}

// reconcileOnce runs one whole Reconcile of r for key, as the manager would, failing the
// test on an error, and reads the object back through c: nil once it is gone.
func reconcileOnce[T any, PT interface {
	*T
	client.Object
}](t *testing.T, r reconcile.Reconciler, c client.Client, key types.NamespacedName, step string) (PT, ctrl.Result) {
	t.Helper()
	answer, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	got := PT(new(T))
	if err := c.Get(context.Background(), key, got); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	} else if err != nil {
		return nil, answer
	}
	return got, answer
}
