package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// +kubebuilder:rbac:groups=vectorpilot.io,resources=benchmarkruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=vectorpilot.io,resources=benchmarkruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=workflows,verbs=get;list;watch;create;delete

// Reasons of BenchmarkRun conditions.
const (
	ReasonIndexNotFound    = "IndexNotFound"
	ReasonQueued           = "Queued"
	ReasonBenchmarking     = "Benchmarking"
	ReasonBenchmarkFailed  = "BenchmarkFailed"
	ReasonArgoNotInstalled = "ArgoNotInstalled"
	ReasonNoResults        = "NoResults"
)

// BenchmarkRunReconciler runs BenchmarkRuns: in-process for the Local runner, as an Argo
// Workflow for the Argo runner.
type BenchmarkRunReconciler struct {
	client.Client
	Resolver *connect.Resolver
	Recorder recorder.EventRecorder
	Options  Options
	// Argo says the Workflow kind is served; without it Argo runs fail with a reason.
	Argo bool

	mu sync.Mutex
	// local are the Local runs in progress, by run; busy the run each index is taken by.
	local map[types.NamespacedName]context.CancelFunc
	busy  map[types.NamespacedName]types.NamespacedName
}

// Reconcile moves a run along its phases.
func (r *BenchmarkRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var run v1alpha1.BenchmarkRun
	if err := r.Get(ctx, req.NamespacedName, &run); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.cancelLocal(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if run.Status.Phase == v1alpha1.BenchmarkSucceeded || run.Status.Phase == v1alpha1.BenchmarkFailed {
		return r.cleanUp(ctx, &run)
	}
	before := run.Status.DeepCopy()
	var vi v1alpha1.VectorIndex
	err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.IndexRef.Name}, &vi)
	var result ctrl.Result
	switch {
	case apierrors.IsNotFound(err):
		setRunState(&run, v1alpha1.BenchmarkPending, conditions.Progressing, ReasonIndexNotFound, "VectorIndex "+run.Spec.IndexRef.Name+" not found")
		result = ctrl.Result{RequeueAfter: r.Options.ClusterPollInterval}
	case err != nil:
		return ctrl.Result{}, err
	case run.Spec.Runner.Type == v1alpha1.RunnerArgo:
		if result, err = r.runArgo(ctx, &run, &vi); err != nil {
			return ctrl.Result{}, err
		}
	default:
		result = r.runLocal(ctx, &run, &vi)
	}
	run.Status.ObservedGeneration = run.Generation
	if !equality.Semantic.DeepEqual(before, &run.Status) {
		if err := r.Status().Update(ctx, &run); err != nil {
			return ctrl.Result{}, err
		}
	}
	return result, nil
}

// setRunState sets the phase and the three conditions; a finished run gets its completion
// time.
func setRunState(run *v1alpha1.BenchmarkRun, phase string, state conditions.State, reason, message string) {
	run.Status.Phase = phase
	conditions.Set(&run.Status.Conditions, run.Generation, state, reason, message)
	if (phase == v1alpha1.BenchmarkSucceeded || phase == v1alpha1.BenchmarkFailed) && run.Status.CompletionTime == nil {
		now := metav1.Now()
		run.Status.CompletionTime = &now
	}
}

// runLocal starts the sweep in this process unless it runs already or another run holds
// the index. A run found Running that no goroutine serves (the operator restarted) starts
// over: the dataset is written by id, so a load cut short is completed, never doubled.
func (r *BenchmarkRunReconciler) runLocal(ctx context.Context, run *v1alpha1.BenchmarkRun, vi *v1alpha1.VectorIndex) ctrl.Result {
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	index := types.NamespacedName{Namespace: vi.Namespace, Name: vi.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.local[key]; ok {
		return ctrl.Result{}
	}
	if holder, ok := r.busy[index]; ok && holder != key {
		setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, ReasonQueued, "waiting for BenchmarkRun "+holder.Name+" on the same index")
		return ctrl.Result{RequeueAfter: 5 * time.Second}
	}
	w, err := benchrun.Resolve(run, vi)
	if err != nil {
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, ReasonBenchmarkFailed, err.Error())
		return ctrl.Result{}
	}
	os, err := clusterClient(ctx, r.Client, r.Resolver, vi.Namespace, vi.Spec.ClusterRef.Name)
	if err != nil {
		f := classify(err)
		setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, f.reason, f.message)
		return ctrl.Result{RequeueAfter: r.Options.MaxRetryDelay}
	}
	if r.local == nil {
		r.local, r.busy = map[types.NamespacedName]context.CancelFunc{}, map[types.NamespacedName]types.NamespacedName{}
	}
	// The sweep outlives this reconcile; deleting the run cancels it.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.local[key], r.busy[index] = cancel, key
	now := metav1.Now()
	run.Status.StartTime = &now
	run.Status.CompletionTime = nil
	setRunState(run, v1alpha1.BenchmarkRunning, conditions.Progressing, ReasonBenchmarking,
		fmt.Sprintf("measuring %d slice settings × %d client levels on index %s", len(run.Spec.SliceCounts), len(run.Spec.Clients), w.Index))
	go func() {
		defer r.release(key, index)
		res, err := sweepLocal(runCtx, os, w, run.Spec, r.Options.HDF5)
		if runCtx.Err() != nil {
			return // deleted: nobody to report to
		}
		r.finish(runCtx, key, func(done *v1alpha1.BenchmarkRun) {
			if err == nil {
				err = res.Apply(&done.Status, benchrun.DefaultParams)
			}
			if err != nil {
				setRunState(done, v1alpha1.BenchmarkFailed, conditions.Degraded, ReasonBenchmarkFailed, err.Error())
				return
			}
			setRunState(done, v1alpha1.BenchmarkSucceeded, conditions.Ready, v1alpha1.ReasonReconciled,
				fmt.Sprintf("%d cells measured by %s", len(done.Status.Results), res.Engine))
		})
	}()
	return ctrl.Result{}
}

// sweepLocal is the Local runner's work: data, load, sweep.
func sweepLocal(ctx context.Context, os *opensearch.Client, w benchrun.Workload, spec v1alpha1.BenchmarkRunSpec, hdf5 benchrun.HDF5Reader) (benchrun.Result, error) {
	data, err := w.Materialize(hdf5)
	if err != nil {
		return benchrun.Result{}, err
	}
	recall, err := benchrun.Prepare(ctx, os, w, data, nil)
	if err != nil {
		return benchrun.Result{}, err
	}
	restore, err := benchrun.SliceSettingsOf(ctx, os, w.Index)
	if err != nil {
		return benchrun.Result{}, err
	}
	rep, err := bench.Sweep(ctx, os, w.SweepConfig(data, spec.SliceCounts, spec.Clients))
	// The index is left as the sweep found it, so the tuner starts from what was applied.
	if rerr := os.PutSettings(context.WithoutCancel(ctx), w.Index, restore); err == nil {
		err = rerr
	}
	if err != nil {
		return benchrun.Result{}, err
	}
	return benchrun.Result{Engine: "vectorpilot", Cores: rep.Cores, Segments: rep.Segments, Cells: rep.Table().Results, RecallValid: recall}, nil
}

// finish writes a Local run's outcome, re-reading the run on conflicts.
func (r *BenchmarkRunReconciler) finish(ctx context.Context, key types.NamespacedName, set func(*v1alpha1.BenchmarkRun)) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var run v1alpha1.BenchmarkRun
		if err := r.Get(ctx, key, &run); err != nil {
			return err
		}
		set(&run)
		return r.Status().Update(ctx, &run)
	})
	if client.IgnoreNotFound(err) != nil {
		logf.FromContext(ctx).Error(err, "recording the outcome of a BenchmarkRun", "run", key)
	}
}

func (r *BenchmarkRunReconciler) release(key, index types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.local[key]; ok {
		cancel()
	}
	delete(r.local, key)
	if r.busy[index] == key {
		delete(r.busy, index)
	}
}

func (r *BenchmarkRunReconciler) cancelLocal(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.local[key]; ok {
		cancel()
	}
}

// cleanUp deletes a finished run's Workflow once ttlAfterFinished has passed.
func (r *BenchmarkRunReconciler) cleanUp(ctx context.Context, run *v1alpha1.BenchmarkRun) (ctrl.Result, error) {
	ttl := run.Spec.TTLAfterFinished
	if ttl == nil || run.Status.WorkflowName == "" || run.Status.CompletionTime == nil || !r.Argo {
		return ctrl.Result{}, nil
	}
	if wait := time.Until(run.Status.CompletionTime.Add(ttl.Duration)); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Status.WorkflowName}}
	if err := r.Delete(ctx, wf, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// runArgo submits the run's Workflow once and follows its phase. The run succeeds when the
// Workflow succeeded and its reporter step has posted the results.
func (r *BenchmarkRunReconciler) runArgo(ctx context.Context, run *v1alpha1.BenchmarkRun, vi *v1alpha1.VectorIndex) (ctrl.Result, error) {
	if !r.Argo {
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, ReasonArgoNotInstalled,
			"the Argo runner needs Argo Workflows' CRDs, which the API server did not serve when the operator started")
		return ctrl.Result{}, nil
	}
	w, err := benchrun.Resolve(run, vi)
	if err != nil {
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, ReasonBenchmarkFailed, err.Error())
		return ctrl.Result{}, nil
	}
	var sc v1alpha1.SearchCluster
	if err := r.Get(ctx, types.NamespacedName{Namespace: vi.Namespace, Name: vi.Spec.ClusterRef.Name}, &sc); err != nil {
		if apierrors.IsNotFound(err) {
			setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonClusterNotFound, "SearchCluster "+vi.Spec.ClusterRef.Name+" not found")
			return ctrl.Result{RequeueAfter: r.Options.ClusterPollInterval}, nil
		}
		return ctrl.Result{}, err
	}
	name := run.Name + "-" + shortUID(run.UID)
	var wf wfv1.Workflow
	err = r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, &wf)
	if apierrors.IsNotFound(err) {
		wf = *benchrun.Workflow(run, w, name, r.Resolver.Endpoint(&sc), credentialsSecret(&sc))
		if err := controllerutil.SetControllerReference(run, &wf, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, &wf); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(run, &wf, corev1.EventTypeNormal, "WorkflowCreated", "Submit", "Workflow %s from WorkflowTemplate %s", name, run.Spec.Runner.WorkflowTemplateRef.Name)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if run.Status.StartTime == nil {
		now := metav1.Now()
		run.Status.StartTime = &now
	}
	run.Status.WorkflowName = name
	switch wf.Status.Phase {
	case wfv1.WorkflowSucceeded:
		if len(run.Status.Results) == 0 {
			setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, ReasonNoResults, "Workflow "+name+" succeeded but its reporter posted no results")
			return ctrl.Result{}, nil
		}
		setRunState(run, v1alpha1.BenchmarkSucceeded, conditions.Ready, v1alpha1.ReasonReconciled,
			fmt.Sprintf("%d cells measured by %s in Workflow %s", len(run.Status.Results), run.Status.Engine, name))
		return ctrl.Result{}, nil
	case wfv1.WorkflowFailed, wfv1.WorkflowError:
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, ReasonBenchmarkFailed, fmt.Sprintf("Workflow %s %s: %s", name, wf.Status.Phase, wf.Status.Message))
		return ctrl.Result{}, nil
	}
	setRunState(run, v1alpha1.BenchmarkRunning, conditions.Progressing, ReasonBenchmarking, fmt.Sprintf("Workflow %s is %s", name, phaseOrPending(wf.Status.Phase)))
	return ctrl.Result{}, nil
}

func phaseOrPending(p wfv1.WorkflowPhase) string {
	if p == "" {
		return "pending"
	}
	return string(p)
}

// credentialsSecret is the Secret with username and password for the Workflow's steps.
func credentialsSecret(sc *v1alpha1.SearchCluster) string {
	if sc.Spec.External != nil && sc.Spec.External.CredentialsSecretRef != nil {
		return sc.Spec.External.CredentialsSecretRef.Name
	}
	return ""
}

// SetupWithManager registers the reconciler; Workflows are watched only when Argo is there.
func (r *BenchmarkRunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.BenchmarkRun{}).
		WithOptions(controller.Options{RateLimiter: rateLimiter(r.Options.MaxRetryDelay)}).
		Named("benchmarkrun")
	if r.Argo {
		b = b.Owns(&wfv1.Workflow{})
	}
	return b.Complete(r)
}

// argoServed says whether the API server serves Argo's Workflow kind.
func argoServed(mgr ctrl.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(wfv1.WorkflowSchemaGroupVersionKind.GroupKind(), wfv1.WorkflowSchemaGroupVersionKind.Version)
	return err == nil && !meta.IsNoMatchError(err)
}
