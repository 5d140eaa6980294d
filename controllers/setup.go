// Package controllers holds one reconciler per kind. Every reconcile has one shape
// (internal/steps): read the object, handle deletion and the finalizer, run a list of
// named, idempotent steps over a per-reconcile scope (each returns a steps.Result: go on,
// stop here, come back in N, or fail), then write the status once (a conflict is a quiet
// requeue) and answer with the first error or the lowest requeue. The managed half of
// SearchCluster is its own step list (managedSteps). The logic the steps call lives in
// internal/.
package controllers

import (
	"slices"
	"time"

	"github.com/argoproj/argo-workflows/v3/pkg/apis/workflow"
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/observe"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Scheme is the scheme of every kind the manager reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(wfv1.AddToScheme(s))
	// The operator reads its own CRDs (internal/crds) and applies them (vectorpilot crds).
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// Options tune the reconcilers; zero values take the defaults.
type Options struct {
	// ClusterPollInterval is how often a SearchCluster's health is read. Default 30s.
	ClusterPollInterval time.Duration
	// IndexResyncInterval is how often a Ready index is compared with OpenSearch to repair
	// drift (by the cluster's catalogue, at most half an interval old). Default 60s.
	IndexResyncInterval time.Duration
	// IndexRedGrace is how long a newly created index may be red (its primaries starting)
	// before it is Degraded. Default 1m.
	IndexRedGrace time.Duration
	// MaxRetryDelay caps the backoff after a failed reconcile. Default 60s.
	MaxRetryDelay time.Duration
	// IndexWorkers is how many VectorIndexes reconcile at once. Default 4.
	IndexWorkers int
	// MetricsInterval is how often OpenSearch figures are read for the metrics. Default 30s.
	MetricsInterval time.Duration
	// SnapshotStartTimeout is how long a VectorSnapshot keeps retrying to start before it
	// is Failed. Default 5m.
	SnapshotStartTimeout time.Duration
	// SnapshotStallTimeout is how long a running snapshot may make no progress (shards done
	// and bytes processed not moving) before it is aborted and Failed: a snapshot whose
	// object store went away can stay IN_PROGRESS indefinitely, while a large healthy one
	// may run for hours. Default 30m.
	SnapshotStallTimeout time.Duration
	// RolloutPollInterval is how often a managed cluster whose pods start, roll or leave,
	// or whose copies recover after them, is looked at again. Default 5s.
	RolloutPollInterval time.Duration
	// ManagedEndpoint overrides the URL of managed clusters (default: their client
	// Service), for running the operator outside the cluster and for tests.
	ManagedEndpoint func(*v1alpha1.SearchCluster) string
	// ClusterHealth overrides where rolling restarts read cluster health (default:
	// OpenSearch), for tests that play the cluster.
	ClusterHealth HealthSource
	// LocalBenchmarkMaxBytes bounds the vectors a Local BenchmarkRun may hold in the
	// operator's memory (base and query vectors, 4 bytes a component); a larger run fails
	// with DatasetTooLarge. Default 256 MiB.
	LocalBenchmarkMaxBytes int64
	// ObserveRequest, when set, sees every request sent to OpenSearch (method, path, the
	// settings it writes); tests derive the operator's OpenSearch role and check the owners
	// of the settings it writes from them.
	ObserveRequest func(opensearch.SentRequest)
	// SysctlImage is the image of the privileged init step of mmap: InitContainer clusters
	// (the operator's own image, which runs `vectorpilot sysctl-max-map-count`); empty
	// refuses that mode.
	SysctlImage string
	// OperatorNamespace is where the operator's pods run; managed clusters' NetworkPolicies
	// admit them from there. Empty when the operator runs outside the cluster.
	OperatorNamespace string
	// BenchmarkRunners is what an Argo BenchmarkRun may name as spec.runner's
	// workflowTemplateRef, image and serviceAccountName (an entry ending in * matches by
	// prefix); empty image and service account take the WorkflowTemplate's defaults and are
	// always allowed.
	BenchmarkRunners benchrun.RunnerAllowlist
	// HDF5 reads HDF5 datasets for Local benchmark runs. Default: bin/venv/bin/python and
	// hack/hdf5_export.py, relative to the working directory.
	HDF5 benchrun.HDF5Reader
}

// WithDefaults is o with every unset option at its default, as Setup runs it.
func (o Options) WithDefaults() Options {
	if o.ClusterPollInterval == 0 {
		o.ClusterPollInterval = 30 * time.Second
	}
	if o.IndexResyncInterval == 0 {
		o.IndexResyncInterval = 60 * time.Second
	}
	if o.IndexRedGrace == 0 {
		o.IndexRedGrace = time.Minute
	}
	if o.MaxRetryDelay == 0 {
		o.MaxRetryDelay = 60 * time.Second
	}
	if o.IndexWorkers == 0 {
		o.IndexWorkers = 4
	}
	if o.MetricsInterval == 0 {
		o.MetricsInterval = 30 * time.Second
	}
	if o.SnapshotStartTimeout == 0 {
		o.SnapshotStartTimeout = 5 * time.Minute
	}
	if o.HDF5.Python == "" {
		o.HDF5 = benchrun.HDF5Reader{Python: "bin/venv/bin/python", ExportScript: "hack/hdf5_export.py"}
	}
	if o.LocalBenchmarkMaxBytes == 0 {
		o.LocalBenchmarkMaxBytes = 256 << 20
	}
	if o.RolloutPollInterval == 0 {
		o.RolloutPollInterval = 5 * time.Second
	}
	if o.SnapshotStallTimeout == 0 {
		o.SnapshotStallTimeout = 30 * time.Minute
	}
	return o
}

// Setup registers every reconciler with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts = opts.WithDefaults()
	// Secrets are read directly, not cached: the operator needs only get on the few it is named.
	resolver := &connect.Resolver{Reader: mgr.GetAPIReader(), ManagedEndpoint: opts.ManagedEndpoint, ObserveRequest: opts.ObserveRequest}
	if err := mgr.Add(&observe.Collector{Reader: mgr.GetClient(), Resolver: resolver, Interval: opts.MetricsInterval}); err != nil {
		return err
	}
	podLogs, err := PodLogsFrom(mgr.GetConfig())
	if err != nil {
		return err
	}
	if err := (&SearchClusterReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Resolver:  resolver,
		Recorder:  mgr.GetEventRecorder("vectorpilot-searchcluster"),
		Options:   opts,
		PodLogs:   podLogs,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&BenchmarkRunReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Resolver:  resolver,
		Recorder:  mgr.GetEventRecorder("vectorpilot-benchmarkrun"),
		Options:   opts,
		Argo:      argoServed(mgr),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&VectorSnapshotReconciler{
		Client:   mgr.GetClient(),
		Resolver: resolver,
		Recorder: mgr.GetEventRecorder("vectorpilot-vectorsnapshot"),
		Options:  opts,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&SnapshotPolicyReconciler{
		Client:   mgr.GetClient(),
		Resolver: resolver,
		Recorder: mgr.GetEventRecorder("vectorpilot-snapshotpolicy"),
		Options:  opts,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&VectorIndexReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Resolver:  resolver,
		Recorder:  mgr.GetEventRecorder("vectorpilot-vectorindex"),
		Options:   opts,
	}).SetupWithManager(mgr)
}

// CacheOptions are the manager's cache settings: only the watched namespace when one is
// given, and for the kinds a managed cluster is made of only the objects vectorpilot
// built (label app.kubernetes.io/managed-by=vectorpilot), so the operator does not hold
// every Pod, Service and ConfigMap of the cluster in memory.
//
// Only the Workflows of BenchmarkRuns are held, when argo says Argo's CRDs are served
// (ArgoServed): a selector for a kind the API server does not serve stops the manager.
func CacheOptions(watchNamespace string, argo bool) cache.Options {
	ours := labels.SelectorFromSet(labels.Set{managed.ManagedByLabel: managed.ManagedBy})
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{}}
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}} {
		opts.ByObject[obj] = cache.ByObject{Label: ours}
	}
	if argo {
		// A cluster running Argo may hold thousands of other Workflows, each a large object.
		runs, err := labels.NewRequirement(v1alpha1.BenchmarkRunLabel, selection.Exists, nil)
		utilruntime.Must(err)
		opts.ByObject[&wfv1.Workflow{}] = cache.ByObject{Label: labels.NewSelector().Add(*runs)}
	}
	if watchNamespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{watchNamespace: {}}
	}
	return opts
}

// ArgoServed says whether the API server at cfg serves Argo's Workflow kind.
func ArgoServed(cfg *rest.Config) bool {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false
	}
	resources, err := dc.ServerResourcesForGroupVersion(wfv1.SchemeGroupVersion.String())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Kind == workflow.WorkflowKind })
}
