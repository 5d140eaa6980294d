package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"time"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
)

// +kubebuilder:rbac:groups=vectorpilot.io,resources=searchclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=vectorpilot.io,resources=searchclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SearchClusterReconciler keeps a SearchCluster's status true to the cluster it names:
// reachable, version, health, nodes, k-NN plugin.
type SearchClusterReconciler struct {
	client.Client
	Resolver *connect.Resolver
	Recorder recorder.EventRecorder
	Options  Options
}

// KNNPluginName is the k-NN plugin's component name in _cat/plugins.
const KNNPluginName = "opensearch-knn"

// ReasonKNNPluginMissing: the cluster answers but no node has the k-NN plugin.
const ReasonKNNPluginMissing = "KNNPluginMissing"

// Reconcile probes the cluster and records what it found; it runs again every poll interval.
func (r *SearchClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sc v1alpha1.SearchCluster
	if err := r.Get(ctx, req.NamespacedName, &sc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Resolver.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := sc.Status.DeepCopy()
	probeErr := r.probe(ctx, &sc)
	sc.Status.ObservedGeneration = sc.Generation
	if !equality.Semantic.DeepEqual(before, &sc.Status) {
		if err := r.Status().Update(ctx, &sc); err != nil {
			return ctrl.Result{}, err
		}
		if !conditions.IsReady(before.Conditions) && conditions.IsReady(sc.Status.Conditions) {
			r.Recorder.Eventf(&sc, nil, "Normal", "Reachable", "Probe", "OpenSearch %s reachable, health %s", sc.Status.Version, sc.Status.Health)
		}
	}
	if probeErr != nil {
		return ctrl.Result{}, probeErr
	}
	return ctrl.Result{RequeueAfter: r.Options.ClusterPollInterval}, nil
}

// probe reads version, health and plugins, and sets the conditions from what it got. It
// returns an error only when the probe should be retried on the backoff.
func (r *SearchClusterReconciler) probe(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	fail := func(err error) error {
		f := classify(err)
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, f.reason, f.message)
		sc.Status.Health = ""
		if f.transient {
			return err
		}
		return nil
	}
	os, err := r.Resolver.ClientFor(ctx, sc)
	if err != nil {
		return fail(err)
	}
	info, err := os.Info(ctx)
	if err != nil {
		return fail(err)
	}
	knn, err := os.PluginVersion(ctx, KNNPluginName)
	if err != nil {
		return fail(err)
	}
	sc.Status.Version, sc.Status.Health, sc.Status.Nodes, sc.Status.KNNPluginVersion = info.Version, info.Health, int32(info.Nodes), knn
	switch {
	case knn == "":
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, ReasonKNNPluginMissing, "no node of the cluster has the k-NN plugin")
	case info.Health == "red":
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Degraded, "ClusterRed", "cluster health is red: some primary shards are unassigned")
	default:
		conditions.Set(&sc.Status.Conditions, sc.Generation, conditions.Ready, v1alpha1.ReasonReconciled,
			fmt.Sprintf("OpenSearch %s with k-NN %s, %d nodes, health %s", info.Version, knn, info.Nodes, info.Health))
	}
	return nil
}

// SetupWithManager registers the reconciler.
func (r *SearchClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.SearchCluster{}).
		WithOptions(controller.Options{RateLimiter: rateLimiter(r.Options.MaxRetryDelay)}).
		Named("searchcluster").
		Complete(r)
}

// rateLimiter backs off failed reconciles from 1s up to max, so a cluster that comes back
// is noticed within max.
func rateLimiter(max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, max)
}
