package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
	"github.com/vectorpilot/vectorpilot/internal/security"
	"github.com/vectorpilot/vectorpilot/internal/simd"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

// fieldOwner is the server-side apply field manager of the objects the operator builds.
const fieldOwner = client.FieldOwner("vectorpilot")

// HealthSource tells the planners the cluster's health, where every shard copy is and its
// voting configuration. A zero Health means OpenSearch did not answer.
type HealthSource interface {
	Health(ctx context.Context, sc *v1alpha1.SearchCluster) rollout.Health
	// IndexSettings are the indexes' own settings, by name, an upgrade's pre-flight reads.
	IndexSettings(ctx context.Context, sc *v1alpha1.SearchCluster) (map[string]rollout.IndexSettings, error)
}

// openSearchHealth is the cluster's own: the status the reconcile's probe has just read
// into status.health ("" when OpenSearch did not answer), the shard table and the voting
// configuration, read when a restart or a removal is decided.
type openSearchHealth struct {
	openSearch func(context.Context, *v1alpha1.SearchCluster) (clusterAPI, error)
}

func (h openSearchHealth) Health(ctx context.Context, sc *v1alpha1.SearchCluster) rollout.Health {
	if sc.Status.Health == "" {
		return rollout.Health{}
	}
	osClient, err := h.openSearch(ctx, sc)
	if err != nil {
		return rollout.Health{}
	}
	shards, err := osClient.Shards(ctx)
	if err != nil {
		return rollout.Health{}
	}
	out := rollout.Health{Status: sc.Status.Health}
	for _, s := range shards {
		out.Shards = append(out.Shards, rollout.Shard{Index: s.Index, Shard: s.Shard, Primary: s.PriRep == "p", State: s.State, Node: s.Node, RelocatingTo: s.RelocatingTo})
	}
	if v, err := osClient.Voting(ctx); err == nil {
		out.Voting = &rollout.Voting{Voters: v.Voters, Joined: v.Joined, Excluded: v.Excluded, Manager: v.Manager}
	}
	return out
}

func (h openSearchHealth) IndexSettings(ctx context.Context, sc *v1alpha1.SearchCluster) (map[string]rollout.IndexSettings, error) {
	osClient, err := h.openSearch(ctx, sc)
	if err != nil {
		return nil, err
	}
	return osClient.IndexSettings(ctx)
}

// poolView is one pool the cluster runs: a pool of the spec, or a removed one whose
// StatefulSet still runs nodes to drain (its roles then come from its labels).
type poolView struct {
	name                             string
	sts                              *appsv1.StatefulSet
	clusterManager, data, persistent bool
	// remote: the pool's nodes serve searchable snapshots (warm or search role).
	remote bool
	// wanted is the spec's replicas, 0 for a removed pool.
	wanted  int
	removed bool
}

// poolObservation is what the pods of a managed cluster show.
type poolObservation struct {
	pods    []rollout.Pod
	desired int
	ready   int
	// missing pods the StatefulSets want that do not exist.
	missing int
	// settled: every StatefulSet has observed its spec, so outdated pods are known.
	settled       bool
	unschedulable []string
	upgrade       bool
	// upgraded: some pod runs the spec's version already (an upgrade under way).
	upgraded bool
	// cpu is the SIMD level of each pod's Kubernetes node, by pod name.
	cpu map[string]string
	// podUIDs are the pods' UIDs, by name.
	podUIDs map[string]types.UID
	// securityPluginMissing is the message of a pod whose image has no security plugin.
	securityPluginMissing string
	// failing are the pods whose containers cannot run (managed.Failing), "pod: why".
	failing []string
}

// clusterRun is one reconcile of a SearchCluster: what each step found, for the next (an
// external cluster's probe uses only sc).
type clusterRun struct {
	sc    *v1alpha1.SearchCluster
	pools []poolView
	obs   poolObservation
	probe probeResult
	plan  rollout.Plan
	// security is each pool's certificates revision (security on).
	security map[string]managed.SecurityRevision
	// drain are nodes to exclude from shard allocation this reconcile.
	drain []string
	// health is the cluster as the planners see it, read once per reconcile when a
	// removal or a restart is decided (clusterHealth).
	health *rollout.Health
	// variants says why the pools do not run the library variants they asked for.
	variants variantFinding
	// failed is why a step could not do its part, for the Degraded condition.
	failed *stepFailure
}

// stepFailure is a step's failure as a condition's reason and message.
type stepFailure struct{ reason, message string }

// clusterHealth reads the shard table and voting configuration the first time a planner
// needs them in this reconcile, and hands out the same reading after.
func (r *SearchClusterReconciler) clusterHealth(ctx context.Context, m *clusterRun) rollout.Health {
	if m.health == nil {
		h := r.health().Health(ctx, m.sc)
		m.health = &h
	}
	return *m.health
}

// managedSteps run a managed cluster: fix the bootstrap configuration, keep the security
// material (CA, certificates, users), apply the objects, observe the pods, probe OpenSearch
// and read what its nodes run, keep the disruption budget to its health, remove the nodes
// the spec no longer wants, restart what is outdated, move shards off drained nodes
// (clusterStatus sets the conditions after them).
func (r *SearchClusterReconciler) managedSteps() []steps.Step[*clusterRun] {
	return []steps.Step[*clusterRun]{
		steps.Fallible("record bootstrap", func(ctx context.Context, m *clusterRun) error { return r.recordBootstrap(ctx, m.sc) }),
		{Name: "secure", Run: r.secure},
		steps.Fallible("apply objects", func(ctx context.Context, m *clusterRun) (err error) {
			if err = r.keystoreAllowed(ctx, m.sc); err == nil {
				m.pools, err = r.applyObjects(ctx, m.sc, m.security)
			}
			if err != nil {
				m.failed = &stepFailure{reason: applyFailureReason(err), message: err.Error()}
			}
			return err
		}),
		steps.Fallible("observe pools", func(ctx context.Context, m *clusterRun) (err error) {
			m.obs, err = r.observePools(ctx, m.sc, m.pools, m.security)
			return err
		}),
		{Name: "probe", Run: func(ctx context.Context, m *clusterRun) steps.Result {
			m.probe = r.probe(ctx, m.sc) // its retry waits until the rollout step has run
			return steps.Continue()
		}},
		{Name: "observe variants", Run: func(ctx context.Context, m *clusterRun) steps.Result {
			m.variants = observeVariants(m.sc, m.obs, m.probe.nodes)
			// A CPU without the level asked for explains a faiss library below it.
			if faiss := r.observeFaissLibraries(ctx, m.sc, m.obs); m.variants.message == "" {
				m.variants = faiss
			}
			return steps.Continue()
		}},
		steps.Fallible("apply disruption budget", func(ctx context.Context, m *clusterRun) error {
			return r.applyDisruptionBudget(ctx, m.sc)
		}),
		steps.Fallible("remove nodes", r.removeNodes),
		steps.Fallible("roll out", func(ctx context.Context, m *clusterRun) (err error) {
			m.plan, err = r.rollOut(ctx, m)
			m.drain = append(m.drain, m.plan.Drain...)
			return err
		}),
		steps.Fallible("drain nodes", func(ctx context.Context, m *clusterRun) error {
			return r.syncDrains(ctx, m.sc, m.obs, m.drain)
		}),
	}
}

// applyFailureReason is the Degraded reason of objects that could not be applied.
func applyFailureReason(err error) string {
	var ce *connect.Error
	var nc *nameConflict
	switch {
	case errors.Is(err, managed.ErrNoSysctlImage):
		return v1alpha1.ReasonPrivilegedStepRefused
	case errors.As(err, &ce):
		return ce.Reason
	case errors.As(err, &nc):
		return v1alpha1.ReasonNameConflict
	}
	return v1alpha1.ReasonApplyFailed
}

// recordBootstrap fixes cluster.initial_cluster_manager_nodes in status before any pod
// exists, so the configuration never changes with later scaling.
func (r *SearchClusterReconciler) recordBootstrap(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	if len(sc.Status.InitialClusterManagerNodes) > 0 {
		return nil
	}
	sc.Status.InitialClusterManagerNodes = managed.InitialClusterManagerNodes(sc)
	sc.Status.Endpoint = r.Resolver.Endpoint(sc)
	return steps.RecordIntent(ctx, r.Client, sc, "the initial cluster-manager nodes")
}

// keystoreAllowed checks that every keystore Secret consents to the cluster
// (connect.ConsentAnnotation): its keys are mounted into pods whose image the cluster's
// author chooses, so naming a Secret must not be a way to read it.
func (r *SearchClusterReconciler) keystoreAllowed(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	for _, ks := range sc.Spec.Managed.Keystore {
		if _, err := connect.ClusterSecret(ctx, r.APIReader, sc, ks.SecretName); err != nil {
			return err
		}
	}
	return nil
}

// applyObjects server-side applies every object of the cluster and returns the pools it
// runs: the spec's, as applied, then removed pools whose StatefulSets still exist.
func (r *SearchClusterReconciler) applyObjects(ctx context.Context, sc *v1alpha1.SearchCluster, revisions map[string]managed.SecurityRevision) ([]poolView, error) {
	live := managed.Live{Security: revisions, Replicas: map[string]int32{}, SysctlImage: r.Options.SysctlImage}
	if sc.Status.ClusterUUID == "" {
		live.InitialManagers = sc.Status.InitialClusterManagerNodes
	}
	var running appsv1.StatefulSetList
	if err := r.List(ctx, &running, client.InNamespace(sc.Namespace), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		return nil, err
	}
	var removed []poolView
	for i := range running.Items {
		sts := &running.Items[i]
		pool := sts.Labels[managed.PoolLabel]
		j := slices.IndexFunc(sc.Spec.Managed.NodePools, func(p v1alpha1.NodePool) bool { return p.Name == pool })
		switch {
		case j < 0 && metav1.IsControlledBy(sts, sc):
			removed = append(removed, poolView{name: pool, sts: sts, removed: true, clusterManager: sts.Labels[managed.ClusterManagerLabel] == "true",
				data: sts.Labels[managed.DataLabel] == "true", persistent: len(sts.Spec.VolumeClaimTemplates) > 0})
		case j >= 0 && ptr.Deref(sts.Spec.Replicas, 0) > sc.Spec.Managed.NodePools[j].Replicas:
			// Shrinking: its nodes leave one at a time (removeNodes). The cache may not
			// have seen the last removal yet, and a stale count would bring a removed node
			// back.
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
				return nil, err
			}
			live.Replicas[pool] = ptr.Deref(sts.Spec.Replicas, 0)
		}
	}
	pools, svc, err := managed.Objects(sc, live)
	if err != nil {
		return nil, err
	}
	if err := r.apply(ctx, sc, svc); err != nil {
		return nil, err
	}
	if err := r.applyNetworkPolicy(ctx, sc); err != nil {
		return nil, err
	}
	var views []poolView
	for i, p := range pools {
		if err := r.keepRendered(ctx, sc, p, live.InitialManagers); err != nil {
			return nil, err
		}
		for _, obj := range []client.Object{p.ConfigMap, p.Headless, p.StatefulSet} {
			if err := r.apply(ctx, sc, obj); err != nil {
				return nil, err
			}
		}
		spec := sc.Spec.Managed.NodePools[i]
		views = append(views, poolView{name: spec.Name, sts: p.StatefulSet, clusterManager: managed.IsClusterManager(spec),
			data: slices.Contains(spec.Roles, v1alpha1.RoleData), persistent: spec.Storage != nil, wanted: int(spec.Replicas),
			remote: slices.Contains(spec.Roles, v1alpha1.RoleWarm) || slices.Contains(spec.Roles, v1alpha1.RoleSearch)})
	}
	return append(views, removed...), nil
}

// keepRendered gives pool p the pod template and configuration its pods run when
// managed.KeepRendered says so: an operator upgrade restarts no pod of a cluster whose
// spec did not change. What the pool runs is read past the cache: a stale template held
// would undo the last one applied.
func (r *SearchClusterReconciler) keepRendered(ctx context.Context, sc *v1alpha1.SearchCluster, p managed.Pool, initialManagers []string) error {
	var sts appsv1.StatefulSet
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(p.StatefulSet), &sts); err != nil {
		return client.IgnoreNotFound(err)
	}
	specObserved := false
	if _, stamped := sts.Annotations[managed.RenderedFromAnnotation]; !stamped {
		// Rendered by an operator from before the annotation: was the spec it rendered
		// the current one? The status says so when it observed the current generation.
		var fresh v1alpha1.SearchCluster
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sc), &fresh); err != nil {
			return err
		}
		specObserved = fresh.Generation == sc.Generation && fresh.Status.ObservedGeneration == fresh.Generation
	}
	if !managed.KeepRendered(&sts, p.StatefulSet.Annotations[managed.RenderedFromAnnotation], specObserved) {
		return nil
	}
	// The template names its configuration by hash: both are kept, or neither.
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(p.ConfigMap), &cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	data, err := managed.KeptConfig(cm.Data, initialManagers)
	if err != nil {
		return err
	}
	p.StatefulSet.Spec.Template, p.ConfigMap.Data = sts.Spec.Template, data
	return nil
}

// applyDisruptionBudget keeps the cluster's budget to its health (one voluntary
// disruption while green, none otherwise) and deletes the per-pool budgets earlier
// versions made, which would let a node drain take a pod of every pool at once.
func (r *SearchClusterReconciler) applyDisruptionBudget(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	if err := r.apply(ctx, sc, managed.DisruptionBudget(sc, sc.Status.Health)); err != nil {
		return err
	}
	var budgets policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &budgets, client.InNamespace(sc.Namespace), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		return err
	}
	for i := range budgets.Items {
		b := &budgets.Items[i]
		if b.Name != managed.DisruptionBudgetName(sc) && metav1.IsControlledBy(b, sc) {
			if err := r.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// applyNetworkPolicy keeps the cluster's NetworkPolicy, or removes it when the spec turns it
// off.
func (r *SearchClusterReconciler) applyNetworkPolicy(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	if managed.NetworkPolicyEnabled(sc) {
		return r.apply(ctx, sc, managed.NetworkPolicy(sc, managed.Operator{Namespace: r.Options.OperatorNamespace}))
	}
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: managed.NetworkPolicyName(sc), Namespace: sc.Namespace}}
	return client.IgnoreNotFound(r.Delete(ctx, np))
}

// nameConflict is an object the operator would write that exists and is not the
// cluster's: it is never taken over (its owner's garbage collection, or the cluster's, would
// delete what someone else made).
type nameConflict struct {
	kind, namespace, name string
}

func (e *nameConflict) Error() string {
	return fmt.Sprintf("%s %s/%s exists and was not made for this SearchCluster: the operator does not take it over; rename or remove it",
		e.kind, e.namespace, e.name)
}

// apply server-side applies obj owned by sc and reads the result back into obj. An
// existing object sc does not control is a *nameConflict, left as it is.
func (r *SearchClusterReconciler) apply(ctx context.Context, sc *v1alpha1.SearchCluster, obj client.Object) error {
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	switch err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), existing); {
	case err == nil && !metav1.IsControlledBy(existing, sc):
		return &nameConflict{kind: existing.Kind, namespace: existing.Namespace, name: existing.Name}
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	if err := controllerutil.SetControllerReference(sc, obj, r.Scheme()); err != nil {
		return err
	}
	content, err := managed.Content(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// observePools reads the pods and their nodes into status.pools and the planners' view,
// and when the certificates the running pods serve end into status.certificates. A pod its
// pool no longer wants (ordinal at or above the spec's replicas, or of a removed pool) is
// leaving.
func (r *SearchClusterReconciler) observePools(ctx context.Context, sc *v1alpha1.SearchCluster, pools []poolView, revisions map[string]managed.SecurityRevision) (poolObservation, error) {
	// Read past the cache: a pod deleted by the last reconcile can still look ready and
	// running in it, and a restart decided on that would take down a second copy.
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(sc.Namespace), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		return poolObservation{}, err
	}
	obs := poolObservation{settled: true, cpu: map[string]string{}, podUIDs: map[string]types.UID{}}
	sc.Status.Pools = nil
	var served time.Time
	for _, pool := range pools {
		sts := pool.sts
		status := v1alpha1.NodePoolStatus{Name: pool.name}
		settled := sts.Status.ObservedGeneration >= sts.Generation && sts.Status.UpdateRevision != ""
		obs.settled = obs.settled && settled
		var levels []string
		existing := 0
		for i := range pods.Items {
			pod := &pods.Items[i]
			if pod.Labels[managed.PoolLabel] != pool.name {
				continue
			}
			existing++
			obs.podUIDs[pod.Name] = pod.UID
			ready := managed.PodReady(pod)
			outdated := settled && pod.Labels[appsv1.ControllerRevisionHashLabelKey] != sts.Status.UpdateRevision
			status.Replicas++
			if ready {
				status.ReadyReplicas++
			}
			if !outdated && settled {
				status.UpdatedReplicas++
			}
			if msg := unschedulable(pod); msg != "" {
				status.Unschedulable = msg
			}
			if msg := failedInit(pod, managed.SecurityPluginCheck); msg != "" {
				obs.securityPluginMissing = pod.Name + ": " + msg
			} else if msg := managed.Failing(pod); msg != "" {
				obs.failing = append(obs.failing, pod.Name+": "+msg)
			}
			if pod.Spec.NodeName != "" {
				level := r.nodeSIMD(ctx, pod.Spec.NodeName)
				levels = append(levels, level)
				obs.cpu[pod.Name] = level
			}
			expire := revisions[pool.name].CertificatesExpire(pod)
			if !expire.IsZero() && pod.DeletionTimestamp == nil && (served.IsZero() || expire.Before(served)) {
				served = expire
			}
			leaving := ordinal(pod.Name) >= pool.wanted
			obs.upgrade = obs.upgrade || (outdated && !leaving && pod.Annotations[managed.VersionAnnotation] != sc.Spec.Managed.Version)
			obs.upgraded = obs.upgraded || (!leaving && pod.Annotations[managed.VersionAnnotation] == sc.Spec.Managed.Version)
			obs.pods = append(obs.pods, rollout.Pod{
				Name: pod.Name, Pool: pool.name, Ordinal: ordinal(pod.Name), ClusterManager: pool.clusterManager, Data: pool.data,
				Persistent: pool.persistent, Remote: pool.remote, Ready: ready, ServedSinceStart: managed.ServedSinceStart(pod), Terminating: pod.DeletionTimestamp != nil, Outdated: outdated, Leaving: leaving,
				CertificatesExpire: expire,
			})
		}
		if status.Unschedulable != "" {
			obs.unschedulable = append(obs.unschedulable, pool.name+": "+status.Unschedulable)
		}
		status.NodeSIMD = simd.Common(levels)
		obs.desired += pool.wanted
		obs.ready += min(int(status.ReadyReplicas), pool.wanted)
		if missing := pool.wanted - existing; missing > 0 {
			obs.missing += missing
		}
		sc.Status.Pools = append(sc.Status.Pools, status)
	}
	if c := sc.Status.Certificates; c != nil && !served.IsZero() {
		c.ServedNotAfter = ptr.To(metav1.NewTime(served.UTC().Truncate(time.Second)))
	}
	return obs, nil
}

// observeVariants records in status.pools what the pools' OpenSearch nodes report in
// nodes (the probe's reading): how many joined, the CPU level each found where it started,
// the k-NN library variant and the Lucene vector code they run. It says why the cluster is
// Degraded when a pool's nodes lack the SIMD level it asked for.
func observeVariants(sc *v1alpha1.SearchCluster, obs poolObservation, nodes []opensearch.NodeVariant) variantFinding {
	if nodes == nil {
		return variantFinding{} // the probe found OpenSearch unreachable
	}
	asked := map[string]v1alpha1.SIMDLevel{}
	for _, p := range sc.Spec.Managed.NodePools {
		asked[p.Name] = p.SIMD
	}
	var short []string
	for i := range sc.Status.Pools {
		pool := &sc.Status.Pools[i]
		var levels, cpus, vectors []string
		for _, n := range nodes {
			if n.Attributes[managed.PoolAttribute] != pool.Name {
				continue
			}
			// The node's own reading of its CPU; the Kubernetes node's labels for nodes
			// started before it was rendered.
			cpu, detected := n.Attributes[managed.CPUAttribute]
			if detected {
				cpus = append(cpus, cpu)
			} else if cpu, detected = obs.cpu[n.Name]; !detected {
				cpu = simd.Unknown
			}
			levels = append(levels, simd.Loaded(cpu, n.Disabled))
			vectors = append(vectors, simd.LuceneVector(n.JVMArguments, cpu))
		}
		pool.OpenSearchNodes = ptr.To(int32(len(levels)))
		pool.SIMD = simd.Common(levels)
		pool.CPUSIMD = simd.Common(cpus)
		pool.LuceneVector = simd.Same(vectors)
		if lacks(pool.CPUSIMD, string(asked[pool.Name])) {
			short = append(short, fmt.Sprintf("pool %s asked for %s but its nodes' CPUs have %s", pool.Name, asked[pool.Name], pool.CPUSIMD))
		}
	}
	if len(short) == 0 {
		return variantFinding{}
	}
	return variantFinding{reason: v1alpha1.ReasonSIMDUnavailable, message: strings.Join(short, "; ")}
}

// lacks: a CPU of level have cannot run level want (both known levels of the table).
func lacks(have, want string) bool {
	hArch, hRank, hok := simd.Rank(have)
	wArch, wRank, wok := simd.Rank(want)
	return hok && wok && (hArch != wArch || hRank < wRank)
}

// nodeSIMD is the SIMD level a node's labels show. Nodes are read directly, as metadata,
// and remembered for nodeLabelTTL: the labels are all the operator needs, and a cluster-wide
// Node informer would cost memory in proportion to the cluster and cannot work in
// namespaced mode, where reading nodes is forbidden (the level is then unknown).
func (r *SearchClusterReconciler) nodeSIMD(ctx context.Context, name string) string {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	if n, ok := r.nodes[name]; ok && time.Since(n.read) < nodeLabelTTL {
		return n.level
	}
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	level := simd.Unknown
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, node); err == nil {
		level = simd.Observe(node.Labels)
	}
	if r.nodes == nil {
		r.nodes = map[string]nodeLevel{}
	}
	r.nodes[name] = nodeLevel{level: level, read: time.Now()}
	return level
}

// nodeLabelTTL is how long a node's SIMD level is remembered; CPU labels change only when
// a node is replaced, and a replaced node has a new name.
const nodeLabelTTL = 10 * time.Minute

type nodeLevel struct {
	level string
	read  time.Time
}

// unschedulable is the scheduler's message for a pod it could not place.
func unschedulable(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// failedInit is the termination message of the pod's init container name when it failed,
// now or in its last run.
func failedInit(pod *corev1.Pod, name string) string {
	for _, c := range pod.Status.InitContainerStatuses {
		if c.Name != name {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{c.State.Terminated, c.LastTerminationState.Terminated} {
			if t != nil && t.ExitCode != 0 {
				return strings.TrimSpace(t.Message)
			}
		}
	}
	return ""
}

func ordinal(podName string) int {
	n, _ := strconv.Atoi(podName[strings.LastIndex(podName, "-")+1:])
	return n
}

// rollOut deletes the outdated pods the predicates allow; their StatefulSet recreates them
// on the new revision.
func (r *SearchClusterReconciler) rollOut(ctx context.Context, m *clusterRun) (rollout.Plan, error) {
	sc, obs := m.sc, m.obs
	pending, available := 0, obs.missing == 0
	for _, p := range obs.pods {
		if p.Outdated && !p.Leaving {
			pending++
		}
		available = available && p.Ready && !p.Terminating
	}
	if available && sc.Status.HandedOver != "" && !slices.ContainsFunc(obs.pods, func(p rollout.Pod) bool { return p.Leaving }) {
		// The node that handed its role over is back: it votes again. A removal in
		// progress keeps the exclusions it needs; it clears them all when done.
		if err := r.clearHandOver(ctx, sc); err != nil {
			logf.FromContext(ctx).Info("could not clear the hand-over's voting exclusion yet", "error", err.Error())
		}
	}
	if available && (pending > 0 || sc.Status.Rollout != nil || sc.Status.AllocationRestricted) {
		// Every node is back: let replicas allocate again before the next restart. A lift
		// that fails keeps status.allocationRestricted, so it is retried on every reconcile
		// until it succeeds, rollout or not; its health holds restarts meanwhile.
		if err := r.endRestart(ctx, sc); err != nil {
			logf.FromContext(ctx).Info("could not lift the restart's allocation restriction and search weights yet", "error", err.Error())
			r.Recorder.Eventf(sc, nil, corev1.EventTypeWarning, v1alpha1.ReasonAllocationNotRestored, "Restart",
				"could not lift the restart's cluster.routing.allocation.enable=primaries and search weights yet (retrying): %v", err)
		} else {
			sc.Status.AllocationRestricted = false
		}
	}
	switch {
	case pending == 0 && sc.Status.Rollout != nil && !available:
		// The last restarted pods are coming back; the rollout ends when they are ready.
		sc.Status.Rollout = &v1alpha1.RolloutStatus{Message: "waiting for the restarted pods to be ready"}
		return rollout.Plan{}, nil
	case pending == 0:
		sc.Status.Rollout = nil
		return rollout.Plan{}, nil
	}
	state := rollout.State{
		Pods:           obs.pods,
		Missing:        obs.missing,
		MaxUnavailable: int(max(sc.Spec.Managed.UpdateStrategy.MaxUnavailable, 1)),
		VersionUpgrade: obs.upgrade,
		Health:         r.clusterHealth(ctx, m),
		Draining:       sc.Status.DrainingNodes,
		// Certificates are re-issued rotateBefore ahead of their end; a node still serving
		// the old ones halfway through restarts in any health (rollout.State.Expiring).
		Now:          time.Now(),
		ExpiryMargin: security.LifetimesOf(sc).RotateBefore / 2,
	}
	if obs.upgrade && !obs.upgraded {
		state.Refused = r.preflight(ctx, sc)
	}
	plan := rollout.Decide(state)
	if plan.HandOver != "" {
		if err := r.handOver(ctx, sc, plan.HandOver); err != nil {
			plan.BlockedBy, plan.Reason = "cluster_manager_hand_over", err.Error()
		}
	}
	if serving := servingPods(plan, state); len(serving) > 0 {
		if err := r.prepareRestart(ctx, sc, m.probe.nodes, serving); err != nil {
			// Unprepared, only expiring pods go: their certificates' end would stop them
			// anyway, prepared or not.
			plan.Restart = slices.DeleteFunc(plan.Restart, func(name string) bool {
				return !slices.ContainsFunc(state.Pods, func(p rollout.Pod) bool { return p.Name == name && state.Expiring(p) })
			})
			plan.BlockedBy, plan.Reason = "prepare_restart", err.Error()
		}
	}
	if len(plan.Restart) > 0 {
		// Preparing took requests to OpenSearch, and on a busy machine a pod can turn
		// unready meanwhile: the plan is made again on the pods as they are now, and only
		// what both plans restart goes.
		if err := r.refreshReadiness(ctx, sc, &state); err != nil {
			return plan, err
		}
		again := rollout.Decide(state)
		plan.Restart = slices.DeleteFunc(plan.Restart, func(name string) bool { return !slices.Contains(again.Restart, name) })
		if len(plan.Restart) == 0 {
			plan.BlockedBy, plan.Reason = again.BlockedBy, again.Reason
		}
	}
	for _, name := range plan.Restart {
		pod := &corev1.Pod{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: sc.Namespace, Name: name}, pod); err != nil {
			return plan, client.IgnoreNotFound(err)
		}
		// The UID precondition makes sure a pod recreated meanwhile is not deleted too.
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return plan, err
		}
		r.Recorder.Eventf(sc, pod, corev1.EventTypeNormal, v1alpha1.ReasonRollingRestart, "Restart", "Restarting %s onto the new configuration", name)
	}
	sc.Status.Rollout = &v1alpha1.RolloutStatus{PendingPods: int32(plan.Pending), BlockedBy: plan.BlockedBy, Message: plan.Reason}
	return plan, nil
}

// preflight is what the spec's version could not serve of the cluster's indexes, read
// before an upgrade's first node restarts; indexes that cannot be read hold the upgrade
// too, so it never starts unchecked.
func (r *SearchClusterReconciler) preflight(ctx context.Context, sc *v1alpha1.SearchCluster) []string {
	indexes, err := r.health().IndexSettings(ctx, sc)
	if err != nil {
		return []string{"the indexes' settings could not be read for the upgrade's pre-flight: " + err.Error()}
	}
	return rollout.Preflight(sc.Spec.Managed.Version, indexes)
}

// handOver takes the elected cluster manager out of the voting configuration, so that it
// abdicates and another node is elected while it still serves. Status records it first,
// so the exclusion is cleared even if the operator dies right after making it.
func (r *SearchClusterReconciler) handOver(ctx context.Context, sc *v1alpha1.SearchCluster, node string) error {
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return err
	}
	if sc.Status.HandedOver != node {
		before := sc.Status.HandedOver
		sc.Status.HandedOver = node
		if err := steps.RecordIntent(ctx, r.Client, sc, "the hand-over of "+node+" before excluding it from voting"); err != nil {
			sc.Status.HandedOver = before
			return err
		}
	}
	if err := osClient.ExcludeVoter(ctx, node); err != nil {
		return fmt.Errorf("taking %s out of the voting configuration to hand its role over: %w", node, err)
	}
	r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonRollingRestart, "HandOver",
		"%s, the elected cluster manager, hands its role to another node before it restarts", node)
	return nil
}

// clearHandOver lets the node that handed its role over vote again. OpenSearch clears
// exclusions only all together: while there are others (a removal's, or the user's), the
// hand-over's stays.
func (r *SearchClusterReconciler) clearHandOver(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return err
	}
	v, err := osClient.Voting(ctx)
	if err != nil {
		return err
	}
	if others := rollout.ExcludedBesides(v.Excluded, sc.Status.HandedOver); len(others) > 0 {
		return fmt.Errorf("voting exclusions %v are not the hand-over's: %s stays excluded until they are cleared", others, sc.Status.HandedOver)
	}
	if len(v.Excluded) > 0 {
		if err := osClient.ClearVotingExclusions(ctx); err != nil {
			return err
		}
	}
	sc.Status.HandedOver = ""
	return nil
}

// servingPods are the pods the plan restarts whose nodes serve (rollout.State.Serving),
// ready or not.
func servingPods(plan rollout.Plan, s rollout.State) (serving []rollout.Pod) {
	for _, p := range s.Pods {
		if s.Serving(p) && slices.Contains(plan.Restart, p.Name) {
			serving = append(serving, p)
		}
	}
	return serving
}

// refreshReadiness reads the pods' readiness and deletion past the cache into s.
func (r *SearchClusterReconciler) refreshReadiness(ctx context.Context, sc *v1alpha1.SearchCluster, s *rollout.State) error {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(sc.Namespace), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		return err
	}
	s.Pods = slices.Clone(s.Pods)
	for i := range s.Pods {
		p := &s.Pods[i]
		j := slices.IndexFunc(pods.Items, func(k corev1.Pod) bool { return k.Name == p.Name })
		if j < 0 {
			p.Ready, p.Terminating = false, true
			continue
		}
		p.Ready, p.Terminating = managed.PodReady(&pods.Items[j]), pods.Items[j].DeletionTimestamp != nil
	}
	return nil
}

// restartSettings are the persistent cluster settings a rolling restart changes.
var restartSettings = []string{opensearch.AllocationEnableSetting, opensearch.AwarenessSetting, forcedSetting}

// prepareRestart restricts allocation to primaries, flushes, and weighs the data nodes
// about to stop out of search routing, before a serving node goes down. A node that serves
// nothing is restarted without it: its cluster may not answer. The first restart of a
// rollout records its intent and the settings it changes in status before it changes
// anything, so the lift happens even if the operator dies right after the change.
func (r *SearchClusterReconciler) prepareRestart(ctx context.Context, sc *v1alpha1.SearchCluster, nodes []opensearch.NodeVariant, serving []rollout.Pod) error {
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return err
	}
	if !sc.Status.AllocationRestricted {
		current, err := osClient.PersistentClusterSettings(ctx)
		if err != nil {
			return fmt.Errorf("reading cluster settings before a restart: %w", err)
		}
		sc.Status.SettingsBeforeRestart = nil
		for _, k := range restartSettings {
			if v, ok := current[k]; ok {
				if sc.Status.SettingsBeforeRestart == nil {
					sc.Status.SettingsBeforeRestart = map[string]string{}
				}
				sc.Status.SettingsBeforeRestart[k] = v
			}
		}
		sc.Status.AllocationRestricted = true
		if err := steps.RecordIntent(ctx, r.Client, sc, "the restart before changing cluster settings"); err != nil {
			sc.Status.AllocationRestricted, sc.Status.SettingsBeforeRestart = false, nil
			return err
		}
	}
	if err := osClient.RestrictAllocationToPrimaries(ctx); err != nil {
		return fmt.Errorf("restricting shard allocation before a restart: %w", err)
	}
	if err := osClient.Flush(ctx); err != nil {
		return fmt.Errorf("flushing before a restart: %w", err)
	}
	var away []string
	for _, p := range serving {
		if p.Data {
			away = append(away, p.Name)
		}
	}
	if len(away) == 0 {
		return nil
	}
	return routeSearchesAway(ctx, osClient, sc, nodes, away)
}

// endRestart puts back what prepareRestart changed: the search weights, then each setting
// as status.settingsBeforeRestart recorded it — where it still holds the restart's value;
// a value someone set meanwhile is theirs and stays.
func (r *SearchClusterReconciler) endRestart(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return err
	}
	// One reading serves both lifts.
	settings, err := osClient.PersistentClusterSettings(ctx)
	if err != nil {
		return err
	}
	restore := map[string]any{}
	if settings[opensearch.AllocationEnableSetting] == "primaries" {
		restore[opensearch.AllocationEnableSetting] = before(sc, opensearch.AllocationEnableSetting)
	}
	if weighed(settings) {
		if err := removeSearchWeights(ctx, osClient); err != nil {
			return err
		}
		restore[opensearch.AwarenessSetting], restore[forcedSetting] = before(sc, opensearch.AwarenessSetting), before(sc, forcedSetting)
	}
	if len(restore) > 0 {
		if err := osClient.PutBackClusterSettings(ctx, restore); err != nil {
			return err
		}
	}
	sc.Status.SettingsBeforeRestart = nil
	return nil
}

// before is the value status.settingsBeforeRestart recorded for a setting, nil (unset)
// when it was unset.
func before(sc *v1alpha1.SearchCluster, setting string) any {
	if v, ok := sc.Status.SettingsBeforeRestart[setting]; ok {
		return v
	}
	return nil
}

func (r *SearchClusterReconciler) health() HealthSource {
	if r.Options.ClusterHealth != nil {
		return r.Options.ClusterHealth
	}
	return openSearchHealth{openSearch: r.clusterAPIFor}
}

// podsFailing names the pods that cannot start and why, and what mends it: the rollout
// restarts no other pod meanwhile (a pod that does not serve is not counted on, the others
// wait for it), and restarts it onto a corrected spec. A version upgrade whose new version
// no node has run yet may also go back (OpenSearch allows it until a node has written the
// new format).
func podsFailing(sc *v1alpha1.SearchCluster, obs poolObservation) string {
	msg := "pods cannot start: " + strings.TrimRight(strings.Join(obs.failing, "; "), ".") + ". No other pod restarts meanwhile; a corrected spec restarts them onto it"
	if newest := sc.Status.NewestNodeVersion; obs.upgrade && managed.Unrun(newest, sc.Spec.Managed.Version) {
		msg += fmt.Sprintf(", and as no node has run %s yet, spec.managed.version may go back to %s", sc.Spec.Managed.Version, newest)
	}
	return msg
}

// podsFailingNow: the cluster is Degraded because pods cannot start.
func podsFailingNow(sc *v1alpha1.SearchCluster) bool {
	c := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonPodsFailing
}
