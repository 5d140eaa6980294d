package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// +kubebuilder:rbac:groups=vectorpilot.io,resources=benchmarkruns,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=vectorpilot.io,resources=benchmarkruns/status,verbs=get;update
// +kubebuilder:rbac:groups=vectorpilot.io,resources=benchmarkruns/finalizers,verbs=update
// +kubebuilder:rbac:groups=argoproj.io,resources=workflows,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=argoproj.io,resources=workflowtemplates,verbs=get

// BenchmarkFinalizer holds a run until the index settings it changed are put back.
const BenchmarkFinalizer = "vectorpilot.io/benchmark-settings"

// maxLocalAttempts is how many times a Local run is started before an interruption (the
// operator restarting, e.g. killed for memory) fails it instead of starting it again.
const maxLocalAttempts = 3

// BenchmarkRunReconciler runs BenchmarkRuns: in-process for the Local runner, as an Argo
// Workflow for the Argo runner.
type BenchmarkRunReconciler struct {
	client.Client
	// APIReader reads what is not cached: an Argo run's WorkflowTemplate.
	APIReader client.Reader
	Resolver  *connect.Resolver
	Recorder  recorder.EventRecorder
	Options   Options
	// Argo says the Workflow kind is served; without it Argo runs fail with a reason.
	Argo bool
	// openSearch, when set, replaces the Resolver where held settings are put back
	// (decision tests give a fake).
	openSearch fakeClients[settingsAPI]

	mu sync.Mutex
	// local are the Local runs in progress, by run; busy the run each index is taken by;
	// held the bytes of the memory budget each run in progress holds.
	local map[types.NamespacedName]context.CancelFunc
	busy  map[types.NamespacedName]types.NamespacedName
	held  map[types.NamespacedName]int64
}

// Reconcile moves a run along its phases: a finished run puts the index settings it
// changed back and lets its Workflow go after the TTL; a paused run waits (nothing starts
// or resumes; a Local sweep already measuring in this process is not cut short: delete
// the run for that); a run starts only on a Ready VectorIndex.
func (r *BenchmarkRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return steps.Kind[*v1alpha1.BenchmarkRun, *benchmarkScope]{
		Client: r.Client,
		New:    func() *v1alpha1.BenchmarkRun { return &v1alpha1.BenchmarkRun{} },
		Gone: func(key types.NamespacedName) {
			r.cancelLocal(key)
			metrics.ForgetRun(key.Namespace, key.Name)
		},
		Finalizer: BenchmarkFinalizer,
		Finalize: func(ctx context.Context, run *v1alpha1.BenchmarkRun) (ctrl.Result, error) {
			metrics.ForgetRun(run.Namespace, run.Name)
			return r.finalize(ctx, run)
		},
		Settle: r.settleFinished,
		Scope:  func(_ context.Context, run *v1alpha1.BenchmarkRun) *benchmarkScope { return &benchmarkScope{run: run} },
		Steps: func(*benchmarkScope) []steps.Step[*benchmarkScope] {
			return []steps.Step[*benchmarkScope]{
				{Name: "resolve index", Run: r.resolveIndex},
				{Name: "run", Run: r.runOn},
			}
		},
	}.Reconcile(ctx, req)
}

// settleFinished handles a finished run: its results exported, the settings it changed
// put back (which lets the object go) and its Workflow deleted after the TTL.
func (r *BenchmarkRunReconciler) settleFinished(ctx context.Context, run *v1alpha1.BenchmarkRun) (bool, ctrl.Result, error) {
	if !finished(run) {
		return false, ctrl.Result{}, nil
	}
	if run.Status.Phase == v1alpha1.BenchmarkSucceeded {
		exportResults(run)
	}
	if err := r.putSettingsBack(ctx, run); err != nil {
		return true, ctrl.Result{}, err
	}
	answer, err := r.cleanUp(ctx, run)
	return true, answer, err
}

// benchmarkScope is one reconcile of a BenchmarkRun.
type benchmarkScope struct {
	run *v1alpha1.BenchmarkRun
	vi  v1alpha1.VectorIndex
}

// resolveIndex finds the run's VectorIndex; the run waits Pending until it exists and, for
// a run that has not started, until it is Ready.
func (r *BenchmarkRunReconciler) resolveIndex(ctx context.Context, s *benchmarkScope) steps.Result {
	run := s.run
	err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.IndexRef.Name}, &s.vi)
	switch {
	case apierrors.IsNotFound(err):
		setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonIndexNotFound, "VectorIndex "+run.Spec.IndexRef.Name+" not found")
		return steps.StopFor(r.Options.ClusterPollInterval)
	case err != nil:
		return steps.Done(err)
	case run.Status.Phase != v1alpha1.BenchmarkRunning && !conditions.IsReady(s.vi.Status.Conditions):
		setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonIndexNotReady, "waiting for VectorIndex "+s.vi.Name+" to be Ready: a run measures only an index the operator owns and has converged")
		return steps.StopFor(r.Options.ClusterPollInterval)
	}
	return steps.Continue()
}

// runOn starts or follows the run on its runner.
func (r *BenchmarkRunReconciler) runOn(ctx context.Context, s *benchmarkScope) steps.Result {
	var result ctrl.Result
	var err error
	if s.run.Spec.Runner.Type == v1alpha1.RunnerArgo {
		result, err = r.runArgo(ctx, s.run, &s.vi)
	} else {
		result, err = r.runLocal(ctx, s.run, &s.vi)
	}
	return steps.Result{RequeueAfter: result.RequeueAfter, Err: err}
}

func finished(run *v1alpha1.BenchmarkRun) bool {
	return run.Status.Phase == v1alpha1.BenchmarkSucceeded || run.Status.Phase == v1alpha1.BenchmarkFailed
}

// holdSettings records the index settings the run is about to change, before it changes
// any, so they can be put back however it ends (an operator restart included); it returns
// the index's cluster client.
func (r *BenchmarkRunReconciler) holdSettings(ctx context.Context, run *v1alpha1.BenchmarkRun, vi *v1alpha1.VectorIndex, index string) (*opensearch.Client, error) {
	osClient, err := clusterClient(ctx, r.Client, r.Resolver, vi.Namespace, vi.Spec.ClusterRef.Name)
	if err != nil || run.Status.RestoreSettings != nil {
		return osClient, err
	}
	saved, err := benchrun.SettingsBefore(ctx, osClient, index)
	if err != nil {
		return nil, err
	}
	run.Status.RestoreSettings = saved
	return osClient, steps.RecordIntent(ctx, r.Client, run, "the index settings the run changes")
}

// waitOn leaves a run Pending on a failure that may pass (the cluster unreachable, the
// index not answering) and looks again after the longest backoff. A held-settings record
// that lost to a newer object is no such failure: it is passed up, and the step list
// stops quietly to look again from the newer object.
func (r *BenchmarkRunReconciler) waitOn(run *v1alpha1.BenchmarkRun, err error) (ctrl.Result, error) {
	if errors.Is(err, steps.ErrIntentNotRecorded) {
		return ctrl.Result{}, err
	}
	f := classify(err)
	setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, f.reason, f.message)
	return ctrl.Result{RequeueAfter: r.Options.MaxRetryDelay}, nil
}

// settingsAPI is what putting a run's held settings back asks of OpenSearch.
type settingsAPI interface {
	PutSettings(ctx context.Context, name string, settings map[string]any) error
	GetIndex(ctx context.Context, name string) (*opensearch.Index, error)
	DeleteIndex(ctx context.Context, name string) error
}

func (r *BenchmarkRunReconciler) settingsAPIFor(ctx context.Context, namespace, cluster string) (settingsAPI, error) {
	return openSearchFor(ctx, r.openSearch, r.Client, r.Resolver, namespace, cluster)
}

// putSettingsBack restores what holdSettings recorded, once the run no longer measures,
// and lets the object go. A run whose index or cluster object is gone has nothing to put
// back to.
func (r *BenchmarkRunReconciler) putSettingsBack(ctx context.Context, run *v1alpha1.BenchmarkRun) error {
	if saved := run.Status.RestoreSettings; saved != nil {
		var vi v1alpha1.VectorIndex
		err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.IndexRef.Name}, &vi)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			osClient, err := r.settingsAPIFor(ctx, vi.Namespace, vi.Spec.ClusterRef.Name)
			var ce *connect.Error
			switch {
			case err == nil:
				if err := osClient.PutSettings(ctx, vi.OpenSearchIndexName(), benchrun.RestoreBody(saved)); err != nil && !opensearch.IsNotFound(err) {
					return err
				}
				if err := benchrun.DropScratch(ctx, osClient, run, vi.OpenSearchIndexName()); err != nil {
					return err
				}
				r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, v1alpha1.ReasonSettingsRestored, "Restore", "index %s: settings the run changed put back", vi.OpenSearchIndexName())
			case asConnectError(err, &ce) && ce.Reason == v1alpha1.ReasonClusterNotFound:
			default:
				return err
			}
		}
		run.Status.RestoreSettings = nil
		if err := r.Status().Update(ctx, run); err != nil {
			return err
		}
	}
	return steps.SetFinalizer(ctx, r.Client, run, BenchmarkFinalizer, false)
}

// finalize stops a deleted run's sweep — the Local goroutine, or the Argo Workflow and its
// pods — waits for it to end, and puts the settings back before the object goes, so no
// step changes them afterwards. A paused run goes without touching OpenSearch.
func (r *BenchmarkRunReconciler) finalize(ctx context.Context, run *v1alpha1.BenchmarkRun) (ctrl.Result, error) {
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	if r.cancelLocal(key) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if run.Status.WorkflowName != "" && r.Argo && !finished(run) {
		wf := &wfv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Status.WorkflowName}}
		err := r.Delete(ctx, wf, client.PropagationPolicy(metav1.DeletePropagationForeground))
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		if err == nil {
			return ctrl.Result{RequeueAfter: time.Second}, nil // until the Workflow is gone
		}
	}
	if v1alpha1.IsPaused(run.Annotations) {
		run.Status.RestoreSettings = nil
	}
	return ctrl.Result{}, r.putSettingsBack(ctx, run)
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
// over, at most maxLocalAttempts times in all: the dataset is written by id, so a load cut
// short is completed, never doubled, and a run that keeps killing the operator ends.
func (r *BenchmarkRunReconciler) runLocal(ctx context.Context, run *v1alpha1.BenchmarkRun, vi *v1alpha1.VectorIndex) (ctrl.Result, error) {
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	index := types.NamespacedName{Namespace: vi.Namespace, Name: vi.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.local[key]; ok {
		return ctrl.Result{}, nil
	}
	if holder, ok := r.busy[index]; ok && holder != key {
		setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonQueued, "waiting for BenchmarkRun "+holder.Name+" on the same index")
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	if run.Status.Attempts >= maxLocalAttempts {
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, v1alpha1.ReasonInterrupted,
			fmt.Sprintf("the run was started %d times and interrupted each time (the operator restarted, perhaps killed for memory); not started again", run.Status.Attempts))
		return ctrl.Result{}, nil
	}
	w, err := benchrun.Resolve(run, vi)
	var need int64
	if err == nil {
		need, err = w.LocalBytes(run.Spec.Representations)
	}
	if err == nil {
		err = benchrun.FitsLocal(need, r.Options.LocalBenchmarkMaxBytes)
	}
	if err != nil {
		reason := v1alpha1.ReasonBenchmarkFailed
		if errors.Is(err, benchrun.ErrTooLarge) {
			reason = v1alpha1.ReasonDatasetTooLarge
		}
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, reason, err.Error())
		return ctrl.Result{}, nil
	}
	// One budget for every Local run of the operator together: a run that does not fit
	// beside those in progress waits for them.
	if held, holders := r.heldBytes(); held+need > r.Options.LocalBenchmarkMaxBytes {
		setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonQueued, fmt.Sprintf(
			"waiting for memory: the run needs %s, and %s of the Local runs' %s (--local-benchmark-max-bytes) are held by %s",
			benchrun.MiB(need), benchrun.MiB(held), benchrun.MiB(r.Options.LocalBenchmarkMaxBytes), strings.Join(holders, ", ")))
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	osClient, err := r.holdSettings(ctx, run, vi, w.Index)
	if err == nil {
		// An attempt starts only once the index answers: one lost to a node still
		// restarting would count toward maxLocalAttempts.
		_, err = osClient.Stats(ctx, w.Index)
	}
	if err != nil {
		return r.waitOn(run, err)
	}
	now := metav1.Now()
	run.Status.StartTime = &now
	run.Status.CompletionTime = nil
	run.Status.Attempts++
	setRunState(run, v1alpha1.BenchmarkRunning, conditions.Progressing, v1alpha1.ReasonBenchmarking,
		fmt.Sprintf("measuring %d slice settings × %d client levels on index %s (attempt %d of %d)", len(run.Spec.SliceCounts), len(run.Spec.Clients), w.Index, run.Status.Attempts, maxLocalAttempts))
	// The attempt is on record before any work starts, so a crash during it counts.
	if err := steps.RecordIntent(ctx, r.Client, run, "the attempt"); err != nil {
		return ctrl.Result{}, err
	}
	if r.local == nil {
		r.local, r.busy, r.held = map[types.NamespacedName]context.CancelFunc{}, map[types.NamespacedName]types.NamespacedName{}, map[types.NamespacedName]int64{}
	}
	r.held[key] = need
	// The sweep outlives this reconcile; deleting the run cancels it. It reads its own copy
	// of the run: this reconcile goes on to write the status, decoding the API server's
	// answer into run, and a decode empties the spec's lists before it fills them again.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.local[key], r.busy[index] = cancel, key
	sweeping := run.DeepCopy()
	progress := benchrun.NewProgress(w.Cells(len(run.Spec.SliceCounts), len(run.Spec.Clients)), func(p v1alpha1.BenchmarkProgress) {
		r.updateStatus(runCtx, key, func(running *v1alpha1.BenchmarkRun) { running.Status.Progress = &p })
	})
	go func() {
		res, err := sweepLocal(runCtx, osClient, w, sweeping, r.Options.HDF5, progress)
		if runCtx.Err() == nil && opensearch.IsRetryable(err) && sweeping.Status.Attempts < maxLocalAttempts {
			r.startOver(runCtx, key, index, sweeping.Status.Attempts, err)
			return
		}
		defer r.release(key, index)
		if runCtx.Err() != nil {
			return // deleted: nobody to report to
		}
		r.updateStatus(runCtx, key, func(done *v1alpha1.BenchmarkRun) {
			endProgress(done)
			if err == nil {
				err = res.Apply(done, benchrun.DefaultParams)
			}
			if err != nil {
				setRunState(done, v1alpha1.BenchmarkFailed, conditions.Degraded, failureReason(err), err.Error())
				return
			}
			setRunState(done, v1alpha1.BenchmarkSucceeded, conditions.Ready, v1alpha1.ReasonReconciled,
				fmt.Sprintf("%d cells measured by %s", len(done.Status.Results), res.Engine))
			r.announce(done)
		})
	}()
	return ctrl.Result{}, nil
}

// startOver ends a Local attempt that OpenSearch failed in a way that may pass (no answer,
// 429, 5xx: a node restarting, a full queue): after a pause it leaves the run Pending,
// released, so the next reconcile starts it again — attempt counted, settings still held,
// what was loaded kept (written by id). It releases the run, before the status says
// Pending: the reconcile that write causes must not find the sweep still running.
func (r *BenchmarkRunReconciler) startOver(ctx context.Context, key, index types.NamespacedName, attempt int32, err error) {
	select {
	case <-ctx.Done():
		r.release(key, index)
		return // deleted meanwhile
	case <-time.After(min(time.Duration(attempt)*15*time.Second, r.Options.MaxRetryDelay)):
	}
	r.release(key, index)
	msg := fmt.Sprintf("attempt %d of %d failed in a way OpenSearch may not repeat (%v); starting over", attempt, maxLocalAttempts, err)
	r.updateStatus(context.WithoutCancel(ctx), key, func(again *v1alpha1.BenchmarkRun) {
		endProgress(again)
		setRunState(again, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonStartingOver, msg)
		r.Recorder.Eventf(again, nil, corev1.EventTypeWarning, v1alpha1.ReasonStartingOver, "Benchmark", "%s", msg)
	})
}

// exportResults publishes a succeeded run's comparisons for the benchmark dashboard.
func exportResults(run *v1alpha1.BenchmarkRun) {
	index := run.Spec.IndexRef.Name
	for _, v := range run.Status.Variants {
		if ratio, err := strconv.ParseFloat(v.QPSRatio, 64); err == nil {
			metrics.BenchmarkVariantQPSRatio.WithLabelValues(run.Namespace, index, run.Name, v.Name, orUnknown(v.SIMD), orUnknown(v.LuceneVector), orUnknown(v.FaissLibrary)).Set(ratio)
		}
	}
	for _, r := range run.Status.Representations {
		if recall, err := strconv.ParseFloat(r.Recall, 64); err == nil {
			metrics.BenchmarkRepresentationRecall.WithLabelValues(run.Namespace, index, run.Name, string(r.Name)).Set(recall)
		}
		if hot, err := strconv.ParseFloat(r.HotBytesPerDoc, 64); err == nil {
			metrics.BenchmarkRepresentationHotBytes.WithLabelValues(run.Namespace, index, run.Name, string(r.Name)).Set(hot)
		}
	}
}

// failureReason is the condition reason of a failed Local run.
func failureReason(err error) string {
	var notEmpty *benchrun.NotEmptyError
	var variant *benchrun.VariantError
	var scratch *benchrun.ScratchTakenError
	switch {
	case errors.As(err, &notEmpty):
		return v1alpha1.ReasonIndexNotEmpty
	case errors.As(err, &variant):
		return v1alpha1.ReasonVariantWithoutCopy
	case errors.As(err, &scratch):
		return v1alpha1.ReasonScratchIndexTaken
	}
	return v1alpha1.ReasonBenchmarkFailed
}

// announce records a succeeded run's recommendations as Events, where users and their
// alerting look; the operator acts on neither (a SIMD level is the pool's spec, a
// representation needs a reindex).
func (r *BenchmarkRunReconciler) announce(run *v1alpha1.BenchmarkRun) {
	if rec := run.Status.SIMDRecommendation; rec != nil {
		r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, v1alpha1.ReasonSIMDRecommended, "Recommend", "SIMD level %s (variant %s): %s", orUnknown(rec.Level), rec.Variant, rec.Reason)
	}
	if rec := run.Status.RepresentationRecommendation; rec != nil {
		r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, v1alpha1.ReasonRepresentationRecommended, "Recommend", "representation %s for recall %s: %s", rec.Name, rec.RecallTarget, rec.Reason)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// sweepLocal is the Local runner's work: data, load, the variants observed, the sweep, the
// representations. The settings it changes are put back, and its scratch indexes dropped,
// by the reconcile that sees the run finished.
func sweepLocal(ctx context.Context, osClient *opensearch.Client, w benchrun.Workload, run *v1alpha1.BenchmarkRun, hdf5 benchrun.HDF5Reader, progress *benchrun.Progress) (benchrun.Result, error) {
	data, err := w.Materialize(hdf5)
	if err != nil {
		return benchrun.Result{}, err
	}
	recall, err := benchrun.Prepare(ctx, osClient, w, data, func(loaded int) { progress.Loaded(loaded, data.Base.Len()) })
	if err != nil {
		return benchrun.Result{}, err
	}
	res := benchrun.Result{Engine: "vectorpilot", KNNEngine: w.Engine, RecallValid: recall, CPUValid: true}
	if len(w.Variants) > 0 {
		progress.Variants()
	}
	for _, v := range w.Variants {
		observed, err := benchrun.ObserveVariant(ctx, osClient, w.Index, v)
		if err != nil {
			return res, err
		}
		res.Variants = append(res.Variants, observed)
	}
	cfg := w.SweepConfig(data, run.Spec.SliceCounts, run.Spec.Clients)
	cfg.OnCell = func(bench.Cell) { progress.Cell() }
	progress.Sweeping()
	rep, err := bench.Sweep(ctx, osClient, cfg)
	if err != nil {
		return res, err
	}
	res.Cores, res.Segments, res.Cells = rep.Cores, rep.Segments, rep.Results
	if len(run.Spec.Representations) > 0 {
		progress.Representations()
	}
	res.Representations, err = benchrun.MeasureRepresentations(ctx, osClient, w, data, run.Spec.Representations, benchrun.ScratchOwner(run))
	return res, err
}

// endProgress keeps what a finished run's progress counted and drops what only a running
// one has: its step and ETA.
func endProgress(run *v1alpha1.BenchmarkRun) {
	if p := run.Status.Progress; p != nil {
		p.Step, p.ETA = "", nil
	}
}

// updateStatus writes a Local run's status from its goroutine (progress, then the outcome),
// re-reading the run on conflicts.
func (r *BenchmarkRunReconciler) updateStatus(ctx context.Context, key types.NamespacedName, set func(*v1alpha1.BenchmarkRun)) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var run v1alpha1.BenchmarkRun
		if err := r.Get(ctx, key, &run); err != nil {
			return err
		}
		set(&run)
		return r.Status().Update(ctx, &run)
	})
	if client.IgnoreNotFound(err) != nil {
		logf.FromContext(ctx).Error(err, "recording the status of a Local BenchmarkRun", "run", key)
	}
}

func (r *BenchmarkRunReconciler) release(key, index types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.local[key]; ok {
		cancel()
	}
	delete(r.local, key)
	delete(r.held, key)
	if r.busy[index] == key {
		delete(r.busy, index)
	}
}

// heldBytes is the memory budget the Local runs in progress hold, and who holds it; r.mu
// is held.
func (r *BenchmarkRunReconciler) heldBytes() (int64, []string) {
	var sum int64
	var holders []string
	for key, n := range r.held {
		sum += n
		holders = append(holders, fmt.Sprintf("%s (%s)", key, benchrun.MiB(n)))
	}
	slices.Sort(holders)
	return sum, holders
}

// cancelLocal cancels a Local sweep and says whether it is still running.
func (r *BenchmarkRunReconciler) cancelLocal(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cancel, ok := r.local[key]
	if ok {
		cancel()
	}
	return ok
}

// cleanUp deletes a finished run's Workflow once ttlAfterFinished has passed. Not Argo's
// ttlStrategy: that counts from the Workflow's end, which may come before the operator has
// read the outcome into the run; this counts from the run's completionTime, recorded then.
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
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, v1alpha1.ReasonArgoNotInstalled,
			"the Argo runner needs Argo Workflows' CRDs, which the API server did not serve when the operator started")
		return ctrl.Result{}, nil
	}
	if err := benchrun.RunnerAllowed(run.Spec.Runner, r.Options.BenchmarkRunners); err != nil {
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, v1alpha1.ReasonRunnerNotAllowed, err.Error())
		return ctrl.Result{}, nil
	}
	w, err := benchrun.Resolve(run, vi)
	if err != nil {
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, v1alpha1.ReasonBenchmarkFailed, err.Error())
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
		template := run.Spec.Runner.WorkflowTemplateRef.Name
		switch tmpl, err := r.workflowTemplate(ctx, run); {
		case err != nil:
			return ctrl.Result{}, err
		case tmpl == nil:
			setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonWorkflowTemplateNotFound,
				fmt.Sprintf("WorkflowTemplate %s not found in namespace %s: the Workflow is submitted once it is there", template, run.Namespace))
			return ctrl.Result{RequeueAfter: r.Options.ClusterPollInterval}, nil
		}
		endpoint, access, err := workflowAccess(ctx, r.Resolver, &sc)
		if err != nil {
			return r.waitOn(run, err)
		}
		if _, err := r.holdSettings(ctx, run, vi, w.Index); err != nil {
			return r.waitOn(run, err)
		}
		wf = *benchrun.Workflow(run, w, name, endpoint, access)
		if err := controllerutil.SetControllerReference(run, &wf, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, &wf); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(run, &wf, corev1.EventTypeNormal, v1alpha1.ReasonWorkflowCreated, "Submit", "Workflow %s from WorkflowTemplate %s", name, template)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if wf.DeletionTimestamp != nil { // submitted again once it is gone
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if resubmitted, err := r.resubmitBeforeTemplateSeen(ctx, run, &wf); resubmitted || err != nil {
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	if run.Status.StartTime == nil {
		now := metav1.Now()
		run.Status.StartTime = &now
	}
	run.Status.WorkflowName = name
	run.Status.Progress = &v1alpha1.BenchmarkProgress{Step: phaseOrPending(wf.Status.Phase), WorkflowSteps: string(wf.Status.Progress)}
	if wf.Status.Phase.Completed() {
		endProgress(run)
	}
	switch wf.Status.Phase {
	case wfv1.WorkflowSucceeded:
		if len(run.Status.Results) == 0 {
			setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, v1alpha1.ReasonNoResults, "Workflow "+name+" succeeded but its reporter posted no results")
			return ctrl.Result{}, nil
		}
		setRunState(run, v1alpha1.BenchmarkSucceeded, conditions.Ready, v1alpha1.ReasonReconciled,
			fmt.Sprintf("%d cells measured by %s in Workflow %s", len(run.Status.Results), run.Status.Engine, name))
		r.announce(run)
		return ctrl.Result{}, nil
	case wfv1.WorkflowFailed, wfv1.WorkflowError:
		setRunState(run, v1alpha1.BenchmarkFailed, conditions.Degraded, v1alpha1.ReasonBenchmarkFailed, fmt.Sprintf("Workflow %s %s: %s", name, wf.Status.Phase, wf.Status.Message))
		return ctrl.Result{}, nil
	}
	setRunState(run, v1alpha1.BenchmarkRunning, conditions.Progressing, v1alpha1.ReasonBenchmarking, fmt.Sprintf("Workflow %s is %s", name, phaseOrPending(wf.Status.Phase)))
	return ctrl.Result{}, nil
}

// workflowTemplate is the run's WorkflowTemplate as the API server has it (the operator
// caches no templates), or nil when there is none.
func (r *BenchmarkRunReconciler) workflowTemplate(ctx context.Context, run *v1alpha1.BenchmarkRun) (*wfv1.WorkflowTemplate, error) {
	var tmpl wfv1.WorkflowTemplate
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.Runner.WorkflowTemplateRef.Name}, &tmpl)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &tmpl, nil
}

// resubmitBeforeTemplateSeen deletes wf, for the next reconcile to submit it again, when
// Argo's workflow controller failed it only because its cache lagged the template's
// creation (benchrun.TemplateSettle).
func (r *BenchmarkRunReconciler) resubmitBeforeTemplateSeen(ctx context.Context, run *v1alpha1.BenchmarkRun, wf *wfv1.Workflow) (bool, error) {
	if wf.Status.Phase != wfv1.WorkflowError {
		return false, nil
	}
	tmpl, err := r.workflowTemplate(ctx, run)
	if err != nil || !benchrun.FailedBeforeTemplateSeen(wf, tmpl) {
		return false, err
	}
	if err := r.Delete(ctx, wf, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	msg := fmt.Sprintf("Workflow %s submitted again: Argo's workflow controller failed it (%s) before it had seen WorkflowTemplate %s, made %s before the Workflow",
		wf.Name, wf.Status.Message, tmpl.Name, wf.CreationTimestamp.Sub(tmpl.CreationTimestamp.Time))
	r.Recorder.Eventf(run, wf, corev1.EventTypeNormal, v1alpha1.ReasonWorkflowCreated, "Resubmit", msg)
	setRunState(run, v1alpha1.BenchmarkPending, conditions.Progressing, v1alpha1.ReasonWorkflowCreated, msg)
	return true, nil
}

func phaseOrPending(p wfv1.WorkflowPhase) string {
	if p == "" {
		return "pending"
	}
	return string(p)
}

// workflowAccess is where the Workflow's steps reach sc and what they mount to do so as
// the operator does: for a secured managed cluster the operator's user and the cluster's
// CA bundle; for an external one (as written, or read from its OpenSearchCluster) its
// credentials Secret (only with that Secret's consent, see connect.ConsentAnnotation) and
// its CA Secret.
func workflowAccess(ctx context.Context, resolver *connect.Resolver, sc *v1alpha1.SearchCluster) (string, benchrun.Access, error) {
	if sc.Spec.Managed != nil {
		if !managed.SecurityEnabled(sc) {
			return resolver.Endpoint(sc), benchrun.Access{}, nil
		}
		return resolver.Endpoint(sc), benchrun.Access{CredentialsSecret: managed.CredentialsSecretName(sc, managed.OperatorUser), CAConfigMap: managed.CABundleName(sc)}, nil
	}
	conn, err := connect.ExternalConnection(ctx, resolver.Reader, sc)
	if err != nil {
		return "", benchrun.Access{}, err
	}
	if conn.CredentialsSecret != "" {
		if _, err := connect.ClusterSecret(ctx, resolver.Reader, sc, conn.CredentialsSecret); err != nil {
			return "", benchrun.Access{}, err
		}
	}
	return conn.Endpoint, benchrun.Access{CredentialsSecret: conn.CredentialsSecret, CASecret: conn.CASecret}, nil
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
