package controllers

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// +kubebuilder:rbac:groups=vectorpilot.io,resources=snapshotpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=vectorpilot.io,resources=snapshotpolicies/status,verbs=get;update
// The owner references on the VectorSnapshots it makes block the owner's deletion, which
// OwnerReferencesPermissionEnforcement allows only with update on the owner's finalizers.
// +kubebuilder:rbac:groups=vectorpilot.io,resources=snapshotpolicies/finalizers,verbs=update

// PolicyLabel marks the VectorSnapshots a SnapshotPolicy made; retention only ever
// considers those.
const PolicyLabel = "vectorpilot.io/snapshot-policy"

// SnapshotPolicyReconciler registers a policy's repository, takes its scheduled
// VectorSnapshots and prunes them by its retention.
type SnapshotPolicyReconciler struct {
	client.Client
	Resolver *connect.Resolver
	Recorder recorder.EventRecorder
	Options  Options
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// openSearch, when set, replaces the Resolver (decision tests give a fake).
	openSearch fakeClients[repositoryAPI]
}

// Reconcile registers the repository, takes a snapshot when one is due, applies retention
// and records the status.
func (r *SnapshotPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return steps.Kind[*v1alpha1.SnapshotPolicy, *policyRun]{
		Client: r.Client,
		New:    func() *v1alpha1.SnapshotPolicy { return &v1alpha1.SnapshotPolicy{} },
		Gone:   func(key types.NamespacedName) { metrics.ForgetPolicy(key.Namespace, key.Name) },
		Scope:  func(_ context.Context, p *v1alpha1.SnapshotPolicy) *policyRun { return &policyRun{p: p, now: r.now()} },
		Steps: func(*policyRun) []steps.Step[*policyRun] {
			return []steps.Step[*policyRun]{
				{Name: "parse schedule", Run: r.parseSchedule},
				{Name: "resolve cluster", Run: r.resolveCluster},
				{Name: "register repository", Run: r.registerRepository},
				steps.Fallible("list snapshots", r.listSnapshots),
				{Name: "take due snapshot", Run: r.takeDueSnapshot},
				steps.Fallible("apply retention", func(ctx context.Context, run *policyRun) error {
					return r.applyRetention(ctx, run.p, run.snapshots, run.now)
				}),
				{Name: "record", Run: r.record},
			}
		},
	}.Reconcile(ctx, req)
}

// repositoryAPI is what a SnapshotPolicy reconcile asks of OpenSearch.
type repositoryAPI interface {
	PutRepository(ctx context.Context, name, typ string, settings map[string]any) error
}

// policyRun is one reconcile of a SnapshotPolicy.
type policyRun struct {
	p         *v1alpha1.SnapshotPolicy
	now       time.Time
	schedule  cron.Schedule
	osClient  repositoryAPI
	snapshots []v1alpha1.VectorSnapshot
	// next is the next scheduled time after the last one taken.
	next time.Time
	// waitingOn names the policy's snapshot still running at a due slot.
	waitingOn string
}

// degraded records a failure: one that may pass is retried on the backoff, one that needs
// a person is looked at again after the longest backoff.
func (r *SnapshotPolicyReconciler) degraded(p *v1alpha1.SnapshotPolicy, err error) steps.Result {
	f := classify(err)
	conditions.Set(&p.Status.Conditions, p.Generation, conditions.Degraded, f.reason, f.message)
	if f.transient {
		return steps.Done(err)
	}
	return steps.StopFor(r.Options.MaxRetryDelay)
}

func (r *SnapshotPolicyReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *SnapshotPolicyReconciler) parseSchedule(_ context.Context, run *policyRun) steps.Result {
	var err error
	if run.schedule, err = parseSchedule(run.p.Spec.Schedule, run.p.Spec.TimeZone); err != nil {
		return r.degraded(run.p, &reasonError{reason: v1alpha1.ReasonInvalidSchedule, message: err.Error()})
	}
	return steps.Continue()
}

func (r *SnapshotPolicyReconciler) resolveCluster(ctx context.Context, run *policyRun) steps.Result {
	osClient, err := openSearchFor(ctx, r.openSearch, r.Client, r.Resolver, run.p.Namespace, run.p.Spec.ClusterRef.Name)
	if err != nil {
		return r.degraded(run.p, err)
	}
	run.osClient = osClient
	return steps.Continue()
}

// registerRepository registers the repository when the spec changed or the last attempt
// failed, not on every reconcile: registering verifies it (OpenSearch writes a test blob).
func (r *SnapshotPolicyReconciler) registerRepository(ctx context.Context, run *policyRun) steps.Result {
	p := run.p
	if p.Status.ObservedGeneration == p.Generation && conditions.IsReady(p.Status.Conditions) {
		return steps.Continue()
	}
	typ, settings := repositorySettings(p.Spec.Repository)
	if err := run.osClient.PutRepository(ctx, p.Spec.Repository.Name, typ, settings); err != nil {
		f := classify(err)
		return r.degraded(p, &reasonError{reason: v1alpha1.ReasonRepositoryError, message: "registering repository " + p.Spec.Repository.Name + ": " + f.message, transient: true})
	}
	return steps.Continue()
}

func (r *SnapshotPolicyReconciler) listSnapshots(ctx context.Context, run *policyRun) (err error) {
	run.snapshots, err = r.policySnapshots(ctx, run.p)
	return err
}

// takeDueSnapshot takes the latest due slot's snapshot, unless suspended, or while one of
// the policy's snapshots still runs (a CronJob's concurrencyPolicy Forbid): snapshots
// slower than the schedule would otherwise queue up without end. The slots missed
// meanwhile come down to one, taken when the running snapshot ends (its change wakes the
// policy).
func (r *SnapshotPolicyReconciler) takeDueSnapshot(ctx context.Context, run *policyRun) steps.Result {
	p := run.p
	last := p.CreationTimestamp.Time
	if p.Status.LastScheduleTime != nil {
		last = p.Status.LastScheduleTime.Time
	}
	run.next = run.schedule.Next(last)
	if p.Spec.Suspend || run.now.Before(run.next) {
		return steps.Continue()
	}
	for _, s := range run.snapshots {
		if s.Status.Phase != v1alpha1.SnapshotSucceeded && s.Status.Phase != v1alpha1.SnapshotFailed && s.DeletionTimestamp.IsZero() {
			run.waitingOn = s.Name
			return steps.Continue()
		}
	}
	slot := latestSlot(run.schedule, run.next, run.now)
	if err := r.takeSnapshot(ctx, p, slot); err != nil {
		return r.degraded(p, err)
	}
	t := metav1.NewTime(slot)
	p.Status.LastScheduleTime = &t
	run.next = run.schedule.Next(slot)
	return steps.Continue()
}

// record writes the last success, the schedule and the metrics, and wakes at the next
// run — meanwhile often enough to see snapshots finish for retention.
func (r *SnapshotPolicyReconciler) record(_ context.Context, run *policyRun) steps.Result {
	p, next := run.p, run.next
	for _, s := range run.snapshots {
		if s.Status.Phase == v1alpha1.SnapshotSucceeded && s.Status.CompletionTime != nil &&
			(p.Status.LastSuccessfulTime == nil || !s.Status.CompletionTime.Before(p.Status.LastSuccessfulTime)) {
			p.Status.LastSuccessfulTime = s.Status.CompletionTime
			metrics.SnapshotLastSuccess.WithLabelValues(p.Namespace, p.Name).Set(float64(s.Status.CompletionTime.Unix()))
			metrics.SnapshotDuration.WithLabelValues(p.Namespace, p.Name).Set(float64(s.Status.DurationMillis) / 1000)
		}
	}
	metrics.SnapshotInterval.WithLabelValues(p.Namespace, p.Name).Set(run.schedule.Next(next).Sub(next).Seconds())
	metrics.SnapshotFailures.WithLabelValues(p.Namespace, p.Name).Add(0)
	n := metav1.NewTime(next)
	p.Status.NextScheduleTime = &n
	if run.waitingOn != "" {
		conditions.Set(&p.Status.Conditions, p.Generation, conditions.Ready, v1alpha1.ReasonReconciled,
			fmt.Sprintf("repository %s registered; the snapshot due %s waits for VectorSnapshot %s, still running", p.Spec.Repository.Name, next.UTC().Format(time.RFC3339), run.waitingOn))
		return steps.After(r.Options.IndexResyncInterval) // its end wakes the policy sooner
	}
	conditions.Set(&p.Status.Conditions, p.Generation, conditions.Ready, v1alpha1.ReasonReconciled,
		fmt.Sprintf("repository %s registered; next snapshot %s", p.Spec.Repository.Name, next.UTC().Format(time.RFC3339)))
	return steps.After(min(next.Sub(run.now)+time.Second, r.Options.IndexResyncInterval))
}

// latestSlot is the newest scheduled time at or before now, starting from the first due
// one: missed runs are not made up one by one (as a CronJob's), only the latest is taken.
func latestSlot(schedule cron.Schedule, due, now time.Time) time.Time {
	for i := 0; i < 10000; i++ {
		n := schedule.Next(due)
		if n.After(now) || !n.After(due) {
			break
		}
		due = n
	}
	return due
}

// parseSchedule parses a standard cron line or descriptor in a time zone.
func parseSchedule(spec, tz string) (cron.Schedule, error) {
	if tz != "" {
		if _, err := time.LoadLocation(tz); err != nil {
			return nil, fmt.Errorf("spec.timeZone %q: %w", tz, err)
		}
		spec = "CRON_TZ=" + tz + " " + spec
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("spec.schedule %q: %w", spec, err)
	}
	return s, nil
}

func repositorySettings(repo v1alpha1.SnapshotRepository) (string, map[string]any) {
	typ, s := "fs", map[string]any{}
	if repo.S3 != nil {
		typ, s["bucket"], s["client"] = "s3", repo.S3.Bucket, repo.S3.Client
		if repo.S3.BasePath != "" {
			s["base_path"] = repo.S3.BasePath
		}
	} else {
		s["location"] = repo.FS.Location
	}
	if repo.ShallowCopy {
		s["remote_store_index_shallow_copy"] = true
	}
	return typ, s
}

// takeSnapshot creates the VectorSnapshot of the selected indexes for one scheduled slot,
// owned by the policy. Its name is the slot's, so a reconcile that created it and then
// failed to record lastScheduleTime finds it on the next try instead of taking a second.
func (r *SnapshotPolicyReconciler) takeSnapshot(ctx context.Context, p *v1alpha1.SnapshotPolicy, slot time.Time) error {
	selector := labels.Everything()
	if p.Spec.IndexSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(p.Spec.IndexSelector)
		if err != nil {
			return &reasonError{reason: v1alpha1.ReasonInvalidSelector, message: "spec.indexSelector: " + err.Error()}
		}
		selector = s
	}
	var list v1alpha1.VectorIndexList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return err
	}
	var names []string
	for _, vi := range list.Items {
		if vi.Spec.ClusterRef.Name == p.Spec.ClusterRef.Name && vi.DeletionTimestamp.IsZero() {
			names = append(names, vi.Name)
		}
	}
	if len(names) == 0 {
		return &reasonError{reason: v1alpha1.ReasonNoIndexes, message: "the policy selects no VectorIndex on cluster " + p.Spec.ClusterRef.Name, transient: false}
	}
	sort.Strings(names)
	vs := &v1alpha1.VectorSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%d", p.Name, slot.Unix()),
			Namespace: p.Namespace,
			Labels:    map[string]string{PolicyLabel: p.Name},
		},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: p.Spec.ClusterRef, Repository: p.Spec.Repository.Name, Indices: names},
	}
	if err := controllerutil.SetControllerReference(p, vs, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, vs); apierrors.IsAlreadyExists(err) {
		return nil // this slot's snapshot was taken by an earlier attempt
	} else if err != nil {
		return err
	}
	r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotScheduled, "Schedule", "created VectorSnapshot %s of %d indexes", vs.Name, len(names))
	return nil
}

// policySnapshots are the VectorSnapshots this policy controls. The label narrows the
// list; the controller reference decides, so a snapshot made by hand (or by an earlier
// policy of the same name) that carries the label is never the policy's to prune.
func (r *SnapshotPolicyReconciler) policySnapshots(ctx context.Context, p *v1alpha1.SnapshotPolicy) ([]v1alpha1.VectorSnapshot, error) {
	var list v1alpha1.VectorSnapshotList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabels{PolicyLabel: p.Name}); err != nil {
		return nil, err
	}
	return controlledBy(list.Items, p), nil
}

// controlledBy keeps the snapshots whose controller is owner (by UID).
func controlledBy(snapshots []v1alpha1.VectorSnapshot, owner metav1.Object) []v1alpha1.VectorSnapshot {
	var out []v1alpha1.VectorSnapshot
	for _, s := range snapshots {
		if metav1.IsControlledBy(&s, owner) {
			out = append(out, s)
		}
	}
	return out
}

// applyRetention deletes the policy's snapshots beyond maxCount successful ones, and
// successful ones older than maxAge (but never the newest); failed ones older than the
// newest success are deleted too, as they hold nothing restorable. Each is marked
// deletionPolicy Delete first: retention is the one place that deletes backups on its
// own, and only those it pruned.
func (r *SnapshotPolicyReconciler) applyRetention(ctx context.Context, p *v1alpha1.SnapshotPolicy, snapshots []v1alpha1.VectorSnapshot, now time.Time) error {
	prune := retained(p.Spec.Retention, snapshots, now)
	for i := range prune {
		s := &prune[i]
		if s.Spec.DeletionPolicy != v1alpha1.SnapshotDeletionDelete {
			patch := client.MergeFrom(s.DeepCopy())
			s.Spec.DeletionPolicy = v1alpha1.SnapshotDeletionDelete
			if err := r.Patch(ctx, s, patch); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if err := r.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotPruned, "Retention", "deleted VectorSnapshot %s (%s)", prune[i].Name, prune[i].Status.Phase)
	}
	return nil
}

// retained returns the snapshots retention removes.
func retained(ret v1alpha1.SnapshotRetention, snapshots []v1alpha1.VectorSnapshot, now time.Time) []v1alpha1.VectorSnapshot {
	var succeeded, failed []v1alpha1.VectorSnapshot
	for _, s := range snapshots {
		if !s.DeletionTimestamp.IsZero() {
			continue
		}
		switch s.Status.Phase {
		case v1alpha1.SnapshotSucceeded:
			succeeded = append(succeeded, s)
		case v1alpha1.SnapshotFailed:
			failed = append(failed, s)
		}
	}
	newestFirst := func(list []v1alpha1.VectorSnapshot) {
		sort.Slice(list, func(i, j int) bool { return list[j].CreationTimestamp.Before(&list[i].CreationTimestamp) })
	}
	newestFirst(succeeded)
	var prune []v1alpha1.VectorSnapshot
	maxAge, _ := time.ParseDuration(ret.MaxAge)
	for i, s := range succeeded {
		tooMany := ret.MaxCount != nil && i >= int(*ret.MaxCount)
		tooOld := maxAge > 0 && i > 0 && now.Sub(s.CreationTimestamp.Time) > maxAge
		if tooMany || tooOld {
			prune = append(prune, s)
		}
	}
	if len(succeeded) > 0 {
		for _, f := range failed {
			if f.CreationTimestamp.Before(&succeeded[0].CreationTimestamp) {
				prune = append(prune, f)
			}
		}
	}
	return prune
}

// SetupWithManager registers the reconciler; a VectorSnapshot it owns finishing wakes it.
// Deleting a policy garbage-collects its VectorSnapshot objects, whose deletionPolicy
// (Retain unless retention pruned them) keeps every snapshot in the repository.
func (r *SnapshotPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Its own status writes must not wake it again (a changing error message would
		// loop at full speed, re-verifying the repository each time): spec, labels,
		// annotations (pause) and deletion do; time and progress come by requeue.
		For(&v1alpha1.SnapshotPolicy{}, builder.WithPredicates(ownChanges)).
		Owns(&v1alpha1.VectorSnapshot{}).
		WithOptions(controller.Options{RateLimiter: rateLimiter(r.Options.MaxRetryDelay)}).
		Named("snapshotpolicy").
		Complete(r)
}
