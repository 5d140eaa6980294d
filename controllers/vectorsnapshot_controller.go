package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// +kubebuilder:rbac:groups=vectorpilot.io,resources=vectorsnapshots,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=vectorpilot.io,resources=vectorsnapshots/status,verbs=get;update
// +kubebuilder:rbac:groups=vectorpilot.io,resources=vectorsnapshots/finalizers,verbs=update

// SnapshotFinalizer deletes a VectorSnapshot's snapshot from the repository with it.
const SnapshotFinalizer = "vectorpilot.io/snapshot"

// snapshotPollInterval is how often a running snapshot is looked at.
const snapshotPollInterval = 2 * time.Second

// VectorSnapshotReconciler takes one snapshot per VectorSnapshot and follows it to the end.
type VectorSnapshotReconciler struct {
	client.Client
	Resolver *connect.Resolver
	Recorder recorder.EventRecorder
	Options  Options

	// openSearch, when set, replaces the Resolver (decision tests give a fake).
	openSearch fakeClients[snapshotAPI]
}

// snapshotAPI is what a VectorSnapshot reconcile asks of OpenSearch; *opensearch.Client
// answers it, and the unit tests' fake does.
type snapshotAPI interface {
	CreateSnapshot(ctx context.Context, repo, snap string, indices []string, metadata map[string]any) error
	GetSnapshot(ctx context.Context, repo, snap string) (opensearch.SnapshotInfo, error)
	RunningSnapshot(ctx context.Context, repo, snap string) (opensearch.SnapshotInfo, bool, error)
	DeleteSnapshot(ctx context.Context, repo, snap string) error
}

// snapshotAPIFor is the OpenSearch client of the named SearchCluster.
func (r *VectorSnapshotReconciler) snapshotAPIFor(ctx context.Context, namespace, cluster string) (snapshotAPI, error) {
	return openSearchFor(ctx, r.openSearch, r.Client, r.Resolver, namespace, cluster)
}

// Reconcile resolves the cluster, starts the snapshot once and follows it until it ends.
func (r *VectorSnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return steps.Kind[*v1alpha1.VectorSnapshot, *snapshotRun]{
		Client:    r.Client,
		New:       func() *v1alpha1.VectorSnapshot { return &v1alpha1.VectorSnapshot{} },
		Finalizer: SnapshotFinalizer,
		Finalize: func(ctx context.Context, vs *v1alpha1.VectorSnapshot) (ctrl.Result, error) {
			return ctrl.Result{}, r.finalize(ctx, vs)
		},
		Idle: func(vs *v1alpha1.VectorSnapshot) bool {
			return vs.Status.Phase == v1alpha1.SnapshotSucceeded || vs.Status.Phase == v1alpha1.SnapshotFailed
		},
		Scope: func(_ context.Context, vs *v1alpha1.VectorSnapshot) *snapshotRun { return &snapshotRun{vs: vs} },
		Steps: func(*snapshotRun) []steps.Step[*snapshotRun] {
			return []steps.Step[*snapshotRun]{
				{Name: "resolve cluster", Run: r.resolveCluster},
				{Name: "start snapshot", Run: r.startSnapshot},
				{Name: "follow progress", Run: r.followProgress},
			}
		},
	}.Reconcile(ctx, req)
}

// snapshotRun is one reconcile of a VectorSnapshot.
type snapshotRun struct {
	vs       *v1alpha1.VectorSnapshot
	osClient snapshotAPI
}

func (r *VectorSnapshotReconciler) resolveCluster(ctx context.Context, s *snapshotRun) steps.Result {
	var err error
	if s.osClient, err = r.snapshotAPIFor(ctx, s.vs.Namespace, s.vs.Spec.ClusterRef.Name); err != nil {
		return r.retry(s.vs, err)
	}
	return steps.Continue()
}

// fail ends the snapshot Failed: recorded, announced, counted; nothing is retried.
func (r *VectorSnapshotReconciler) fail(vs *v1alpha1.VectorSnapshot, reason, msg string) steps.Result {
	st := &vs.Status
	st.Phase = v1alpha1.SnapshotFailed
	st.Failures = append(st.Failures, msg)
	now := metav1.Now()
	st.CompletionTime = &now
	conditions.Set(&st.Conditions, vs.Generation, conditions.Degraded, reason, msg)
	r.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonSnapshotFailed, "Snapshot", "%s", msg)
	if policy := vs.Labels[PolicyLabel]; policy != "" {
		metrics.SnapshotFailures.WithLabelValues(vs.Namespace, policy).Inc()
	}
	return steps.StopFor(0)
}

// startSnapshot starts the snapshot once; a start that cannot happen within the start
// timeout fails it.
func (r *VectorSnapshotReconciler) startSnapshot(ctx context.Context, s *snapshotRun) steps.Result {
	vs, st, osClient := s.vs, &s.vs.Status, s.osClient
	fail := func(reason, msg string) steps.Result { return r.fail(vs, reason, msg) }
	if st.SnapshotName == "" {
		indices, err := r.indexNames(ctx, vs)
		if err != nil {
			return fail(v1alpha1.ReasonIndexNotFound, err.Error())
		}
		name := snapshotName(vs)
		meta := map[string]any{"vectorpilot.io/snapshot": vs.Namespace + "/" + vs.Name, "vectorpilot.io/uid": string(vs.UID)}
		if err := osClient.CreateSnapshot(ctx, vs.Spec.Repository, name, indices, meta); err != nil && opensearch.ErrorType(err) != "invalid_snapshot_name_exception" {
			f := classify(err)
			// The repository may be about to be registered (by a policy created alongside).
			f.transient = f.transient || opensearch.ErrorType(err) == "repository_missing_exception"
			// A snapshot is due now: one that cannot start within the timeout fails, so
			// the policy's next one is not queued behind it.
			if !f.transient || time.Since(vs.CreationTimestamp.Time) > r.Options.SnapshotStartTimeout {
				return fail(f.reason, "starting snapshot: "+f.message)
			}
			return r.retry(vs, err)
		}
		now := metav1.Now()
		st.SnapshotName, st.Indices, st.StartTime, st.Phase = name, indices, &now, v1alpha1.SnapshotInProgress
		conditions.Set(&st.Conditions, vs.Generation, conditions.Progressing, v1alpha1.ReasonSnapshotStarted, fmt.Sprintf("snapshot %s of %s started", name, strings.Join(indices, ", ")))
		r.Recorder.Eventf(vs, nil, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotStarted, "Snapshot", "snapshot %s/%s of %s", vs.Spec.Repository, name, strings.Join(indices, ", "))
		return steps.StopFor(snapshotPollInterval)
	}
	return steps.Continue()
}

// followProgress reads the running snapshot: Succeeded, Failed, stalled (aborted and
// Failed), or still moving. The operator deletes a snapshot from its repository only
// about a state it has read: a snapshot whose state or progress could not be read is
// unknown — retried on the backoff and reported — never stalled.
func (r *VectorSnapshotReconciler) followProgress(ctx context.Context, s *snapshotRun) steps.Result {
	vs, st, osClient := s.vs, &s.vs.Status, s.osClient
	fail := func(reason, msg string) steps.Result { return r.fail(vs, reason, msg) }
	info, err := osClient.GetSnapshot(ctx, vs.Spec.Repository, st.SnapshotName)
	if opensearch.IsNotFound(err) {
		return fail(v1alpha1.ReasonSnapshotMissing, fmt.Sprintf("snapshot %s is not in repository %s", st.SnapshotName, vs.Spec.Repository))
	}
	if err != nil && info.State != "SUCCESS" {
		// The repository may be what cannot be read (its object store gone): a running
		// snapshot's state and progress are in the cluster state too.
		if running, ok, rerr := osClient.RunningSnapshot(ctx, vs.Spec.Repository, st.SnapshotName); rerr == nil && ok {
			info, err = running, nil
		}
	}
	if err != nil && info.State != "SUCCESS" {
		// Its state (or, running, its progress) is unknown.
		r.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonSnapshotStateUnknown, "Snapshot",
			"cannot read snapshot %s/%s (state %q), retrying: %v", vs.Spec.Repository, st.SnapshotName, info.State, err)
		f := classify(err)
		conditions.Set(&st.Conditions, vs.Generation, conditions.Degraded, v1alpha1.ReasonSnapshotStateUnknown,
			fmt.Sprintf("state of snapshot %s unknown, retrying: %s", st.SnapshotName, f.message))
		return steps.Done(err)
	}
	now := time.Now()
	if info.State == "IN_PROGRESS" {
		st.Progress = trackProgress(st.Progress, info.Progress, now)
		if last := lastProgress(st); !last.IsZero() && now.Sub(last) > r.Options.SnapshotStallTimeout {
			return r.abortStalled(ctx, s)
		}
		conditions.Set(&st.Conditions, vs.Generation, conditions.Progressing, v1alpha1.ReasonSnapshotStarted, fmt.Sprintf("snapshot %s of %s running", st.SnapshotName, strings.Join(st.Indices, ", ")))
		return steps.After(snapshotPollInterval)
	}
	st.Shards = &v1alpha1.ShardCounts{Total: info.Shards.Total, Successful: info.Shards.Successful, Failed: info.Shards.Failed}
	switch info.State {
	case "SUCCESS":
		end := metav1.NewTime(info.End)
		st.Phase, st.CompletionTime, st.SizeBytes = v1alpha1.SnapshotSucceeded, &end, info.SizeBytes
		st.DurationMillis = info.End.Sub(info.Start).Milliseconds()
		st.Kind = v1alpha1.SnapshotFull
		if info.Shallow {
			st.Kind = v1alpha1.SnapshotShallow
		}
		size := fmt.Sprintf("%d bytes", info.SizeBytes)
		if err != nil {
			size = "size unknown (its status could not be read: " + classify(err).message + ")"
		}
		msg := fmt.Sprintf("%s snapshot %s: %d shards, %s in %s", strings.ToLower(st.Kind), st.SnapshotName, info.Shards.Successful, size, info.End.Sub(info.Start).Round(time.Millisecond))
		conditions.Set(&st.Conditions, vs.Generation, conditions.Ready, v1alpha1.ReasonSnapshotSucceeded, msg)
		r.Recorder.Eventf(vs, nil, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotSucceeded, "Snapshot", "%s", msg)
		return steps.Continue()
	case "FAILED", "PARTIAL":
		st.Failures = info.Failures
		reason := v1alpha1.ReasonSnapshotFailed
		if info.State == "PARTIAL" {
			reason = v1alpha1.ReasonSnapshotPartial
		}
		return fail(reason, fmt.Sprintf("snapshot %s ended %s: %s", st.SnapshotName, info.State, strings.Join(info.Failures, "; ")))
	default:
		return steps.After(snapshotPollInterval)
	}
}

// abortStalled aborts a snapshot read as IN_PROGRESS whose shards and bytes have not moved
// for the stall timeout (its object store went away): a snapshot is judged by its progress,
// not its age, since a large one may run for hours. Deleting a running snapshot aborts it;
// if even that fails, the snapshot is still reported Failed so the policy's next one is not
// blocked behind it.
func (r *VectorSnapshotReconciler) abortStalled(ctx context.Context, s *snapshotRun) steps.Result {
	vs, st := s.vs, &s.vs.Status
	msg := fmt.Sprintf("snapshot %s made no progress for %s", st.SnapshotName, r.Options.SnapshotStallTimeout)
	if p := st.Progress; p != nil {
		msg += fmt.Sprintf(" (%d of %d shards, %d of %d bytes)", p.ShardsDone, p.ShardsTotal, p.BytesDone, p.BytesTotal)
	}
	if err := s.osClient.DeleteSnapshot(ctx, vs.Spec.Repository, st.SnapshotName); err != nil {
		msg += "; abort failed: " + err.Error()
	} else {
		msg += "; aborted"
	}
	return r.fail(vs, v1alpha1.ReasonSnapshotStalled, msg)
}

// retry records a failure that may pass and asks for another try on the backoff.
func (r *VectorSnapshotReconciler) retry(vs *v1alpha1.VectorSnapshot, err error) steps.Result {
	f := classify(err)
	if vs.Status.Phase == "" {
		vs.Status.Phase = v1alpha1.SnapshotPending
	}
	conditions.Set(&vs.Status.Conditions, vs.Generation, conditions.Degraded, f.reason, f.message)
	return steps.Done(err)
}

// indexNames resolves the VectorIndex objects to their OpenSearch index names.
func (r *VectorSnapshotReconciler) indexNames(ctx context.Context, vs *v1alpha1.VectorSnapshot) ([]string, error) {
	var names []string
	for _, n := range vs.Spec.Indices {
		var vi v1alpha1.VectorIndex
		if err := r.Get(ctx, types.NamespacedName{Namespace: vs.Namespace, Name: n}, &vi); err != nil {
			return nil, fmt.Errorf("VectorIndex %s: %w", n, err)
		}
		names = append(names, vi.OpenSearchIndexName())
	}
	return names, nil
}

// snapshotName is unique per object: the name plus part of the UID, lower case as
// OpenSearch requires.
func snapshotName(vs *v1alpha1.VectorSnapshot) string {
	return strings.ToLower(fmt.Sprintf("%s-%s", vs.Name, shortUID(vs.UID)))
}

// shortUID is the first 8 hex digits of an object's UID: enough to keep OpenSearch names
// of different objects with the same name apart.
func shortUID(uid types.UID) string {
	s := strings.ReplaceAll(string(uid), "-", "")
	return s[:min(8, len(s))]
}

// trackProgress records a running snapshot's figures, moving lastProgressTime only when
// they moved.
func trackProgress(prev *v1alpha1.SnapshotProgress, now opensearch.SnapshotProgress, at time.Time) *v1alpha1.SnapshotProgress {
	next := &v1alpha1.SnapshotProgress{ShardsDone: now.ShardsDone, ShardsTotal: now.ShardsTotal, BytesDone: now.BytesDone, BytesTotal: now.BytesTotal}
	if prev != nil && prev.LastProgressTime != nil && prev.ShardsDone == next.ShardsDone && prev.BytesDone == next.BytesDone {
		next.LastProgressTime = prev.LastProgressTime
	} else {
		t := metav1.NewTime(at)
		next.LastProgressTime = &t
	}
	return next
}

// lastProgress is when the snapshot last moved: its recorded progress, else its start.
func lastProgress(st *v1alpha1.VectorSnapshotStatus) time.Time {
	if st.Progress != nil && st.Progress.LastProgressTime != nil {
		return st.Progress.LastProgressTime.Time
	}
	if st.StartTime != nil {
		return st.StartTime.Time
	}
	return time.Time{}
}

// finalize lets the object go. The snapshot in the repository is deleted with it only when
// spec.deletionPolicy is Delete (set by the user, or by the policy's retention on what it
// prunes), the object is not paused, and the snapshot's state has been read from the
// repository: a Failed object's snapshot goes only when the repository reads it FAILED or
// PARTIAL too — one it reads SUCCESS (the object's phase was wrong) or IN_PROGRESS stays.
// A snapshot whose state cannot be read waits. By default backups outlive the objects that
// describe them. If the cluster object is gone, the snapshot is left in the repository.
func (r *VectorSnapshotReconciler) finalize(ctx context.Context, vs *v1alpha1.VectorSnapshot) error {
	deleteFromRepository := vs.Spec.DeletionPolicy == v1alpha1.SnapshotDeletionDelete && !v1alpha1.IsPaused(vs.Annotations)
	if vs.Status.SnapshotName != "" && !deleteFromRepository {
		r.Recorder.Eventf(vs, nil, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotRetained, "Delete", "snapshot %s/%s kept in the repository (deletionPolicy %s)", vs.Spec.Repository, vs.Status.SnapshotName, effectiveDeletionPolicy(vs.Spec.DeletionPolicy, vs.Annotations))
	}
	if vs.Status.SnapshotName != "" && deleteFromRepository {
		osClient, err := r.snapshotAPIFor(ctx, vs.Namespace, vs.Spec.ClusterRef.Name)
		var ce *connect.Error
		switch {
		case err == nil:
			if err := r.deleteFromRepository(ctx, osClient, vs); err != nil {
				return err
			}
		case asConnectError(err, &ce) && ce.Reason == v1alpha1.ReasonClusterNotFound:
		default:
			return err
		}
	}
	return nil
}

// deleteFromRepository deletes vs's snapshot once its state is read; a Failed object's only
// when the repository says it failed too (see finalize), else it keeps it, saying why.
func (r *VectorSnapshotReconciler) deleteFromRepository(ctx context.Context, osClient snapshotAPI, vs *v1alpha1.VectorSnapshot) error {
	repo, name := vs.Spec.Repository, vs.Status.SnapshotName
	info, err := osClient.GetSnapshot(ctx, repo, name)
	switch {
	case opensearch.IsNotFound(err):
		return nil
	case info.State == "":
		r.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonSnapshotStateUnknown, "Delete",
			"not deleting snapshot %s/%s before its state is read (retrying): %v", repo, name, err)
		return fmt.Errorf("reading snapshot %s/%s before deleting it: %w", repo, name, err)
	}
	if vs.Status.Phase == v1alpha1.SnapshotFailed && info.State != "FAILED" && info.State != "PARTIAL" {
		r.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonSnapshotRetained, "Delete",
			"snapshot %s/%s kept in the repository: the repository reads it %s, not failed as the object says", repo, name, info.State)
		return nil
	}
	if err := osClient.DeleteSnapshot(ctx, repo, name); err != nil {
		return err
	}
	r.Recorder.Eventf(vs, nil, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotDeleted, "Delete", "deleted snapshot %s/%s (%s)", repo, name, info.State)
	return nil
}

// effectiveDeletionPolicy names what a deletion did to the snapshot, for the Event.
func effectiveDeletionPolicy(policy string, annotations map[string]string) string {
	if v1alpha1.IsPaused(annotations) {
		return policy + ", paused"
	}
	if policy == "" {
		return v1alpha1.SnapshotDeletionRetain
	}
	return policy
}

// SetupWithManager registers the reconciler.
func (r *VectorSnapshotReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Its own status writes (progress, every poll) must not wake it again: spec,
		// labels, annotations (pause) and deletion do; the snapshot's progress comes by
		// requeue.
		For(&v1alpha1.VectorSnapshot{}, builder.WithPredicates(ownChanges)).
		WithOptions(controller.Options{RateLimiter: rateLimiter(r.Options.MaxRetryDelay)}).
		Named("vectorsnapshot").
		Complete(r)
}
