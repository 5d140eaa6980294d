package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// patch: a managed cluster's defaults are written into its spec once (recordDefaults).
// +kubebuilder:rbac:groups=vectorpilot.io,resources=searchclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=vectorpilot.io,resources=searchclusters/status,verbs=get;update
// The owner references on the StatefulSets, Services, ConfigMaps and PDBs it makes block the owner's deletion, which
// OwnerReferencesPermissionEnforcement allows only with update on the owner's finalizers.
// +kubebuilder:rbac:groups=vectorpilot.io,resources=searchclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=opensearch.org;opensearch.opster.io,resources=opensearchclusters,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SearchClusterReconciler keeps a SearchCluster's status true to the cluster it names:
// reachable, version, health, nodes, k-NN plugin.
type SearchClusterReconciler struct {
	client.Client
	// APIReader reads what is not cached: node labels.
	APIReader client.Reader
	Resolver  *connect.Resolver
	Recorder  recorder.EventRecorder
	Options   Options

	// openSearch, when set, replaces the Resolver (decision tests give a fake).
	openSearch fakeClients[clusterAPI]

	// PodLogs reads managed pods' logs for the faiss library their nodes loaded; nil
	// leaves status.pools[].faissLibrary unobserved.
	PodLogs PodLogs

	nodesMu sync.Mutex
	nodes   map[string]nodeLevel
	// faiss is what each managed pod's log said of its faiss library, by cluster and pod UID.
	faissMu sync.Mutex
	faiss   map[types.UID]map[types.UID]faissReading
}

// clusterAPI is what a SearchCluster reconcile asks of OpenSearch; *opensearch.Client
// answers it, and the unit tests' fake does.
type clusterAPI interface {
	Info(ctx context.Context) (opensearch.ClusterInfo, error)
	PluginVersion(ctx context.Context, name string) (string, error)
	NodeVariants(ctx context.Context, nodes string) ([]opensearch.NodeVariant, error)
	FileCacheNodes(ctx context.Context) ([]opensearch.FileCacheNode, error)
	Shards(ctx context.Context) ([]opensearch.ShardCopy, error)
	PersistentClusterSettings(ctx context.Context) (map[string]string, error)
	RestrictAllocationToPrimaries(ctx context.Context) error
	ExcludeFromAllocation(ctx context.Context, nodes []string) error
	SetAllocationAwareness(ctx context.Context, attributes []string, attribute string, forced []string) error
	PutBackClusterSettings(ctx context.Context, values map[string]any) error
	Flush(ctx context.Context) error
	Voting(ctx context.Context) (opensearch.Voting, error)
	IndexSettings(ctx context.Context) (map[string]map[string]any, error)
	ExcludeVoter(ctx context.Context, node string) error
	ClearVotingExclusions(ctx context.Context) error
	SearchWeights(ctx context.Context, attribute string) (opensearch.SearchRouting, error)
	PutSearchWeights(ctx context.Context, attribute string, weights map[string]string, version int64) error
	DeleteSearchWeights(ctx context.Context, version int64) error
	StuckShard(ctx context.Context, index string, shard int, primary bool, node string) (string, error)
}

// clusterAPIFor is the OpenSearch client of sc: as openSearchFor, from the object being
// reconciled rather than a read of it by name.
func (r *SearchClusterReconciler) clusterAPIFor(ctx context.Context, sc *v1alpha1.SearchCluster) (clusterAPI, error) {
	if r.openSearch != nil {
		return r.openSearch(ctx, sc.Namespace, sc.Name)
	}
	return r.Resolver.ClientFor(ctx, sc)
}

// KNNPluginName is the k-NN plugin's component name in _cat/plugins.
const KNNPluginName = "opensearch-knn"

// Reconcile makes a managed cluster's objects match its spec, probes the cluster and
// records what it found; it runs again every poll interval, and within seconds while pods
// start or roll. Paused: no object applied, no pod restarted, no cluster setting written;
// the probe's reads are skipped too, so status keeps what it last saw.
func (r *SearchClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return steps.Kind[*v1alpha1.SearchCluster, *clusterRun]{
		Client: r.Client,
		New:    func() *v1alpha1.SearchCluster { return &v1alpha1.SearchCluster{} },
		Gone:   r.Resolver.Forget,
		Settle: r.settleDefaults,
		Scope:  func(_ context.Context, sc *v1alpha1.SearchCluster) *clusterRun { return &clusterRun{sc: sc} },
		Steps: func(run *clusterRun) []steps.Step[*clusterRun] {
			if run.sc.Spec.Managed != nil {
				return r.managedSteps()
			}
			return []steps.Step[*clusterRun]{{Name: "probe", Run: r.probeExternal}}
		},
		Status:  r.clusterStatus,
		Written: r.announceReady,
		Resync:  r.Options.ClusterPollInterval,
	}.Reconcile(ctx, req)
}

// settleDefaults records a managed cluster's defaults into its spec before anything acts
// on them; the patch brings the cluster back with them.
func (r *SearchClusterReconciler) settleDefaults(ctx context.Context, sc *v1alpha1.SearchCluster) (bool, ctrl.Result, error) {
	if sc.Spec.Managed == nil {
		return false, ctrl.Result{}, nil
	}
	recorded, err := r.recordDefaults(ctx, sc)
	return recorded, ctrl.Result{}, err
}

// announceReady sends the Events of a cluster becoming reachable: that it is, and that
// its TLS certificate is not verified when that is so.
func (r *SearchClusterReconciler) announceReady(_ context.Context, before, sc *v1alpha1.SearchCluster) {
	if conditions.IsReady(before.Status.Conditions) || !conditions.IsReady(sc.Status.Conditions) {
		return
	}
	r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonReachable, "Probe", "OpenSearch %s reachable, health %s", sc.Status.Version, sc.Status.Health)
	if sc.Spec.External != nil && sc.Spec.External.InsecureSkipVerify {
		r.Recorder.Eventf(sc, nil, corev1.EventTypeWarning, v1alpha1.ReasonInsecureSkipVerify, "Probe", "TLS certificate verification is off for %s: anyone on the path can read the traffic and the credentials; set caSecretRef instead", sc.Status.Endpoint)
	}
}

// recordDefaults writes into a managed cluster's spec the defaults it runs with, once (see
// internal/managed's RecordDefaults): a cluster an older operator ran keeps what it meant
// then, so upgrading the operator changes nothing on it until its owner opts in. It says
// whether it wrote; a conflict is read again from the newer version's watch event.
func (r *SearchClusterReconciler) recordDefaults(ctx context.Context, sc *v1alpha1.SearchCluster) (bool, error) {
	orig := sc.DeepCopy()
	wrote := managed.RecordDefaults(sc)
	if len(wrote) == 0 {
		return false, nil
	}
	if err := r.Patch(ctx, sc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return true, client.IgnoreNotFound(err)
	}
	why := "defaults of a new cluster"
	if managed.ExistedBefore(orig) {
		why = "what this cluster ran with before this operator version; set a field to opt in"
	}
	if managed.ExistedBefore(orig) && orig.Status.ObservedGeneration == orig.Generation {
		// The recorded fields say what the cluster ran with: the spec its pods were rendered
		// from is still observed, so they keep their templates (managed.KeepRendered).
		if err := r.observeRecordedDefaults(ctx, sc); err != nil {
			return true, err
		}
	}
	r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonDefaultsRecorded, "RecordDefaults", "%s (%s)", strings.Join(wrote, ", "), why)
	return true, nil
}

// observeRecordedDefaults sets status.observedGeneration to the generation that recorded
// the defaults, unless the spec changed again since.
func (r *SearchClusterReconciler) observeRecordedDefaults(ctx context.Context, recorded *v1alpha1.SearchCluster) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sc v1alpha1.SearchCluster
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(recorded), &sc); err != nil {
			return err
		}
		if sc.Generation != recorded.Generation {
			return nil
		}
		sc.Status.ObservedGeneration = sc.Generation
		return r.Status().Update(ctx, &sc)
	})
	return client.IgnoreNotFound(err)
}

// probeExternal reads an external cluster into status; a transient failure is retried on
// the backoff.
func (r *SearchClusterReconciler) probeExternal(ctx context.Context, run *clusterRun) steps.Result {
	sc := run.sc
	if conn, err := connect.ExternalConnection(ctx, r.APIReader, sc); err == nil {
		sc.Status.Endpoint = conn.Endpoint
	}
	run.probe = r.probe(ctx, sc)
	return steps.Done(run.probe.retry)
}

// probeResult is what probing OpenSearch found, as a condition state; retry is set when
// the probe should be retried on the backoff.
type probeResult struct {
	state           conditions.State
	reason, message string
	retry           error
	// nodes are the nodes as the probe read them, for the steps after it; nil when
	// OpenSearch did not answer.
	nodes []opensearch.NodeVariant
	// shardsMoving: shards were initializing or relocating, so health is about to change;
	// shardsUnassigned: some copies had no node.
	shardsMoving, shardsUnassigned bool
}

// probe reads version, health and plugins into status.
func (r *SearchClusterReconciler) probe(ctx context.Context, sc *v1alpha1.SearchCluster) probeResult {
	fail := func(err error) probeResult {
		f := classify(err)
		sc.Status.Health = ""
		res := probeResult{state: conditions.Degraded, reason: f.reason, message: f.message}
		if f.transient {
			res.retry = err
		}
		return res
	}
	osClient, err := r.clusterAPIFor(ctx, sc)
	if err != nil {
		return fail(err)
	}
	info, err := osClient.Info(ctx)
	if err != nil {
		return fail(err)
	}
	knn, err := osClient.PluginVersion(ctx, KNNPluginName)
	if err != nil {
		return fail(err)
	}
	sc.Status.Version, sc.Status.Health, sc.Status.Nodes, sc.Status.KNNPluginVersion = info.Version, info.Health, int32(info.Nodes), knn
	if sc.Status.ClusterUUID == "" && info.UUID != "" && info.UUID != "_na_" {
		sc.Status.ClusterUUID = info.UUID
	}
	nodes, err := osClient.NodeVariants(ctx, "")
	if err != nil {
		return fail(err)
	}
	if sc.Spec.Managed != nil {
		running := make([]string, len(nodes))
		for i, n := range nodes {
			running[i] = n.Version
		}
		sc.Status.NewestNodeVersion = managed.NewestNodeVersion(sc.Status.NewestNodeVersion, running)
	}
	if err := observeStorage(ctx, osClient, sc, nodes); err != nil {
		return fail(err)
	}
	res := probeResult{state: conditions.Ready, reason: v1alpha1.ReasonReconciled, nodes: nodes,
		shardsMoving: info.ShardsMoving > 0, shardsUnassigned: info.ShardsUnassigned > 0,
		message: fmt.Sprintf("OpenSearch %s with k-NN %s, %d nodes, health %s", info.Version, knn, info.Nodes, info.Health)}
	switch {
	case knn == "":
		res.state, res.reason, res.message = conditions.Degraded, v1alpha1.ReasonKNNPluginMissing, "no node of the cluster has the k-NN plugin"
	case info.Health == "red":
		res.state, res.reason, res.message = conditions.Degraded, v1alpha1.ReasonClusterRed, "cluster health is red: some primary shards are unassigned"
	}
	return res
}

// observeStorage reads whether the cluster is remote-backed (its nodes' remote store
// attributes) and the file cache of its warm nodes into status.
func observeStorage(ctx context.Context, osClient clusterAPI, sc *v1alpha1.SearchCluster, nodes []opensearch.NodeVariant) error {
	sc.Status.RemoteStore = nil
	for _, n := range nodes {
		if repos := opensearch.RemoteStoreOf(n.Attributes); repos.Segment != "" {
			sc.Status.RemoteStore = &v1alpha1.ClusterRemoteStore{SegmentRepository: repos.Segment, TranslogRepository: repos.Translog, StateRepository: repos.State}
			break
		}
	}
	caches, err := osClient.FileCacheNodes(ctx)
	if err != nil {
		return err
	}
	sc.Status.FileCache = nil
	for _, n := range caches {
		if n.TotalBytes == nil {
			continue
		}
		if sc.Status.FileCache == nil {
			sc.Status.FileCache = &v1alpha1.FileCacheStatus{}
		}
		sc.Status.FileCache.Nodes++
		sc.Status.FileCache.TotalBytes += *n.TotalBytes
		if n.UsedBytes != nil {
			sc.Status.FileCache.UsedBytes += *n.UsedBytes
		}
	}
	return nil
}

// SetupWithManager registers the reconciler.
func (r *SearchClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.SearchCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		// Pods belong to the StatefulSets; map them to their cluster by label.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podCluster)).
		WithOptions(controller.Options{RateLimiter: rateLimiter(r.Options.MaxRetryDelay)}).
		Named("searchcluster").
		Complete(r)
}

func podCluster(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[managed.ClusterLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// rateLimiter backs off failed reconciles from 1s up to longest, so a cluster that comes
// back is noticed within longest.
func rateLimiter(longest time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, longest)
}
